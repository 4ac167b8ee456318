"""Request bodies of the HTTP API: pydantic models that refuse unknown fields.

Types here are the wire shape only; the facade still validates values
(lengths, times, ranges) and raises the typed errors the client re-raises.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Body(BaseModel):
    """Unknown fields are refused, and so are values of the wrong JSON type ("yes" or 1 for a flag)."""

    model_config = ConfigDict(extra="forbid", strict=True)


class Scoped(Body):
    user_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None

    def scope_args(self) -> tuple[str | None, str | None, str | None]:
        return self.user_id, self.agent_id, self.session_id


class Written(Body):
    """One text unit as a write gives it (``POST /v1/units``, an item of ``POST /v1/put``)."""

    text: str
    time: str | None = None
    speaker: str | None = None
    source_id: str | None = None
    metadata: dict[str, Any] | None = None
    supersedes: list[str] | None = None
    source: str | None = None  # user, assistant, tool, document, import, derived (None: user)
    trust: str | None = None  # trusted or untrusted (None: the source's default, capped by the key's max_trust)


class AddBody(Scoped, Written):
    allow_forgotten: bool = False


class Turn(Body):
    text: str
    speaker: str | None = None
    time: str | None = None
    id: str | None = None
    metadata: dict[str, Any] | None = None
    source: str | None = None  # None: from role (or a speaker that is a role), else user
    trust: str | None = None
    role: str | None = None  # user, assistant, tool ...: the turn's source kind when source is not given


class DialogueBody(Scoped):
    turns: list[Turn] = Field(max_length=100_000)
    restate: bool = False
    allow_forgotten: bool = False


class SearchBody(Scoped):
    query: str
    top_k: int | None = None
    theta: float | None = None
    budget: int | None = None
    include_superseded: bool = False
    as_of: str | None = None
    now: str | None = None
    planner: str | None = None  # none, offline or llm (None: the server's planner setting)
    min_trust: str | None = None  # only units at least this trusted (trusted, untrusted; None: every unit)


class AskBody(Scoped):
    question: str
    top_k: int | None = None
    budget: int | None = None
    instructions: str | None = None
    min_trust: str | None = None  # answer only from units at least this trusted (None: every unit)


class PutItem(Written):
    id: str | None = None  # a unit id of the caller's choosing: 32 hex digits (None: a fresh one)


class PutBody(Scoped):
    items: list[PutItem] = Field(max_length=256)  # one transaction (MAX_PUT)
    allow_forgotten: bool = False


class UpdateBody(Scoped):
    text: str | None = None
    time: str | None = None
    speaker: str | None = None
    reason: str | None = None


class TrustBody(Scoped):
    trust: str  # trusted or untrusted
    reason: str | None = None


class ForgetBody(Scoped):
    since: str | None = None
    until: str | None = None
    unit_ids: list[str] | None = None
    all: bool = False
    all_users: bool = False
    reason: str | None = None
    preview: bool = False


class SessionBody(Body):
    api_key: str


class ErrorBody(BaseModel):
    """Every error response: the OmnimemError class name and a message."""

    error: str
    message: str


class AddResultBody(BaseModel):
    id: str | None
    accepted: bool
    reason: str
    similarity: float | None = None
    duplicate_of: str | None = None


class SessionInfo(BaseModel):
    csrf_token: str | None
    role: str
    user_id: str | None
    agent_id: str | None


class FlushBody(Body):
    timeout: float = Field(10.0, ge=0, le=60, description="seconds to wait at most (the client repeats the call "
                                                         "for longer waits)")
