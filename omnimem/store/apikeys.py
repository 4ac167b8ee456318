"""API keys of the HTTP server: created, checked, listed and revoked through the unit store.

Here, below the server, so that ``omnimem keys create`` works without the ``server``
extra (FastAPI); the server imports it from here too.

A key reads ``omk_<key_id>_<secret>``: ``key_id`` finds the stored record,
the secret (32 random bytes, url-safe) proves possession. The store keeps
only the SHA-256 of the whole key (:class:`omnimem.store.keys.ApiKey`); the
key itself is shown once, when it is created. Keys with a ``user_id`` (and
optionally an ``agent_id``) act only inside that scope; a store-wide key
(no ``user_id``) must be an admin key.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from datetime import datetime, timezone

from omnimem.errors import AuthError, InvalidInputError
from omnimem.contract.checks import clean_id
from omnimem.mau import TRUST_LEVELS, TRUSTED
from omnimem.store.base import KeyStore
from omnimem.store.keys import ROLES, ApiKey

PREFIX = "omk_"
_SHAPE = re.compile(r"omk_([0-9a-f]{16})_([A-Za-z0-9_-]{20,100})")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._@:-]{0,99}")


def digest(key: str) -> str:
    """The SHA-256 (hex) a key is stored as."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def create_key(store: KeyStore, *, name: str, role: str, user_id: str | None = None,
               agent_id: str | None = None, max_trust: str = TRUSTED) -> tuple[str, ApiKey]:
    """Make and store a new key; returns the key (shown once, never stored) and its record.

    ``max_trust`` is the highest trust the key's writes may have: a key limited to ``untrusted`` stores
    everything it writes as untrusted, and asking for ``trusted`` with it is a ForbiddenError (403)."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise InvalidInputError("a key name is 1-100 letters, digits, spaces or ._@:- (starting with a letter or digit)")
    if role not in ROLES:
        raise InvalidInputError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
    user, agent = clean_id(user_id, "user_id"), clean_id(agent_id, "agent_id")
    if user is None and role != "admin":
        raise InvalidInputError("a key without --user-id acts on the whole store and must have role admin")
    if user is None and agent is not None:
        raise InvalidInputError("an --agent-id key also needs a --user-id")
    if not isinstance(max_trust, str) or max_trust not in TRUST_LEVELS:
        raise InvalidInputError(f"max_trust must be one of {', '.join(TRUST_LEVELS)}, got {max_trust!r}")
    if any(k.name == name and k.active for k in store.list_keys()):
        raise InvalidInputError(f"an active key is already called {name!r}; revoke it or pick another name")
    key_id = secrets.token_hex(8)
    key = f"{PREFIX}{key_id}_{secrets.token_urlsafe(32)}"
    record = ApiKey(key_id, digest(key), name, role, user, agent, datetime.now(timezone.utc), max_trust=max_trust)
    store.put_key(record)
    return key, record


def check_key(store: KeyStore, presented: str) -> ApiKey:
    """The active key record ``presented`` proves; AuthError otherwise (the same message for every failure)."""
    match = _SHAPE.fullmatch(presented.strip()) if isinstance(presented, str) else None
    record = store.find_key(match.group(1)) if match else None
    if record is None or not hmac.compare_digest(record.key_hash, digest(presented.strip())):
        raise AuthError("invalid API key")
    if not record.active:
        raise AuthError("this API key was revoked")
    return record
