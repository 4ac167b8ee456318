"""The write path's ingestor (what to write): validation is done; here units are de-duplicated,
filtered, summarised and embedded, and the rows stored with them are prepared.

The :class:`Ingestor` decides and builds; the engine's writer
(:mod:`omnimem.engine.writer`) calls it under its write lock, then stores,
indexes and wakes the workers. Nothing here takes a lock or writes to the
store. Restatement turns dialogue into batches and hands them to the writer.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import numpy as np

from omnimem.embed.base import Vectors
from omnimem.engine.deps import Deps
from omnimem.engine.state import WriterState
from omnimem.engine.provenance import derived
from omnimem.engine.ingest.plan import plan_jobs
from omnimem.engine.ingest.novelty import NoveltyFilter
from omnimem.results import AddResult
from omnimem.engine.ingest.prepare import Pending
from omnimem.text import EmbedInput, embed_texts
from omnimem.mau import MAU, Links, Modality, Scope, content_hash, search_text
from omnimem.store.audit import AuditEvent
from omnimem.store.base import RowWriter
from omnimem.store.jobs import NewJob
from omnimem.store.cold import content_ref
from omnimem.engine.ingest.summarise import summarise

if TYPE_CHECKING:
    from omnimem.engine.ingest.restate import RestatedUnit

Progress = Callable[[int], None]
BATCH = 256
READ_FIRST_S = 0.05  # the longest a write waits for the searches in flight to embed (WriterState.yield_to_reads)
READ_CHUNK = 8  # while searches are coming in, a group of up to READ_CHUNK_MAX texts is embedded this many at a time
READ_CHUNK_MAX = 64  # (a larger call, an import or a long dialogue, keeps its one batch: its throughput counts)
SEARCH_RECENT_S = 0.25  # searches "come in": one is in flight or began this recently (WriterState.searches_recent)


@dataclass(frozen=True, slots=True)
class Rows:
    """What is written in the transaction of built units besides them, and whether to ask for supersession."""

    derived: list[RowWriter]
    event: AuditEvent
    supersedes: dict[str, list[str]]
    jobs: list[NewJob]
    propose: bool  # ask the model which earlier units the new text units replace (auto_supersede, sync)


@dataclass(frozen=True, slots=True)
class Built:
    """Accepted items made into units (with their vectors and cold-tier content), not yet written."""

    units: list[MAU]
    raw: dict[str, bytes]
    vectors: Any
    chain_tail: str | None  # the last chained unit among them (else the one before)

    def part(self, start: int, stop: int) -> Built:
        """The units ``start:stop`` (one call's share of a group) with their vectors and content."""
        units = self.units[start:stop]
        raw = {u.raw_ref: self.raw[u.raw_ref] for u in units if u.raw_ref is not None}
        return Built(units, raw, self.vectors[start:stop], self.chain_tail)


class Ingestor:
    """Decides and builds the units one engine stores (its writer writes them)."""

    def __init__(self, deps: Deps, state: WriterState) -> None:
        self.deps = deps
        self.state = state  # the writer's: reads held open, the embedder (re-embedding swaps it)
        self.novelty = NoveltyFilter(deps.settings.novelty_threshold, deps.settings.novelty)
        self._chain_tail: str | None = None  # last chained media unit of the current add_* call

    def restate(self, items: list[Pending], scope: Scope, progress: Progress | None,
                write: Callable[[list[Pending]], list[AddResult]]) -> list[AddResult]:
        """Write-time restatement: store each window's self-contained units before the next.

        With an LLM, pronouns are resolved and relative times made absolute;
        without one, each turn becomes "On <date>, <speaker> said: <text>".
        Each unit keeps the ids of its source turns. A run that failed part
        way resumes after the turns already covered by stored units. ``write``
        stores each window's batch (the engine's writer).
        """
        from omnimem.engine.ingest.restate import Restater, Turn

        deferred = self.deps.llm is not None and self.deps.settings.enrich != "sync"  # the LLM runs in a job
        turns = [Turn(p.source_id or f"turn-{i}", p.speaker, p.text, p.event_time) for i, p in enumerate(items)]
        said = {t.id: t.text for t in turns}
        stamps = {t.id: p.provenance for t, p in zip(turns, items)}
        with self.state.reading():
            covered = {s for u in self.deps.store.get(self.deps.store.ids_in_scope(scope)) for s in u.source_ids}
        start = next((i for i, t in enumerate(turns) if t.id not in covered), len(turns))
        if start == len(turns):
            return []
        overlap = self.deps.settings.restate_overlap
        todo = turns[max(0, start - overlap) if start else 0 :]
        restater = Restater(
            None if deferred else self.deps.llm, window=self.deps.settings.restate_window, overlap=overlap,
            workers=self.deps.settings.llm_workers, default_tz=self.deps.tz,
        )
        session_time = next((t.time for t in turns if t.time is not None), None)
        results: list[AddResult] = []
        for window in restater.restate(todo, session_time=session_time):
            pending = [
                Pending(
                    unit.text, unit.speaker, unit.time, scope, None,
                    content_hash(unit.text, speaker=None, event_time=None, scope=scope,
                                 source_id="|".join(unit.source_ids)),
                    metadata=restated_metadata(unit) if not deferred else  # stored now, restated by the model in a job (omnimem.engine.enrich)
                    {"restated": "offline", "turn_text": said[unit.source_ids[0]]},
                    source_ids=unit.source_ids,
                    provenance=derived([stamps.get(s) for s in unit.source_ids], self.deps.actor),
                )
                for unit in window.units
                if not covered.issuperset(unit.source_ids)
            ]
            results.extend(write(pending))
            if progress is not None:
                progress(len(window.turn_ids) - (overlap if window.index else 0))
        return results

    def reset_chain(self) -> None:
        """The next chained unit starts a new chain (what every call without ``keep_chain`` does)."""
        self._chain_tail = None

    def lookup(self, items: Sequence[Pending], allow_forgotten: bool) -> tuple[dict[str, str], dict[str, str]]:
        """Stored units with the items' content hashes, and (unless ``allow_forgotten``) deleted ones."""
        known = self.deps.store.find_hashes([p.content_hash for p in items])
        forgotten = {} if allow_forgotten else self.deps.store.tombstoned([(p.scope, p.content_hash) for p in items])
        return known, forgotten

    def decide(
        self, batch: Sequence[Pending], known: dict[str, str], forgotten: dict[str, str],
        recent: dict[Scope, list[tuple[str, str]]], seen_in_batch: dict[str, str], counts: dict[str, float],
    ) -> tuple[list[AddResult | None], list[tuple[int, Pending, str]]]:
        """Each item's fate in order: a duplicate, forgotten or redundant result, or ``None`` and accepted.

        ``recent`` and ``seen_in_batch`` carry what earlier accepted items (also of other calls in the same
        group, see :mod:`omnimem.engine.writer`) will have stored, so the decisions equal sequential ones.
        """
        results: list[AddResult | None] = []
        accepted: list[tuple[int, Pending, str]] = []
        window = self.deps.settings.novelty_window
        for pos, item in enumerate(batch):
            kind = item.modality.value
            dup = known.get(item.content_hash) or seen_in_batch.get(item.content_hash)
            if dup is not None:
                results.append(AddResult(None, False, "duplicate", 1.0, dup))
                count(counts, f"{kind}_duplicate")
                continue
            if item.content_hash in forgotten:
                results.append(AddResult(None, False, "forgotten: this content was deleted; pass allow_forgotten=True",
                                         None, forgotten[item.content_hash]))
                count(counts, f"{kind}_forgotten")
                continue
            unit_id = item.unit_id or uuid.uuid4().hex
            if item.novelty:
                if item.scope not in recent:
                    recent[item.scope] = self.deps.store.recent(item.scope, window)[::-1]
                decision = self.novelty.check(item.text, recent[item.scope])
                if not decision.accepted:
                    results.append(AddResult(None, False, decision.reason, decision.similarity, decision.closest_id))
                    count(counts, f"{kind}_redundant")
                    continue
                recent[item.scope] = [*recent[item.scope], (unit_id, item.text)][-window:]
            seen_in_batch[item.content_hash] = unit_id
            accepted.append((pos, item, unit_id))
            results.append(None)
            count(counts, f"{kind}_stored")
        return results, accepted

    def _embed_texts(self, items: Sequence[Pending], summaries: Sequence[str]) -> list[str]:
        """What each unit is embedded by (see :mod:`omnimem.text`)."""
        settings = self.deps.settings
        # the hot-tier summary (a text of up to summary_words is its own summary): what re-embedding and the
        # context of later batches read back, so every path embeds the same text
        inputs = [EmbedInput(item.scope, item.speaker, s, item.modality, item.event_time)
                  for item, s in zip(items, summaries)]
        history: dict[Scope, list[str]] = {}
        if settings.embed_context:
            for scope in dict.fromkeys(item.scope for item in items):
                history[scope] = [search_text(sp, su) for sp, su in
                                  self.deps.store.recent_lines(scope, settings.embed_context)]
        return embed_texts(inputs, context=settings.embed_context, dates=settings.embed_dates, history=history)

    def _embed_yielding(self, texts: list[str]) -> Vectors:
        """The vectors of ``texts``, embedded after the searches in flight have ended
        (``WriterState.yield_to_reads``).

        While searches are coming in (``WriterState.searches_recent``), a group commit's texts (up to
        ``READ_CHUNK_MAX``) are embedded ``READ_CHUNK`` at a time with that wait before each call: a search that
        arrives while a write embeds then shares the cores with one short call, not with the whole group's (in a
        storm of adds a group is 20-30 texts, ~100 ms of model time). With no search about, the group is one call:
        smaller calls cost throughput, and a burst of adds returns after its group's call.
        """
        state = self.state
        chunked = READ_CHUNK < len(texts) <= READ_CHUNK_MAX
        vectors: list[Vectors] = []
        start = 0
        while not vectors or start < len(texts):  # one call at least (no texts: the embedder's empty answer)
            state.yield_to_reads(READ_FIRST_S)
            stop = start + READ_CHUNK if chunked and state.searches_recent(SEARCH_RECENT_S) else len(texts)
            vectors.append(state.embedder.embed(texts[start:stop]))
            start = stop
        return vectors[0] if len(vectors) == 1 else np.concatenate(vectors)

    def build(self, items: Sequence[Pending], ids: Sequence[str]) -> Built:
        """Summaries, one embedding call and the units of accepted items, in order (nothing is written)."""
        deferred = self.deps.settings.enrich != "sync"  # model work is queued as jobs (omnimem.engine.enrich)
        llm = self.deps.llm if self.deps.settings.llm_summaries and not deferred else None
        words = self.deps.settings.summary_words
        summaries = [  # long text: a model's summary when one is configured, else the first words
            summarise(item.text, llm if item.modality is Modality.TEXT else None, max_words=words)
            for item in items
        ]
        vectors = self._embed_yielding(self._embed_texts(items, summaries))
        now = datetime.now(timezone.utc)
        units: list[MAU] = []
        raw: dict[str, bytes] = {}
        chained: str | None = self._chain_tail
        for item, unit_id, summary, vector in zip(items, ids, summaries, vectors):
            ref = None
            data = item.raw if item.raw is not None else (item.text.encode("utf-8") if summary != item.text else None)
            if data is not None:  # media, or the full version of a long text: cold tier
                ref = content_ref(data)
                raw[ref] = data
            prev = chained if item.chain else None
            units.append(
                MAU(
                    id=unit_id, summary=summary, modality=item.modality, event_time=item.event_time,
                    record_time=now, scope=item.scope, content_hash=item.content_hash, speaker=item.speaker,
                    raw_ref=ref, links=Links(prev, None, item.source_ids or ((item.source_id,) if item.source_id else ())),
                    embedding=vector, metadata=item.metadata, **provenance_fields(item),
                )
            )
            if item.chain:
                chained = unit_id
        return Built(units, raw, vectors, chained)

    def rows(self, accepted: list[tuple[int, Pending, str]], built: Built, action: str,
             reason: str | None) -> Rows:
        """What the writer stores with built units in their transaction: derived rows, event, jobs."""
        deferred = self.deps.settings.enrich != "sync"
        units, raw = built.units, built.raw
        derived: list[RowWriter] = []  # graph and CLIP rows, written in the transaction of their units
        if self.deps.graph is not None and not deferred:
            described = [u for u in units if u.modality is Modality.TEXT or u.metadata.get("caption")]
            derived.append(self.deps.graph.writer(described, self.deps.graph.extract(described)))
        if self.deps.clip is not None and (clip_rows := self.deps.clip.writer(units, raw)) is not None:
            derived.append(clip_rows)
        supersedes = {uid: list(item.supersedes) for _, item, uid in accepted if item.supersedes}
        replaced = tuple(old for olds in supersedes.values() for old in olds)
        event = AuditEvent(
            action, self.deps.actor, tuple(u.id for u in units) + replaced, units[0].scope, reason,
            {"modalities": sorted({u.modality.value for u in units}), "supersedes": supersedes},  # no content hashes:
            # a plain hash in the append-only log would let anyone confirm a guess at forgotten content
        )
        jobs = plan_jobs(self.deps, units, action) if deferred else []
        propose = (self.deps.settings.auto_supersede and self.deps.llm is not None and action != "import"
                   and not deferred)
        return Rows(derived, event, supersedes, jobs, propose)

    def chained(self, built: Built, raced: dict[str, MAU], holders: dict[str, str]) -> None:
        """After a write: the next chained unit follows the last one stored (or the unit that holds its content)."""
        chained = built.chain_tail
        self._chain_tail = chained if chained not in raced else holders.get(raced[chained].content_hash)


def provenance_fields(item: Pending) -> dict[str, Any]:
    """The MAU fields of an item's provenance (stamped by the writer before it is built)."""
    stamp = item.provenance
    if stamp is None:
        return {}
    return {"source": stamp.source, "trust": stamp.trust, "surface": stamp.surface, "actor": stamp.actor,
            "origin": stamp.origin}


def restated_metadata(unit: RestatedUnit) -> dict[str, Any]:
    """The metadata of a restated unit (write-time restatement and the restate job alike)."""
    return {"restated": True, "keywords": list(unit.keywords), "persons": list(unit.persons),
            "entities": list(unit.entities), "location": unit.location, "topic": unit.topic}


def count(counts: dict[str, float], name: str, amount: float = 1.0) -> None:
    counts[name] = counts.get(name, 0.0) + amount
