"""Where a write came from and how far it is trusted: the surface, the actor, the source kind, the trust.

A surface (the HTTP routes, the MCP tools, the CLI, an integration) says how
its calls arrive with :func:`writing_via`, in the thread that calls the
facade, and names the highest trust its caller may write (an API key's
``max_trust``). The write path then stamps every unit it prepares
(:func:`stamp`): its source kind (``user`` unless the caller says otherwise;
a dialogue turn's from its role), its trust (the source kind's default
(:func:`omnimem.mau.default_trust`), capped by the caller's limit; a trust
the caller names above that limit is a :class:`ForbiddenError`), the surface
(``python`` outside any) and the audit actor. An import is always stamped
``source="import"``, whatever its file claims (:func:`imported`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from omnimem.errors import ForbiddenError, InvalidInputError
from omnimem.mau import MAU, SOURCES, TRUST_LEVELS, TRUSTED, default_trust, trust_rank

SURFACES = ("python", "cli", "http", "mcp", "import")  # and "integration:<name>"
ROLE_SOURCES = {"user": "user", "human": "user", "assistant": "assistant", "ai": "assistant", "tool": "tool",
                "function": "tool"}  # a turn's role (or a speaker that is one) -> its source kind


@dataclass(frozen=True, slots=True)
class Channel:
    """How the current call arrived and the highest trust its caller may write."""

    surface: str
    max_trust: str = TRUSTED


@dataclass(frozen=True, slots=True)
class Stamp:
    """The provenance a prepared unit is stored with."""

    source: str
    trust: str
    surface: str
    actor: str | None
    origin: str | None = None


_CHANNEL: ContextVar[Channel | None] = ContextVar("omnimem_channel", default=None)


@contextmanager
def writing_via(surface: str, max_trust: str = TRUSTED) -> Iterator[None]:
    """Within this block (this thread or task) writes arrive through ``surface``, capped at ``max_trust``."""
    check_surface(surface)
    token = _CHANNEL.set(Channel(surface, check_trust(max_trust, "max_trust")))
    try:
        yield
    finally:
        _CHANNEL.reset(token)


def current_channel() -> Channel | None:
    """The channel set by :func:`writing_via` here (None outside one: a direct Python call)."""
    return _CHANNEL.get()


def check_surface(surface: object) -> str:
    if not isinstance(surface, str) or not (surface in SURFACES or (
            surface.startswith("integration:") and 12 < len(surface) <= 64)):
        raise InvalidInputError(f"surface must be one of {', '.join(SURFACES)} or integration:<name>, got {surface!r}")
    return surface


def check_source(value: object, what: str = "source") -> str | None:
    """A source kind as a caller gave it (None: the default)."""
    if value is None:
        return None
    if not isinstance(value, str) or value not in SOURCES:
        raise InvalidInputError(f"{what} must be one of {', '.join(SOURCES)}, got {value!r}")
    return value


def check_trust(value: object, what: str = "trust") -> str:
    if not isinstance(value, str) or value not in TRUST_LEVELS:
        raise InvalidInputError(f"{what} must be one of {', '.join(TRUST_LEVELS)}, got {value!r}")
    return value


def check_floor(value: object) -> str | None:
    """A search's ``min_trust`` (None: every unit)."""
    return None if value is None else check_trust(value, "min_trust")


def turn_source(turn: Mapping[str, Any], index: int) -> str | None:
    """A dialogue turn's source kind: its ``source``, else from its ``role`` (or a speaker that is a role)."""
    source = check_source(turn.get("source"), f"turn {index}: source")
    if source is not None:
        return source
    role = turn.get("role")
    if role is not None:
        if not isinstance(role, str):
            raise InvalidInputError(f"turn {index}: role must be a string")
        return ROLE_SOURCES.get(role.strip().lower())
    speaker = turn.get("speaker")
    return ROLE_SOURCES.get(speaker.strip().lower()) if isinstance(speaker, str) else None


def stamp(source: str | None, trust: str | None, actor: str | None) -> Stamp:
    """The provenance of a write in the current channel: ``source`` and ``trust`` as the caller gave them."""
    channel = current_channel() or Channel("python")
    kind = source or "user"
    cap = trust_rank(channel.max_trust)
    if trust is not None:
        if trust_rank(trust) > cap:
            raise ForbiddenError(f"this key may write memories up to trust {channel.max_trust!r}, not {trust!r}")
        level = trust
    else:
        level = TRUST_LEVELS[min(trust_rank(default_trust(kind)), cap)]
    return Stamp(kind, level, channel.surface, actor)


def imported(claimed: object, trust: str | None, actor: str | None) -> Stamp:
    """The provenance of an imported unit: source ``import`` on surface ``import`` whatever the file says;
    the source kind it claims is kept as its ``origin`` (when it is one)."""
    base = stamp("import", trust, actor)
    origin = claimed if isinstance(claimed, str) and claimed in SOURCES else None
    return Stamp("import", base.trust, "import", actor, origin)


def derived(sources: Sequence[Stamp | None], actor: str | None) -> Stamp:
    """The provenance of a note derived from ``sources`` (a restatement of turns): source ``derived``, trusted no
    more than the least trusted of them, on the surface they arrived by."""
    known = [s for s in sources if s is not None]
    trust = TRUST_LEVELS[min((trust_rank(s.trust) for s in known), default=trust_rank(TRUSTED))]
    return Stamp("derived", trust, known[0].surface if known else "python", actor)


def stamp_of(unit: MAU | None) -> Stamp | None:
    """A stored unit's provenance as a stamp (None for None)."""
    if unit is None:
        return None
    return Stamp(unit.source, unit.trust, unit.surface or "python", unit.actor, unit.origin)


def turn_stamp(turn: Mapping[str, Any], index: int, actor: str | None) -> Stamp:
    """A dialogue turn's provenance: its ``source`` (or role) and ``trust``, in the current channel."""
    trust = turn.get("trust")
    checked = None if trust is None else check_trust(trust, f"turn {index}: trust")
    try:
        return stamp(turn_source(turn, index), checked, actor)
    except ForbiddenError as exc:
        raise ForbiddenError(f"turn {index}: {exc}") from None


def kept(unit: MAU, actor: str | None) -> Stamp:
    """The provenance of a new version of ``unit`` (an update): its source kind and origin, its trust capped by
    the current channel's limit, written through the current channel by ``actor``."""
    channel = current_channel() or Channel("python")
    trust = TRUST_LEVELS[min(trust_rank(unit.trust), trust_rank(channel.max_trust))]
    return Stamp(unit.source, trust, channel.surface, actor, unit.origin)
