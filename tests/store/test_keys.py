"""The API-key and session contract of the unit store (every backend): hashed keys, revocation, sessions."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from omnimem.store.apikeys import check_key, create_key, digest
from omnimem.errors import AuthError, InvalidInputError
from omnimem.store.keys import ApiKey, ApiSession
from tests.store.conftest import Backend


def test_keys_are_stored_hashed_found_listed_and_revoked(backend: Backend) -> None:
    store = backend.store
    key, record = create_key(store, name="ann-bot", role="write", user_id="ann", agent_id="bot")
    assert record.key_hash == digest(key) and key not in repr(record)
    assert store.find_key(record.key_id) == record
    assert store.find_key("0" * 16) is None
    other, _ = create_key(store, name="root", role="admin")
    assert [k.name for k in store.list_keys()] == ["ann-bot", "root"]
    assert check_key(store, key) == record and check_key(store, other).user_id is None
    assert store.revoke_key(record.key_id) is True
    assert store.revoke_key(record.key_id) is False  # already revoked
    assert store.find_key(record.key_id).revoked_at is not None  # type: ignore[union-attr]
    with pytest.raises(AuthError, match="revoked"):
        check_key(store, key)


@pytest.mark.parametrize("bad", ["", "omk_", "omk_zz_secret", "Bearer x", "omk_" + "0" * 16 + "_" + "a" * 43])
def test_unknown_or_malformed_keys_are_one_auth_error(backend: Backend, bad: str) -> None:
    create_key(backend.store, name="someone", role="read", user_id="u")
    with pytest.raises(AuthError, match="invalid API key"):
        check_key(backend.store, bad)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"name": "x", "role": "owner", "user_id": "u"}, "role must be"),
    ({"name": "x", "role": "write"}, "must have role admin"),
    ({"name": "x", "role": "admin", "agent_id": "a"}, "needs a --user-id"),
    ({"name": "", "role": "read", "user_id": "u"}, "key name"),
    ({"name": "a/b\n", "role": "read", "user_id": "u"}, "key name"),
])
def test_bad_key_requests_store_nothing(backend: Backend, kwargs: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        create_key(backend.store, **kwargs)  # type: ignore[arg-type]
    assert backend.store.list_keys() == []


def test_an_active_name_is_unique(backend: Backend) -> None:
    create_key(backend.store, name="dup", role="read", user_id="u")
    with pytest.raises(InvalidInputError, match="already called"):
        create_key(backend.store, name="dup", role="read", user_id="v")


def test_sessions_map_a_token_hash_to_a_key_and_end_with_it(backend: Backend) -> None:
    store = backend.store
    _, record = create_key(store, name="console", role="read", user_id="u")
    later = datetime.now(timezone.utc) + timedelta(hours=1)
    session = ApiSession("t" * 64, record.key_id, "csrf", later)
    store.put_session(session)
    assert store.find_session("t" * 64) == session
    store.drop_session("t" * 64)
    assert store.find_session("t" * 64) is None
    store.put_session(session)
    store.put_session(ApiSession("e" * 64, record.key_id, "c2", datetime.now(timezone.utc) - timedelta(1)))
    store.put_session(ApiSession("f" * 64, record.key_id, "c3", later))  # expired ones are dropped on the way
    assert store.find_session("e" * 64) is None
    store.revoke_key(record.key_id)
    assert store.find_session("t" * 64) is None and store.find_session("f" * 64) is None


def test_api_key_to_dict_has_no_hash() -> None:
    key = ApiKey("id", "hash", "n", "read", "u", None, datetime(2024, 1, 1, tzinfo=timezone.utc))
    assert "hash" not in key.to_dict() and key.to_dict()["created_at"] == "2024-01-01T00:00:00+00:00"
