"""Data-access requests and model changes: export, import, re-embed.

An export is JSON Lines: a header, then every unit of the scope (full text,
raw content inline as base64, metadata, supersession), the graph's entities
and relations when the graph is on, and the audit events about those units.
Import validates every record against its modality before writing any
(:mod:`omnimem.engine.ingest.dump`), recomputes content hashes from the content,
re-embeds with the target store's embedder (vectors are derived data), keeps
unit ids, and honours tombstones unless told otherwise.
"""

from __future__ import annotations

import base64
import io
import wave
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any

from omnimem.embed.base import Embedder
from omnimem.engine.deps import Deps
from omnimem.engine.state import WriterState
from omnimem.contract.caller import Channel, current_channel
from omnimem.engine.provenance import imported
from omnimem.errors import ForbiddenError, InvalidInputError, MalformedDataError
from omnimem.engine.ingest import history
from omnimem.engine.ingest.dump import FORMAT, VERSION, Checked, check_dump
from omnimem.text import EmbedInput, embed_texts
from omnimem.engine.ingest.pipeline import Progress
from omnimem.engine.writer import Changes, Writer
from omnimem.mau import MAU, Modality, Scope, trust_rank
from omnimem.engine.retrieval.content import full_text
from omnimem.store.audit import AuditEvent


def export_records(deps: Deps, state: WriterState, scope: Scope) -> Iterator[dict[str, Any]]:
    """Everything the store holds about ``scope``, as JSON-ready records."""
    with state.reading():
        units = deps.store.get(deps.store.ids_in_scope(scope))
    yield {"kind": "header", "format": FORMAT, "version": VERSION, "embedder": state.embedder.name,
           "exported_at": datetime.now(timezone.utc).isoformat(), **scope.as_dict(), "units": len(units)}
    for unit in units:
        record = {"kind": "unit", **unit.to_dict()}
        record["text"] = full_text(deps.store, unit) if unit.modality is Modality.TEXT else unit.summary
        if unit.raw_ref and unit.modality is not Modality.TEXT:
            record["raw"] = base64.b64encode(deps.store.read_raw(unit.raw_ref)).decode("ascii")
        yield record
    if deps.graph is not None:
        for entity in deps.graph.entities(scope):
            yield {"kind": "entity", **deps.graph.details(entity)}
    ids = {u.id for u in units}
    seen: set[int] = set()
    for unit_id in sorted(ids):
        for event in deps.store.events(unit_id=unit_id):
            if event.seq not in seen:
                seen.add(event.seq)
                yield {"kind": "event", **event.to_dict()}


def import_records(
    deps: Deps, writer: Writer, records: Iterable[Mapping[str, Any]], *, allow_forgotten: bool = False,
    progress: Progress | None = None, trust: str | None = None,
) -> dict[str, int]:
    """Validate a whole dump, then have the writer store its units (skipping ones already present or forgotten),
    their supersession links and their audit events.

    ``progress(n)`` is told of every unit dealt with: those skipped up front at once, then each stored batch.

    A bad record refuses the whole dump before the first write (every backend's rules are checked then: a NUL
    character is refused everywhere, not only by PostgreSQL). The writing itself is batch by batch, each batch
    one transaction: an import stopped part-way (a killed process, a lost connection) keeps the batches it
    stored, and running the same import again stores only the rest (what is present is skipped). Every unit is
    stored as an import (source and surface ``import``, the importer as its actor; the source kind the file names
    is kept as its ``origin``), trusted as ``trust`` says (default: untrusted; above the importer's key's limit:
    ForbiddenError before any write).
    """
    if not isinstance(allow_forgotten, bool):
        raise InvalidInputError("allow_forgotten must be True or False")
    records = list(records)
    checked = [replace(c, item=replace(c.item, provenance=imported(c.claimed, trust, deps.actor)))
               for c in _checked_media(deps, check_dump(records))]  # an import, whatever the file says
    past = history.check_events(records)  # the source's audit events, checked before anything is stored
    with writer.state.reading():
        todo = history.new_units(deps.store, checked)  # refuses ids another scope holds or held
    todo, forgotten = _not_forgotten(deps, writer.state, todo, allow_forgotten)
    if progress is not None and len(checked) > len(todo):
        progress(len(checked) - len(todo))
    stored = 0
    for group in _by_scope(todo):  # one audit event per scope, so each user's log shows its import
        items = [c.item for c in group]
        results = writer.ingest(items, progress, allow_forgotten=allow_forgotten, action="import", reason="import")
        stored += sum(r.accepted for r in results)
        forgotten += sum(r.reason.startswith("forgotten") for r in results)
    _link_versions(deps, writer, checked)
    events = writer.change(lambda changes: history.restore(deps.store, past, changes.log))
    return {"units": len(checked), "stored": stored, "skipped": len(checked) - stored, "forgotten": forgotten,
            "events": events}


def _checked_media(deps: Deps, checked: list[Checked]) -> list[Checked]:
    """Imported raw content is checked like an upload: an image unit must decode as an image within
    ``max_media_pixels`` (its mime, size and perceptual hash are taken from the pixels, not the record),
    an audio unit must hold the WAV segment the audio paths store."""
    out: list[Checked] = []
    for c in checked:
        item = c.item
        try:
            if item.modality is Modality.IMAGE and item.raw is not None:
                from omnimem.media import inspect_image
                from omnimem.media.limits import check_image

                check_image(item.raw, deps.settings.max_media_pixels)
                info = inspect_image(item.raw)
                meta = {**item.metadata, "mime": info.mime_type, "width": info.width, "height": info.height,
                        "phash": info.phash}
                c = replace(c, item=replace(item, metadata=meta))
            elif item.modality is Modality.AUDIO and item.raw is not None:
                _check_wav(item.raw)
        except InvalidInputError as exc:  # the media errors (415, 413) are InvalidInputErrors too
            raise MalformedDataError(f"{c.where}: {exc}") from None
        out.append(c)
    return out


def _check_wav(data: bytes) -> None:
    try:
        with wave.open(io.BytesIO(data)) as clip:
            frames = clip.getnframes()
    except (wave.Error, EOFError, ValueError) as exc:
        raise InvalidInputError(f"an audio unit's raw content must be a WAV segment ({exc})") from None
    if frames < 1:
        raise InvalidInputError("an audio unit's raw content is an empty WAV segment")


def _not_forgotten(deps: Deps, state: WriterState, todo: list[Checked], allow: bool) -> tuple[list[Checked], int]:
    """Drop every unit of a user/agent that was forgotten as a whole here, whatever times the dump gives it.

    The times a dump carries (``record_time``, mem0's ``updated_at``) are the importer's word: a later one
    must not bring forgotten content back. Content added after the forget is live here already (skipped as
    present); restoring anything else of a forgotten user or agent needs ``allow_forgotten``.
    """
    if allow:
        return todo, 0
    forgotten: dict[tuple[str | None, str | None], bool] = {}
    kept: list[Checked] = []
    with state.reading():
        for c in todo:
            owner = (c.item.scope.user_id, c.item.scope.agent_id)
            if owner not in forgotten:
                forgotten[owner] = deps.store.forgotten_since(c.item.scope) is not None
            if not forgotten[owner]:
                kept.append(c)
    return kept, len(todo) - len(kept)


def _by_scope(todo: list[Checked]) -> list[list[Checked]]:
    groups: dict[Scope, list[Checked]] = {}
    for c in todo:
        groups.setdefault(c.item.scope, []).append(c)
    return list(groups.values())


def _link_versions(deps: Deps, writer: Writer, checked: list[Checked]) -> None:
    """Restore supersession between imported units (already checked to share user and agent)."""
    pairs = [(c.item.unit_id or "", c.superseded_by) for c in checked if c.superseded_by]
    if pairs:
        writer.change(lambda changes: _link(deps, changes, pairs))


def _link(deps: Deps, changes: Changes, pairs: list[tuple[str, str]]) -> None:
    """Supersede each pair's old unit by its new one, where both are here, current and of one owner."""
    units = {u.id: u for u in deps.store.get(list({i for pair in pairs for i in pair if i}))}
    todo: dict[str, list[str]] = {}
    for old, new in pairs:
        if old in units and new in units and units[old].active and (
                units[old].user_id, units[old].agent_id) == (units[new].user_id, units[new].agent_id):
            todo.setdefault(new or "", []).append(old)
    if todo:
        replaced = tuple(o for olds in todo.values() for o in olds)
        changes.supersede(todo, AuditEvent("supersede", deps.actor, (*todo, *replaced), reason="import",
                                           details={"supersedes": todo}))


def set_trust(deps: Deps, writer: Writer, unit: MAU, trust: str, reason: str | None) -> MAU:
    """An admin's change of ``unit``'s trust, logged (action ``trust``, from and to); the unit as it now is.

    Raising it above what the current channel's key may write is a ForbiddenError, as for a write."""
    if trust_rank(trust) > trust_rank((current_channel() or Channel("python")).max_trust):
        raise ForbiddenError(f"this key may not make a memory {trust!r}")
    if unit.trust == trust:
        return unit
    event = AuditEvent("trust", deps.actor, (unit.id,), unit.scope, reason, {"from": unit.trust, "to": trust})
    writer.change(lambda changes: changes.set_trust([unit.id], trust, event))
    return replace(unit, trust=trust)


def new_vectors(deps: Deps, embedder: Embedder, rows: list[Any], *, batch: int = 256) -> list[Any]:
    """Every stored unit's vector with ``embedder``, from its ``embed_rows`` row (the text it is embedded by).

    The writer (:meth:`omnimem.engine.writer.Writer.reembed`) stores them and swaps the engine's embedder
    and indexes afterwards.
    """
    inputs = [EmbedInput(scope, sp, su, Modality(mod), datetime.fromisoformat(when) if when else None)
              for _, scope, sp, su, mod, when in rows]
    texts = embed_texts(inputs, context=deps.settings.embed_context, dates=deps.settings.embed_dates)
    vectors: list[Any] = []
    for start in range(0, len(texts), batch):
        vectors.extend(embedder.embed(texts[start : start + batch]))
    return vectors
