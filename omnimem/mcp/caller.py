"""Who calls an MCP tool, and what that caller may do.

An MCP server built by :func:`omnimem.mcp.create_mcp` asks its ``authorize``
callable, once per request, who is calling (given the bearer token on HTTP,
``None`` on stdio or in-process) and gets a :class:`Caller` back. The rules
are those of the HTTP API (``docs/http-api.md``):

- roles are ordered ``read`` < ``write`` < ``admin``: reads (search, ask, get,
  history, raw content, entities) need ``read``; add, update and delete need
  ``write``; forget needs ``admin``;
- a caller bound to a ``user_id`` (and optionally an ``agent_id``) acts only
  inside it: a scope field left out defaults to the caller's, another value is
  a :class:`~omnimem.errors.ScopeError`, and a unit outside it is not found
  (the library's scoped lookups say so without revealing that it exists);
- the audit log names the caller (``name``) as the actor of every change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from omnimem.errors import ConfigError, ForbiddenError, ScopeError
from omnimem.mau import TRUST_LEVELS

ROLES = ("read", "write", "admin")  # each role may do everything the ones before it may


class ScopeArgs(TypedDict):
    """The scope keywords of a facade call."""

    user_id: str | None
    agent_id: str | None
    session_id: str | None


@dataclass(frozen=True, slots=True)
class Caller:
    """One caller: the audit log's actor, its role, and the scope it is bound to (``None``: unbound).

    ``name`` is recorded verbatim as the actor (the server passes ``key:<key
    name>``). A caller with neither ``user_id`` nor ``agent_id`` may act on the
    whole store.
    """

    name: str
    role: str = "admin"
    user_id: str | None = None
    agent_id: str | None = None
    max_trust: str = "trusted"  # the highest trust its writes may have (an API key's max_trust)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ConfigError("a caller needs a non-empty name (it is recorded as the audit log's actor)")
        if self.role not in ROLES:
            raise ConfigError(f"unknown role {self.role!r}; use one of {', '.join(ROLES)}")
        if self.max_trust not in TRUST_LEVELS:
            raise ConfigError(f"unknown max_trust {self.max_trust!r}; use one of {', '.join(TRUST_LEVELS)}")
        for value, what in ((self.user_id, "user_id"), (self.agent_id, "agent_id")):
            if value is not None and (not isinstance(value, str) or not value):
                raise ConfigError(f"a caller's {what} must be a non-empty string or None")

    @property
    def bound(self) -> bool:
        """Whether this caller is confined to one user (and maybe one agent)."""
        return self.user_id is not None or self.agent_id is not None

    def require(self, role: str) -> None:
        """Raise :class:`ForbiddenError` unless this caller's role reaches ``role``."""
        if ROLES.index(self.role) < ROLES.index(role):
            raise ForbiddenError(f"{self.name} has the {self.role} role; this needs the {role} role")

    def scope(self, user_id: str | None, agent_id: str | None, session_id: str | None) -> ScopeArgs:
        """Scope keywords for a facade call: omitted fields default to the caller's; others are refused."""
        return {
            "user_id": self._field(user_id, self.user_id, "user_id"),
            "agent_id": self._field(agent_id, self.agent_id, "agent_id"),
            "session_id": session_id,
        }

    def require_unbound(self, what: str) -> None:
        """Raise :class:`ScopeError` for store-wide operations (``what``) asked by a bound caller."""
        if self.bound:
            raise ScopeError(f"{self.name} is bound to {self._where()}; {what} is for store-wide callers only")

    def _field(self, asked: str | None, own: str | None, what: str) -> str | None:
        if own is None or asked is None or asked == own:
            return own if asked is None else asked
        raise ScopeError(f"{self.name} is bound to {self._where()}; it cannot act for {what} {asked!r}")

    def _where(self) -> str:
        parts = [f"user_id {self.user_id!r}" if self.user_id else "",
                 f"agent_id {self.agent_id!r}" if self.agent_id else ""]
        return " and ".join(p for p in parts if p)
