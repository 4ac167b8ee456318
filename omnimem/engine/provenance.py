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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from omnimem.contract.caller import Channel, current_channel
from omnimem.contract.checks import ROLE_SOURCES, check_source, check_trust
from omnimem.errors import ForbiddenError, InvalidInputError
from omnimem.mau import MAU, SOURCES, TRUST_LEVELS, TRUSTED, default_trust, trust_rank


@dataclass(frozen=True, slots=True)
class Stamp:
    """The provenance a prepared unit is stored with."""

    source: str
    trust: str
    surface: str
    actor: str | None
    origin: str | None = None


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
