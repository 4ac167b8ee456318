"""Running one enrichment job. Every handler is idempotent: a job re-run after its worker died (after
the model answered, or even after the result was written) never duplicates a unit or a graph row.

How: an enriched version gets a deterministic id (:func:`enriched_id` of the job key) and is written
with its graph rows and its supersession in one transaction, so a re-run finds it; graph rows of a
unit that keeps its version commit with the job's completion (``complete(derived=)``); restated units
have deterministic content hashes and ids, and each offline turn is superseded at most once.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from omnimem.engine.deps import Deps
from omnimem.engine.state import WriterState
from omnimem.errors import ConfigError
from omnimem.engine.ingest.pipeline import Ingestor, restated_metadata
from omnimem.engine.writer import Writer
from omnimem.engine.ingest.prepare import Pending
from omnimem.engine.provenance import derived, stamp_of
from omnimem.mau import MAU, Modality, content_hash
from omnimem.store.audit import AuditEvent
from omnimem.store.base import RowWriter
from omnimem.store.jobs import Job

NAMESPACE = uuid.UUID("5f0c6c4e-9a52-4d0e-9d1e-0b7a1c2e3f40")


def enriched_id(key: str) -> str:
    """The id of the unit a job writes: the same on every run of the job."""
    return uuid.uuid5(NAMESPACE, key).hex


@dataclass(frozen=True, slots=True)
class Outcome:
    """Rows to write with the job's completion, if the units in ``requires`` are still current then."""

    derived: tuple[RowWriter, ...] = ()
    requires: tuple[str, ...] = ()


def run(deps: Deps, writer: Writer, ingestor: Ingestor, job: Job) -> Outcome:
    """Do the job's work, writing through ``writer`` (adds decided by ``ingestor``, the worker's own);
    returns what to write with its completion. Raises to fail the attempt."""
    if job.kind == "enrich":
        return enrich_unit(deps, writer, job)
    if job.kind == "graph":
        return graph_rows(deps, writer.state, job)
    if job.kind == "restate":
        restate_turns(deps, writer, ingestor, job)
        return Outcome()
    raise ConfigError(f"unknown job kind {job.kind!r} (written by a newer omnimem?)")


def graph_rows(deps: Deps, state: WriterState, job: Job) -> Outcome:
    """Entities and relations of the batch's units still current, extracted together."""
    if deps.graph is None:
        raise ConfigError("job kind 'graph' needs the knowledge graph; open the store with graph=True")
    with state.reading():
        units = [u for u in deps.store.get(list(job.payload["units"])) if u.active]
    if not units:
        return Outcome()
    return Outcome((deps.graph.writer(units, deps.graph.extract(units)),), tuple(u.id for u in units))


def _need_llm(deps: Deps, task: str) -> Any:
    if deps.llm is None:
        raise ConfigError(f"job task {task!r} needs an LLM and none is configured in this process")
    return deps.llm


def enrich_unit(deps: Deps, writer: Writer, job: Job) -> Outcome:
    """Summary or caption (a new version that supersedes the unit), graph rows, supersession proposals."""
    tasks: list[str] = list(job.payload.get("tasks", ()))
    new_id = enriched_id(job.key)
    with writer.state.reading():
        found = {u.id: u for u in deps.store.get([job.payload["unit"], new_id])}
    unit = found.get(job.payload["unit"])
    target = found.get(new_id)  # written by an earlier run of this job, with its graph rows
    if target is None:
        if unit is None or not unit.active:
            return Outcome()  # deleted, or replaced by a newer version (which has its own jobs): nothing to enrich
        target = unit
        changed = _new_text(deps, unit, tasks)
        if changed is not None:  # compared with what was stored before the unit (not before its version)
            target = replace(_write_version(deps, writer, unit, new_id, changed, tasks, job),
                             record_time=unit.record_time)
            tasks = [t for t in tasks if t != "graph"]  # written with the new version
    elif not target.active:
        return Outcome()
    else:
        tasks = [t for t in tasks if t != "graph"]  # its graph rows were written with it
        if unit is not None:
            target = replace(target, record_time=unit.record_time)
    if "supersede" in tasks and deps.settings.auto_supersede:
        _need_llm(deps, "supersede")
        writer.propose_supersession([target], [target.embedding])
    if "graph" in tasks and deps.graph is not None:
        return Outcome((deps.graph.writer([target], deps.graph.extract([target])),), (target.id,))
    if "graph" in tasks:
        raise ConfigError("job task 'graph' needs the knowledge graph; open the store with graph=True")
    return Outcome()


def _new_text(deps: Deps, unit: MAU, tasks: Sequence[str]) -> tuple[str, dict[str, Any]] | None:
    """The enriched summary and metadata additions, or None when the unit keeps its text."""
    if "caption" in tasks and unit.raw_ref is not None:
        from omnimem.contract.providers import create_provider

        captioner = create_provider("captioner", "vision-llm", llm=_need_llm(deps, "caption"))
        described = captioner.caption(deps.store.read_raw(unit.raw_ref), str(unit.metadata.get("mime", "image/png")))
        return described, {"caption": "vision-llm"}
    if "summary" in tasks and unit.raw_ref is not None and unit.modality is Modality.TEXT:
        from omnimem.engine.ingest.summarise import summarise

        full = deps.store.read_raw(unit.raw_ref).decode("utf-8")
        summary = summarise(full, _need_llm(deps, "summary"), max_words=deps.settings.summary_words)
        return (summary, {}) if summary != unit.summary else None
    return None


def _write_version(deps: Deps, writer: Writer, unit: MAU, new_id: str, change: tuple[str, dict[str, Any]],
                   tasks: Sequence[str], job: Job) -> MAU:
    """Have the writer store the enriched version with its graph rows, superseding ``unit``, in one transaction."""
    summary, extra = change

    def derive(version: MAU) -> list[RowWriter]:  # its graph rows, written in the version's transaction
        if "graph" in tasks and deps.graph is not None:
            return [deps.graph.writer([version], deps.graph.extract([version]))]
        return []

    actor = f"llm:{deps.llm.name}" if deps.llm is not None else "omnimem"
    event = AuditEvent("enrich", actor, (new_id, unit.id), unit.scope, f"enriched version ({', '.join(tasks)})",
                       {"supersedes": {new_id: [unit.id]}, "job": job.key})
    return writer.write_version(unit, new_id, summary, {**unit.metadata, **extra, "enriched_from": unit.id}, derive,
                                event)


def restate_turns(deps: Deps, writer: Writer, ingestor: Ingestor, job: Job) -> None:
    """Restate dialogue turns stored offline; each restated unit supersedes the turns it covers.

    Resumes where an earlier run stopped: turns already superseded are covered and only give context.
    """
    from omnimem.engine.ingest.restate import Restater, Turn

    llm = _need_llm(deps, "restate")
    with writer.state.reading():
        stored = {u.id: u for u in deps.store.get(list(job.payload["units"]))}
    turns_units = [stored[i] for i in job.payload["units"] if i in stored]
    start = next((n for n, u in enumerate(turns_units) if u.active), None)
    if start is None:
        return  # every turn deleted or already restated
    overlap = deps.settings.restate_overlap
    todo = turns_units[max(0, start - overlap):]
    offline = {u.source_ids[0]: u.id for u in todo if u.source_ids}
    covered = {u.source_ids[0] for u in todo if u.source_ids and not u.active}
    by_turn = {u.source_ids[0]: u for u in todo if u.source_ids}
    scope = todo[0].scope
    restater = Restater(llm, window=deps.settings.restate_window, overlap=overlap,
                        workers=deps.settings.llm_workers, default_tz=deps.tz)
    turns = [Turn(u.source_ids[0] if u.source_ids else u.id, u.speaker, str(u.metadata.get("turn_text", u.summary)),
                  u.event_time) for u in todo]
    session_time = next((t.time for t in turns if t.time is not None), None)
    for window in restater.restate(turns, session_time=session_time):
        pending: list[Pending] = []
        for restated in window.units:
            if covered.issuperset(restated.source_ids):
                continue
            replaced = tuple(offline[s] for s in restated.source_ids if s in offline and s not in covered)
            covered.update(restated.source_ids)
            digest = content_hash(restated.text, speaker=None, event_time=None, scope=scope,
                                  source_id="|".join(restated.source_ids))
            pending.append(Pending(
                restated.text, restated.speaker, restated.time, scope, None, digest,
                metadata=restated_metadata(restated),
                novelty=False,  # it restates turns already stored: similar on purpose
                unit_id=enriched_id(f"{job.key}:{digest}"), source_ids=restated.source_ids, supersedes=replaced,
                provenance=derived([stamp_of(by_turn.get(s)) for s in restated.source_ids], deps.actor),
            ))
        if pending:
            writer.ingest(pending, ingestor=ingestor, action="enrich", reason="restated by the model")
