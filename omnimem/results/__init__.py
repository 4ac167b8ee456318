"""Every public value object the facade returns, each with ``to_dict``/``from_dict``.

The ground floor's one import path for what crosses a surface: the HTTP server
writes these with ``to_dict``, the remote engine rebuilds them with
``from_dict``, and an embedded ``Memory`` returns the very same classes, so a
result compares equal whichever engine made it (``tests/test_results.py``
round-trips each one). Writes return :class:`AddResult` / :class:`MediaResult`;
``ask`` an :class:`Answer`; the audit log :class:`AuditRecord` (all defined
here). Searches return a :class:`Context` of :class:`Hit`, defined with the
planner's :class:`Plan` and the line rules in :mod:`omnimem.context`; the
knowledge graph's :class:`Entity`, :class:`Neighbor` and its other value types
are defined in :mod:`omnimem.results.entities`. Both are re-exported here:
import them from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from omnimem.context import (
    FENCE_CLOSE, FENCE_OPEN, FENCE_RULE, PACKINGS, STAMP_GAP, Context, Hit, Plan, PlanRound, RawContent, day_key,
    elide_mode, elided, fence, fenced_session_line, fenced_unit_line, group_header, group_key, grouping, media_label, minute_of_day, primary_score, ranked_by, session_line, speaker_of,
    spoken_order, stamped, time_stamp, unit_line,
)
from omnimem.results.entities import (
    MAX_NAME_CHARS, PERSON_TITLES, Entity, EntityType, ExpansionResult, ExtractedEntity, ExtractedRelation,
    Extraction, Neighbor, Reached, Relation, name_key, normalize_name,
)
from omnimem.mau import Scope

__all__ = [
    "FENCE_CLOSE", "FENCE_OPEN", "FENCE_RULE", "MAX_NAME_CHARS", "PACKINGS", "PERSON_TITLES", "STAMP_GAP", "AddResult", "Answer", "AnswerUsage", "AuditRecord",
    "Context", "Entity", "EntityType", "ExpansionResult", "ExtractedEntity", "ExtractedRelation", "Extraction", "Hit",
    "MediaResult", "Neighbor", "Plan", "PlanRound", "RawContent", "Reached", "Relation", "day_key", "elide_mode",
    "elided", "fence", "fenced_session_line", "fenced_unit_line", "group_header", "group_key", "grouping", "media_label", "minute_of_day", "name_key", "normalize_name",
    "primary_score", "ranked_by", "session_line", "speaker_of", "spoken_order", "stamped", "time_stamp", "unit_line",
]


# -- writes --------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class AddResult:
    """What happened to one input: stored (with its id) or skipped (and why)."""

    id: str | None
    accepted: bool
    reason: str
    similarity: float | None = None
    duplicate_of: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "accepted": self.accepted,
            "reason": self.reason,
            "similarity": self.similarity,
            "duplicate_of": self.duplicate_of,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AddResult:
        similarity = data.get("similarity")
        return cls(data.get("id"), bool(data["accepted"]), str(data["reason"]),
                   None if similarity is None else float(similarity), data.get("duplicate_of"))


@dataclass(frozen=True, slots=True)
class MediaResult:
    """What ingesting one media file did: per-unit results and the filters' counts."""

    results: tuple[AddResult, ...]
    stats: dict[str, float] = field(default_factory=dict)
    event_id: str | None = None  # video: the unit that stands for the whole clip

    @property
    def ids(self) -> list[str]:
        return [r.id for r in self.results if r.id is not None]

    def to_dict(self) -> dict[str, Any]:
        return {"event_id": self.event_id, "stats": dict(self.stats), "results": [r.to_dict() for r in self.results]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MediaResult:
        return cls(tuple(AddResult.from_dict(r) for r in data.get("results", ())),
                   {str(k): float(v) for k, v in (data.get("stats") or {}).items()}, data.get("event_id"))



# -- answers -----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class AnswerUsage:
    """What answering cost: tokens and calls of the model, and wall time."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    latency_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "calls": self.calls,
            "latency_s": round(self.latency_s, 4),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AnswerUsage:
        return cls(int(data.get("prompt_tokens", 0)), int(data.get("completion_tokens", 0)),
                   int(data.get("calls", 0)), float(data.get("latency_s", 0.0)))


@dataclass(frozen=True, slots=True)
class Answer:
    """An answer (or ``None`` offline) with the evidence it was given."""

    question: str
    answer: str | None
    evidence: tuple[Hit, ...]
    usage: AnswerUsage
    context: Context
    model: str | None = None
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "answer": self.answer,
            "model": self.model,
            "note": self.note,
            "usage": self.usage.to_dict(),
            "evidence": [hit.to_dict() for hit in self.evidence],
            "tokens": self.context.tokens,
            "context": self.context.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Answer:
        """The inverse of :meth:`to_dict` (the remote client reads answers with it)."""
        return cls(
            question=str(data["question"]), answer=data.get("answer"),
            evidence=tuple(Hit.from_dict(h) for h in data.get("evidence", ())),
            usage=AnswerUsage.from_dict(data.get("usage", {})), context=Context.from_dict(data["context"]),
            model=data.get("model"), note=data.get("note"),
        )


# -- the audit log ---------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class AuditRecord:
    """A logged event as read back."""

    seq: int
    time: datetime
    actor: str
    action: str
    unit_ids: tuple[str, ...]
    scope: Scope
    reason: str | None
    details: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq, "time": self.time.isoformat(), "actor": self.actor, "action": self.action,
            "unit_ids": list(self.unit_ids), **self.scope.as_dict(), "reason": self.reason, "details": self.details,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AuditRecord:
        return cls(int(data["seq"]), datetime.fromisoformat(data["time"]), str(data["actor"]), str(data["action"]),
                   tuple(data.get("unit_ids", ())), Scope(data.get("user_id"), data.get("agent_id"),
                                                          data.get("session_id")),
                   data.get("reason"), dict(data.get("details") or {}))

    def __str__(self) -> str:
        ids = ", ".join(self.unit_ids[:3]) + (f" (+{len(self.unit_ids) - 3})" if len(self.unit_ids) > 3 else "")
        why = f" ({self.reason})" if self.reason else ""
        return f"#{self.seq} {self.time:%Y-%m-%d %H:%M:%S} {self.actor} {self.action} {ids}{why}"
