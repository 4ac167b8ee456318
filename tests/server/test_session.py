"""Console login: an API key traded for an HttpOnly session cookie; writes need the CSRF token."""

from __future__ import annotations

from pathlib import Path

import httpx

from omnimem.server.auth import SESSION_COOKIE
from tests.serving import LiveServer
from tests.server.conftest import Served


def _login(served: Served, who: str) -> tuple[httpx.Client, str, httpx.Response]:
    client = served.clients.setdefault(f"console:{who}", httpx.Client(base_url=served.url))  # closed with the server
    response = client.post("/v1/session", json={"api_key": served.keys[who]})
    assert response.status_code == 200, response.text
    return client, response.json()["csrf_token"], response


def test_login_sets_a_strict_http_only_cookie_that_is_not_the_key(served: Served) -> None:
    client, csrf, response = _login(served, "alice")
    assert response.json() == {"csrf_token": csrf, "role": "write", "user_id": "alice", "agent_id": None}
    cookie = response.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
    token = client.cookies[SESSION_COOKIE]
    assert served.keys["alice"] not in cookie and token not in served.keys["alice"]
    assert client.get("/v1/session").json() == response.json()


def test_cookie_writes_need_the_csrf_token(served: Served) -> None:
    client, csrf, _ = _login(served, "alice")
    refused = client.post("/v1/units", json={"text": "a forged cross-site write"})
    assert refused.status_code == 403 and refused.json()["error"] == "CsrfError"
    wrong = client.post("/v1/units", json={"text": "a forged write"}, headers={"X-CSRF-Token": csrf[:-2] + "xx"})
    assert wrong.status_code == 403 and wrong.json()["error"] == "CsrfError"
    assert served.memory.count_units() == 0
    assert client.get("/v1/units").status_code == 200  # reads need no token
    stored = client.post("/v1/units", json={"text": "written from the console"}, headers={"X-CSRF-Token": csrf})
    assert stored.status_code == 201
    assert served.memory.history(stored.json()["id"])[0].actor == "key:alice"
    assert stored.json()["id"] in {u.id for u in served.memory.units(user_id="alice")}


def test_logout_needs_the_token_and_ends_the_session(served: Served) -> None:
    client, csrf, _ = _login(served, "alice")
    assert client.delete("/v1/session").json()["error"] == "CsrfError"
    assert client.delete("/v1/session", headers={"X-CSRF-Token": csrf}).status_code == 204
    assert client.get("/v1/session").status_code == 401
    cookie = {SESSION_COOKIE: "stolen-" + csrf}
    assert httpx.get(f"{served.url}/v1/units", cookies=cookie).json()["error"] == "AuthError"


def test_revoking_the_key_ends_its_sessions(served: Served) -> None:
    client, _, _ = _login(served, "bob")
    served.memory.store.revoke_key(served.keys["bob"].split("_")[1])
    assert client.get("/v1/units").status_code == 401


def test_a_bad_key_does_not_log_in(served: Served) -> None:
    response = httpx.post(f"{served.url}/v1/session", json={"api_key": "omk_bad"})
    assert response.status_code == 401 and SESSION_COOKIE not in response.headers.get("set-cookie", "")
    assert httpx.get(f"{served.url}/v1/session").status_code == 401


def test_sessions_are_shared_by_every_server_process_of_a_store(served: Served, tmp_path: Path) -> None:
    from omnimem import Memory

    client, csrf, _ = _login(served, "alice")
    with Memory(tmp_path / "served-store", embedder="fake") as second_worker:
        other = LiveServer(second_worker, rate_limit=None)
        try:
            token = client.cookies[SESSION_COOKIE]
            response = httpx.post(f"{other.url}/v1/units", json={"text": "through the second worker"},
                                  cookies={SESSION_COOKIE: token}, headers={"X-CSRF-Token": csrf})
            assert response.status_code == 201, response.text
        finally:
            other.stop()


def test_without_auth_the_session_is_a_store_wide_admin(tmp_path: Path) -> None:
    from omnimem import Memory

    with Memory(embedder="fake") as memory:
        live = LiveServer(memory, auth=False, rate_limit=None)
        try:
            assert httpx.get(f"{live.url}/v1/session").json() == {
                "csrf_token": None, "role": "admin", "user_id": None, "agent_id": None}
            assert httpx.post(f"{live.url}/v1/session", json={"api_key": "x"}).status_code == 401
            assert httpx.post(f"{live.url}/v1/units", json={"text": "no key needed"}).status_code == 201
        finally:
            live.stop()


def test_an_expired_session_is_refused(tmp_path: Path) -> None:
    import time

    from tests.server.conftest import start, stop

    served = start(tmp_path, session_ttl=1.0)
    try:
        client, _, _ = _login(served, "alice")
        token = client.cookies[SESSION_COOKIE]
        assert httpx.get(f"{served.url}/v1/session", cookies={SESSION_COOKIE: token}).status_code == 200
        time.sleep(1.5)  # the browser would drop the cookie; the server must refuse it anyway
        late = httpx.get(f"{served.url}/v1/session", cookies={SESSION_COOKIE: token})
        assert late.status_code == 401 and late.json()["error"] == "AuthError"
    finally:
        stop(served)
