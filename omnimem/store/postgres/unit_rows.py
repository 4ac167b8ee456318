"""How a unit is laid out as a row of PostgreSQL's ``units`` table (the columns :data:`COLUMNS` names)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np

from omnimem.mau import MAU, Links, Modality, Scope, levels_from

COLUMNS = ("rid, id, summary, modality, speaker, event_time, record_time, user_id, agent_id, session_id, prev_id, "
           "source_ids, raw_ref, content_hash, metadata, embedding, record_ts, superseded_by, superseded_at, "
           "source, trust, surface, actor, origin")
WRITTEN = 24  # values a new row is given besides its tenant and length (every column of COLUMNS)


def trust_sql(min_trust: str | None, alias: str = "") -> tuple[str, list[Any]]:
    """SQL admitting units at least ``min_trust`` trusted (``TRUE`` for None), with its arguments."""
    if min_trust is None:
        return "TRUE", []
    return f"{alias}trust = ANY(%s)", [list(levels_from(min_trust))]


def to_row(unit: MAU) -> tuple[Any, ...]:
    emb = np.asarray(unit.embedding if unit.embedding is not None else [], dtype=np.float32)
    return (
        unit.id, unit.summary, unit.modality.value, unit.speaker,
        unit.event_time.isoformat() if unit.event_time else None, unit.record_time.isoformat(),
        unit.scope.user_id, unit.scope.agent_id, unit.scope.session_id, unit.links.prev_id,
        json.dumps(list(unit.source_ids)), unit.raw_ref, unit.content_hash, json.dumps(unit.metadata), emb,
        unit.record_time.timestamp(), unit.superseded_by,
        unit.superseded_at.isoformat() if unit.superseded_at else None,
        unit.source, unit.trust, unit.surface, unit.actor, unit.origin,
    )


def to_unit(row: Sequence[Any], next_id: str | None) -> MAU:
    (_, uid, summary, modality, speaker, event_time, record_time, user_id, agent_id, session_id,
     prev_id, source_ids, raw_ref, chash, metadata, emb, _ts, superseded_by, superseded_at,
     source, trust, surface, actor, origin) = row
    return MAU(
        id=uid, summary=summary, modality=Modality(modality),
        event_time=datetime.fromisoformat(event_time) if event_time else None,
        record_time=datetime.fromisoformat(record_time), scope=Scope(user_id, agent_id, session_id),
        content_hash=chash, speaker=speaker, raw_ref=raw_ref,
        links=Links(prev_id, next_id, tuple(json.loads(source_ids))),
        embedding=to_array(emb) if emb is not None else None,
        metadata=json.loads(metadata), superseded_by=superseded_by,
        superseded_at=datetime.fromisoformat(superseded_at) if superseded_at else None,
        source=source, trust=trust, surface=surface, actor=actor, origin=origin,
    )


def to_array(value: Any) -> np.ndarray[Any, np.dtype[np.float32]]:
    """A pgvector value as a float32 array (the adapter gives a ``Vector`` or an array by version)."""
    raw = value.to_numpy() if hasattr(value, "to_numpy") else value
    return np.asarray(raw, dtype=np.float32)
