"""Multimodal Atomic Units: the one record every memory becomes.

A MAU is an immutable value. The hot tier holds everything here except the
raw content, which lives in the cold tier and is reached through ``raw_ref``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Any

import numpy as np
import numpy.typing as npt


SOURCES = ("user", "assistant", "tool", "document", "import", "derived")  # what kind of text a unit holds
TRUST_LEVELS = ("untrusted", "trusted")  # lowest first; levels may be added between the two
TRUSTED = "trusted"
UNTRUSTED = "untrusted"
_DEFAULT_TRUST = {"user": TRUSTED, "assistant": TRUSTED, "derived": TRUSTED,
                  "tool": UNTRUSTED, "document": UNTRUSTED, "import": UNTRUSTED}


def trust_rank(trust: str) -> int:
    """A trust level's place, lowest first (``untrusted`` is 0); ValueError for an unknown level."""
    return TRUST_LEVELS.index(trust)


def default_trust(source: str) -> str:
    """The trust a unit of this source kind gets when the writer names none: the user's and the assistant's
    own words (and notes derived from them) are trusted, text from tools, documents and imports is not."""
    return _DEFAULT_TRUST[source]


def trusted_at(trust: str, floor: str | None) -> bool:
    """Whether a unit of ``trust`` passes a ``min_trust`` floor (None: every unit)."""
    return floor is None or TRUST_LEVELS.index(trust) >= TRUST_LEVELS.index(floor)


def levels_from(floor: str) -> tuple[str, ...]:
    """The trust levels at or above ``floor`` (what a search with ``min_trust=floor`` admits)."""
    return TRUST_LEVELS[TRUST_LEVELS.index(floor):]


class Modality(str, Enum):
    """What kind of thing a unit remembers."""

    TEXT = "text"
    IMAGE = "image"
    AUDIO = "audio"
    VIDEO = "video"


@dataclass(frozen=True, slots=True)
class Scope:
    """Who a memory belongs to. ``None`` in a filter means "any"."""

    user_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None

    def contains(self, owner: Scope) -> bool:
        """Whether a unit owned by ``owner`` lies in this scope (a None field here matches anything)."""
        return ((self.user_id is None or self.user_id == owner.user_id)  # spelt out: a search checks hundreds
                and (self.agent_id is None or self.agent_id == owner.agent_id)
                and (self.session_id is None or self.session_id == owner.session_id))

    def is_empty(self) -> bool:
        return self.user_id is None and self.agent_id is None and self.session_id is None

    def as_dict(self) -> dict[str, str | None]:
        return {"user_id": self.user_id, "agent_id": self.agent_id, "session_id": self.session_id}


@dataclass(frozen=True, slots=True)
class Links:
    """Neighbours in the same session and where the unit came from."""

    prev_id: str | None = None
    next_id: str | None = None
    source_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class MAU:
    """One memory: a searchable summary plus a pointer to its raw content."""

    id: str
    summary: str
    modality: Modality
    event_time: datetime | None
    record_time: datetime
    scope: Scope
    content_hash: str
    speaker: str | None = None
    raw_ref: str | None = None
    links: Links = field(default_factory=Links)
    embedding: npt.NDArray[np.float32] | None = field(default=None, repr=False, compare=False)  # read-only, L2-normalised
    metadata: dict[str, Any] = field(default_factory=dict, compare=False)
    superseded_by: str | None = None  # the unit that replaced this one (kept for history)
    superseded_at: datetime | None = None  # record time of the replacement
    source: str = "user"  # what kind of text it is (SOURCES): the user's words, a tool's output, an import ...
    trust: str = TRUSTED  # TRUST_LEVELS: from the source kind, capped by the writer's key
    surface: str | None = None  # how it arrived: python, cli, http, mcp, integration:<name>, import (None: unknown)
    actor: str | None = None  # who wrote it: a server's key:<name>, local:<user> (None: written before provenance)
    origin: str | None = None  # an imported unit: the source kind its file claimed (informational only)

    @property
    def provenance(self) -> dict[str, str | None]:
        """Where the unit came from: source kind, trust, surface, actor (and an import's claimed origin)."""
        return {"source": self.source, "trust": self.trust, "surface": self.surface, "actor": self.actor,
                "origin": self.origin}

    @property
    def active(self) -> bool:
        return self.superseded_by is None

    @property
    def source_ids(self) -> tuple[str, ...]:
        return self.links.source_ids

    @property
    def user_id(self) -> str | None:
        return self.scope.user_id

    @property
    def agent_id(self) -> str | None:
        return self.scope.agent_id

    @property
    def session_id(self) -> str | None:
        return self.scope.session_id

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready view (no embedding)."""
        return {
            "id": self.id,
            "summary": self.summary,
            "modality": self.modality.value,
            "speaker": self.speaker,
            "event_time": self.event_time.isoformat() if self.event_time else None,
            "record_time": self.record_time.isoformat(),
            **self.scope.as_dict(),
            "source_ids": list(self.source_ids),
            "prev_id": self.links.prev_id,
            "next_id": self.links.next_id,
            "raw_ref": self.raw_ref,
            "content_hash": self.content_hash,
            "superseded_by": self.superseded_by,
            "superseded_at": self.superseded_at.isoformat() if self.superseded_at else None,
            "metadata": dict(self.metadata),
            **self.provenance,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MAU:
        """The inverse of :meth:`to_dict` (the remote client reads units with it)."""
        return unit_from_dict(data)


def _when(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def unit_from_dict(data: Mapping[str, Any]) -> MAU:
    """The inverse of :meth:`MAU.to_dict` (no embedding: it never travels)."""
    record_time = _when(data["record_time"])
    if record_time is None:
        raise ValueError("a unit needs a record_time")
    return MAU(
        id=str(data["id"]), summary=str(data["summary"]), modality=Modality(data["modality"]),
        event_time=_when(data.get("event_time")), record_time=record_time,
        scope=Scope(data.get("user_id"), data.get("agent_id"), data.get("session_id")),
        content_hash=str(data["content_hash"]), speaker=data.get("speaker"), raw_ref=data.get("raw_ref"),
        links=Links(data.get("prev_id"), data.get("next_id"), tuple(data.get("source_ids") or ())),
        metadata=dict(data.get("metadata") or {}), superseded_by=data.get("superseded_by"),
        superseded_at=_when(data.get("superseded_at")),
        source=str(data.get("source") or "user"), trust=str(data.get("trust") or TRUSTED),
        surface=data.get("surface"), actor=data.get("actor"), origin=data.get("origin"),
    )


def content_hash(
    text: str,
    *,
    speaker: str | None,
    event_time: datetime | None,
    scope: Scope,
    source_id: str | None,
    modality: Modality = Modality.TEXT,
) -> str:
    """Identity of an input for idempotent re-ingest.

    The same words said at another time or by another speaker are another
    event, so those are part of the identity.
    """
    parts = [
        modality.value,
        text,
        speaker or "",
        event_time.isoformat() if event_time else "",
        scope.user_id or "",
        scope.agent_id or "",
        scope.session_id or "",
        source_id or "",
    ]
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()


def search_text(speaker: str | None, summary: str) -> str:
    """The text a unit is BM25-indexed by: who said what."""
    return f"{speaker}: {summary}" if speaker else summary


def embed_text(speaker: str | None, text: str, when: datetime | None = None) -> str:
    """The text a unit is embedded by: who said what, with the event date in front when ``when`` is given."""
    body = search_text(speaker, text)
    return f"[{when.strftime('%Y-%m-%d')}] {body}" if when is not None else body
