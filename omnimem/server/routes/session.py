"""Console login: ``POST /v1/session`` trades an API key for an HttpOnly session cookie and a CSRF token."""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta, timezone
from typing import Any

from fastapi import APIRouter, Depends, Request, Response

from omnimem.store.apikeys import check_key
from omnimem.errors import AuthError
from omnimem.server.auth import (SESSION_COOKIE, Principal, authenticate, client_address, from_key, state_of,
                                 throttled, token_digest)
from omnimem.server.errors import ERROR_RESPONSES
from omnimem.server.models import SessionBody, SessionInfo
from omnimem.store.keys import ApiSession

router = APIRouter(prefix="/v1/session", tags=["session"], responses=ERROR_RESPONSES)


@router.post("", response_model=SessionInfo)
def login(body: SessionBody, request: Request, response: Response) -> dict[str, Any]:
    """Log in with an API key: sets the ``omnimem_session`` cookie and returns the CSRF token."""
    state = state_of(request)
    if state.limiter is not None:  # guessing keys costs tokens like any request
        state.limiter.take(f"login:{client_address(request)}")
    if not state.auth:
        raise AuthError("this server runs with --no-auth: no login is needed (GET /v1/session)")
    record = throttled(request, state, lambda: check_key(state.keys, body.api_key))
    token, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    expires = datetime.now(timezone.utc) + timedelta(seconds=state.session_ttl)
    state.keys.put_session(ApiSession(token_digest(token), record.key_id, csrf, expires))
    response.set_cookie(SESSION_COOKIE, token, max_age=int(state.session_ttl), httponly=True, samesite="strict",
                        path="/", secure=request.url.scheme == "https")
    return from_key(record, csrf).session_body()


@router.get("", response_model=SessionInfo)
def whoami(principal: Principal = Depends(authenticate)) -> dict[str, Any]:
    """The logged-in key's role and scope, and the session's CSRF token (401 when not logged in)."""
    return principal.session_body()


@router.delete("", status_code=204)
def logout(request: Request, principal: Principal = Depends(authenticate)) -> Response:
    """End the session (needs the CSRF header like every cookie-authenticated write)."""
    cookie = request.cookies.get(SESSION_COOKIE)
    if cookie:
        state_of(request).keys.drop_session(token_digest(cookie))
    response = Response(status_code=204)
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
    return response
