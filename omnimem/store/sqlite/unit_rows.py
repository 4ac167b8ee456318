"""How a unit is laid out as a row of SQLite's ``units`` table, and the scope filter in SQL."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from omnimem.mau import MAU, Links, Modality, Scope, levels_from

COLUMNS = (
    "rid, id, summary, modality, speaker, event_time, record_time, user_id, agent_id, "
    "session_id, prev_id, source_ids, raw_ref, content_hash, metadata, embedding, record_ts, "
    "superseded_by, superseded_at, source, trust, surface, actor, origin"
)
PLACES = ",".join("?" * 24)  # one per column


def scope_clause(scope: Scope, *, exact: bool) -> tuple[str, list[Any]]:
    """SQL for a scope; ``exact`` also matches NULL columns (novelty, links)."""
    parts: list[str] = []
    args: list[Any] = []
    for col, value in scope.as_dict().items():
        if value is not None:
            parts.append(f"{col} = ?")
            args.append(value)
        elif exact:
            parts.append(f"{col} IS NULL")
    return (" AND ".join(parts) or "1=1"), args


def trust_clause(min_trust: str | None) -> tuple[str, list[Any]]:
    """SQL admitting the units at least ``min_trust`` trusted (``1=1``: None, every unit)."""
    if min_trust is None:
        return "1=1", []
    levels = levels_from(min_trust)
    return f"trust IN ({','.join('?' * len(levels))})", list(levels)


def chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def to_row(unit: MAU) -> tuple[Any, ...]:
    emb = np.asarray(unit.embedding, dtype=np.float32).tobytes() if unit.embedding is not None else b""
    return (
        unit.id, unit.summary, unit.modality.value, unit.speaker,
        unit.event_time.isoformat() if unit.event_time else None,
        unit.record_time.isoformat(), unit.scope.user_id, unit.scope.agent_id, unit.scope.session_id,
        unit.links.prev_id, json.dumps(list(unit.source_ids)), unit.raw_ref, unit.content_hash,
        json.dumps(unit.metadata), emb, unit.record_time.timestamp(), unit.superseded_by,
        unit.superseded_at.isoformat() if unit.superseded_at else None,
        unit.source, unit.trust, unit.surface, unit.actor, unit.origin,
    )


_iso = datetime.fromisoformat
_MODALITIES = {m.value: m for m in Modality}  # a dict lookup: Modality(value) is slow for a search's rows


def _source_ids(text: str) -> tuple[str, ...]:
    """``tuple(json.loads(text))`` of a stored JSON list of strings, without the parser where that is exact.

    ``json.dumps`` writes such a list as ``["a", "b"]``; a string with a quote, a backslash or a non-ASCII
    character in it is written with a backslash escape, so text without a backslash splits exactly on
    ``", "`` (no string can hold a quote unescaped). Anything else (a list written without the spaces, say)
    goes through the parser.
    """
    if text == "[]":
        return ()
    if "\\" not in text and text.startswith('["') and text.endswith('"]'):
        ids = text[2:-2].split('", "')
        if not any('"' in i for i in ids):  # else not the shape json.dumps writes: the parser decides
            return tuple(ids)
    return tuple(json.loads(text))


def to_unit(row: Sequence[Any], next_id: str | None) -> MAU:
    """The unit of a row (``COLUMNS`` order). Positional arguments and no enum call: a search builds ~160."""
    (_, uid, summary, modality, speaker, event_time, record_time, user_id, agent_id, session_id,
     prev_id, source_ids, raw_ref, chash, metadata, emb, _record_ts, superseded_by, superseded_at,
     source, trust, surface, actor, origin) = row
    return MAU(
        uid, summary, _MODALITIES.get(modality) or Modality(modality),
        _iso(event_time) if event_time else None, _iso(record_time),
        Scope(user_id, agent_id, session_id), chash, speaker, raw_ref,
        Links(prev_id, next_id, _source_ids(source_ids)),
        np.frombuffer(emb, dtype=np.float32) if emb else None,
        json.loads(metadata) if metadata != "{}" else {},  # most rows: skip the JSON parser
        superseded_by, _iso(superseded_at) if superseded_at else None, source, trust, surface, actor, origin,
    )
