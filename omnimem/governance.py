"""Data-access requests and model changes: export, import, re-embed.

An export is JSON Lines: a header, then every unit of the scope (full text,
raw content inline as base64, metadata, supersession), the graph's entities
and relations when the graph is on, and the audit events about those units.
Import validates every record before writing any, re-embeds with the target
store's embedder (vectors are derived data), and keeps unit ids.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from omnimem.errors import InvalidInputError, MalformedDataError
from omnimem.ingest.prepare import Pending, clean_text, make_scope
from omnimem.mau import Modality, Scope, search_text
from omnimem.store.audit import AuditEvent
from omnimem.timeparse import parse_time

if TYPE_CHECKING:
    from omnimem.embed.base import Embedder
    from omnimem.memory import Memory

FORMAT = "omnimem-export"
VERSION = 1
MAX_TEXT = 1_000_000
MAX_RAW = 50 * 1024 * 1024
_HEX = set("0123456789abcdef")


def export_records(mem: Memory, scope: Scope) -> Iterator[dict[str, Any]]:
    """Everything the store holds about ``scope``, as JSON-ready records."""
    with mem._lock:
        units = mem.store.get(mem.store.ids_in_scope(scope))
    yield {"kind": "header", "format": FORMAT, "version": VERSION, "embedder": mem.embedder.name,
           "exported_at": datetime.now(timezone.utc).isoformat(), **scope.as_dict(), "units": len(units)}
    for unit in units:
        record = {"kind": "unit", **unit.to_dict()}
        record["text"] = mem._retriever.full_text(unit) if unit.modality is Modality.TEXT else unit.summary
        if unit.raw_ref and unit.modality is not Modality.TEXT:
            record["raw"] = base64.b64encode(mem.store.read_raw(unit.raw_ref)).decode("ascii")
        yield record
    if mem.graph is not None:
        for entity in mem.graph.entities(scope):
            yield {"kind": "entity", **mem.graph.details(entity)}
    ids = {u.id for u in units}
    seen: set[int] = set()
    for unit_id in sorted(ids):
        for event in mem.store.events(unit_id=unit_id):
            if event.seq not in seen:
                seen.add(event.seq)
                yield {"kind": "event", **event.to_dict()}


def _check_unit(record: Mapping[str, Any], where: str) -> Pending:
    uid = record.get("id")
    if not isinstance(uid, str) or not uid or len(uid) > 64 or not set(uid) <= _HEX | set("-_"):
        raise MalformedDataError(f"{where}: unit id must be 1-64 hex/-/_ characters")
    try:
        modality = Modality(record.get("modality", "text"))
        text = clean_text(record.get("text") or record.get("summary"), what=f"{where}: text")
        if len(text) > MAX_TEXT:
            raise MalformedDataError(f"{where}: text longer than {MAX_TEXT} characters")
        when = parse_time(record.get("event_time"))
        scope = make_scope(record.get("user_id"), record.get("agent_id"), record.get("session_id"))
    except (ValueError, InvalidInputError) as exc:
        raise MalformedDataError(f"{where}: {exc}") from None
    raw = None
    if record.get("raw") is not None:
        encoded = record["raw"]
        if not isinstance(encoded, str) or len(encoded) > MAX_RAW * 4 // 3 + 4:
            raise MalformedDataError(f"{where}: raw content missing or larger than {MAX_RAW} bytes")
        try:
            raw = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise MalformedDataError(f"{where}: raw content is not base64") from None
    elif modality is not Modality.TEXT:
        raise MalformedDataError(f"{where}: a {modality.value} unit needs its raw content inline")
    if record.get("raw_ref") is not None and (not isinstance(record["raw_ref"], str) or not set(record["raw_ref"]) <= _HEX):
        raise MalformedDataError(f"{where}: raw_ref is not a content hash (path-like references are refused)")
    speaker = record.get("speaker")
    sources = record.get("source_ids") or []
    metadata = record.get("metadata") or {}
    if not isinstance(sources, list) or not all(isinstance(s, str) for s in sources) or not isinstance(metadata, dict):
        raise MalformedDataError(f"{where}: source_ids must be a list of strings and metadata an object")
    chash = record.get("content_hash")
    if not isinstance(chash, str) or len(chash) != 64 or not set(chash) <= _HEX:
        raise MalformedDataError(f"{where}: content_hash must be a SHA-256 hex digest")
    return Pending(
        text, speaker if isinstance(speaker, str) and speaker else None, when, scope, None, chash,
        modality=modality, metadata=metadata, raw=raw, novelty=False, unit_id=uid, source_ids=tuple(sources),
    )


def import_records(mem: Memory, records: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Validate a whole dump, then store its units (skipping ones already present)."""
    items: list[Pending] = []
    superseded: dict[str, str] = {}
    header = False
    for n, record in enumerate(records, start=1):
        where = f"record {n}"
        if not isinstance(record, Mapping):
            raise MalformedDataError(f"{where}: not a JSON object")
        kind = record.get("kind")
        if kind == "header":
            if record.get("format") != FORMAT or record.get("version") != VERSION:
                raise MalformedDataError(f"{where}: not an {FORMAT} v{VERSION} dump")
            header = True
        elif kind == "unit":
            item = _check_unit(record, where)
            items.append(item)
            if isinstance(record.get("superseded_by"), str):
                superseded[item.unit_id or ""] = record["superseded_by"]
        elif kind not in ("entity", "event"):  # the graph is rebuilt from units; events stay in the source log
            raise MalformedDataError(f"{where}: unknown record kind {kind!r}")
    if not header:
        raise MalformedDataError(f"the dump has no {FORMAT} header record")
    ids = {i.unit_id for i in items}
    results = mem._ingest(items, allow_forgotten=True, action="import", reason="import")
    pairs: dict[str, list[str]] = {}
    for old, new in superseded.items():
        if new in ids:
            pairs.setdefault(new, []).append(old)
    if pairs:
        with mem._write_lock, mem._lock:
            current = {u.id: u for u in mem.store.get(list({o for olds in pairs.values() for o in olds}))}
            todo = {n: [o for o in olds if o in current and current[o].superseded_by is None] for n, olds in pairs.items()}
            todo = {n: olds for n, olds in todo.items() if olds}
            if todo:
                mem.store.supersede(todo, AuditEvent("supersede", mem.actor, tuple(todo), reason="import"))
                mem.indexes.sync()
    stored = sum(r.accepted for r in results)
    return {"units": len(items), "stored": stored, "skipped": len(items) - stored}


def reembed(mem: Memory, embedder: Embedder, *, batch: int = 256) -> int:
    """Replace every vector with ``embedder``'s and record it as the store's embedder."""
    with mem._write_lock, mem._lock:
        rows = list(mem.store.index_rows())
        vectors: list[Any] = []
        for start in range(0, len(rows), batch):
            chunk = rows[start : start + batch]
            vectors.extend(embedder.embed([search_text(sp, su) for _, sp, su in chunk]))
        mem.store.replace_vectors([r for r, _, _ in rows], vectors, embedder.name, embedder.dim,
                                  AuditEvent("reembed", mem.actor, (), reason=f"{mem.embedder.name} -> {embedder.name}",
                                             details={"units": len(rows)}))
        mem.embedder = embedder
        mem.indexes = type(mem.indexes)(mem.store, embedder.dim, mem.indexes.folder)  # rebuilt: the counter moved
        mem.indexes.save()
    return len(rows)
