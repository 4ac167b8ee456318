"""Who is calling: an API key (``Authorization: Bearer``) or a console session cookie (+ CSRF).

Every route depends on :func:`reader`, :func:`writer` or :func:`admin`; they
authenticate the request, apply the key's rate limit and check its role.
A :class:`Principal` then binds the request's scope: omitted scope fields
default to the key's, a different user or agent is a :class:`ScopeError`.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, TypeVar

from fastapi import Depends, Request

from omnimem.store.apikeys import check_key
from omnimem.errors import AuthError, CsrfError, ForbiddenError, ScopeError
from omnimem.server.state import ServerState
from omnimem.store.keys import ROLES, ApiKey

T = TypeVar("T")
SESSION_COOKIE = "omnimem_session"
CSRF_HEADER = "X-CSRF-Token"
_SAFE_METHODS = ("GET", "HEAD")


@dataclass(frozen=True, slots=True)
class Principal:
    """The caller of one request: its role, the scope it is bound to, and the actor the audit log names."""

    role: str
    user_id: str | None
    agent_id: str | None
    actor: str | None  # None: the Memory's own actor (--no-auth)
    key_id: str | None = None
    csrf_token: str | None = None  # set when authenticated by a session cookie
    max_trust: str = "trusted"  # the highest trust the key's writes may have

    @property
    def store_wide(self) -> bool:
        return self.user_id is None

    def require(self, role: str) -> None:
        if ROLES.index(self.role) < ROLES.index(role):
            raise ForbiddenError(f"this key has role {self.role!r}; this call needs {role!r}")

    def require_store_wide(self, what: str) -> None:
        if not self.store_wide:
            raise ScopeError(f"{what} needs a store-wide admin key (this key is bound to user {self.user_id!r})")

    def scope(self, user_id: str | None = None, agent_id: str | None = None,
              session_id: str | None = None) -> dict[str, Any]:
        """Scope keyword arguments for the facade: the key's own where omitted, refused where different."""
        if self.user_id is not None:
            if user_id is not None and user_id != self.user_id:
                raise ScopeError("this key may not act for another user_id")
            user_id = self.user_id
        if self.agent_id is not None:
            if agent_id is not None and agent_id != self.agent_id:
                raise ScopeError("this key may not act for another agent_id")
            agent_id = self.agent_id
        return {"user_id": user_id, "agent_id": agent_id, "session_id": session_id}

    def session_body(self) -> dict[str, Any]:
        return {"csrf_token": self.csrf_token, "role": self.role, "user_id": self.user_id, "agent_id": self.agent_id}


NO_AUTH = Principal("admin", None, None, None)


def from_key(record: ApiKey, csrf_token: str | None = None) -> Principal:
    return Principal(record.role, record.user_id, record.agent_id, f"key:{record.name}", record.key_id, csrf_token,
                     record.max_trust)


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def state_of(request: Request) -> ServerState:
    state: ServerState = request.app.state.omnimem
    return state


def client_address(request: Request) -> str:
    return request.client.host if request.client else "?"


def authenticate(request: Request) -> Principal:
    """The request's principal (bearer key first, then the session cookie); rate-limited per key, and
    failed authentications throttled per client address."""
    state = state_of(request)
    if not state.auth:
        principal = NO_AUTH
    else:
        principal = throttled(request, state, lambda: _principal(request, state))
    if state.limiter is not None:
        state.limiter.take(principal.key_id or "no-auth")
    return principal


def throttled(request: Request, state: ServerState, attempt: Callable[[], T]) -> T:
    """Run an authentication ``attempt``; an AuthError counts against the client's address."""
    if state.auth_failures is None:
        return attempt()
    address = client_address(request)
    state.auth_failures.check(address)
    try:
        return attempt()
    except AuthError:
        state.auth_failures.failed(address)
        raise


def _principal(request: Request, state: ServerState) -> Principal:
    store = state.keys
    header = request.headers.get("authorization")
    if header is not None:
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise AuthError("send the API key as: Authorization: Bearer <key>")
        return from_key(check_key(store, token.strip()))
    cookie = request.cookies.get(SESSION_COOKIE)
    if not cookie:
        raise AuthError("missing API key: send Authorization: Bearer <key>, or log in at POST /v1/session "
                        "(an admin creates keys with `omnimem keys create --name NAME --role ROLE --store PATH`)")
    session = store.find_session(token_digest(cookie))
    if session is None or session.expires_at <= datetime.now(timezone.utc):
        raise AuthError("the session has ended; log in again")
    record = store.find_key(session.key_id)
    if record is None or not record.active:
        raise AuthError("the key behind this session was revoked")
    if request.method not in _SAFE_METHODS:
        sent = request.headers.get(CSRF_HEADER, "")
        if not hmac.compare_digest(sent.encode("utf-8"), session.csrf_token.encode("utf-8")):
            raise CsrfError(f"a cookie-authenticated {request.method} needs the {CSRF_HEADER} header of the session")
    return from_key(record, session.csrf_token)


# The role checks are ``async``: they only compare strings, and FastAPI runs every sync dependency in a
# thread of its own (a hand-off to the pool and back per dependency, per request).
async def reader(principal: Principal = Depends(authenticate)) -> Principal:
    principal.require("read")
    return principal


async def writer(principal: Principal = Depends(authenticate)) -> Principal:
    principal.require("write")
    return principal


async def admin(principal: Principal = Depends(authenticate)) -> Principal:
    principal.require("admin")
    return principal
