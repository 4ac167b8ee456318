"""Import cannot take over another scope's unit id, and keeps only actors the importing key may vouch for.

After bob deletes a unit, alice's import of a unit with that id is refused, so
bob's history of his unit stays his and alice's never shows bob's events.
Every refused id gets one answer (status, error class, message), whether it is
live in another scope, deleted there, or named only by another scope's audit
log: the import is no oracle for other scopes' ids. Over a real server on
loopback, on SQLite and on PostgreSQL, and at the facade on every engine.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest

from omnimem import Memory
from omnimem.errors import MalformedDataError, NotFoundError
from omnimem.store.apikeys import create_key
from tests.postgres_server import PostgresServer
from tests.server.conftest import KEYS, Served
from tests.serving import LiveServer

NDJSON = {"content-type": "application/x-ndjson"}
HEADER = {"kind": "header", "format": "omnimem-export", "version": 1}


def dump(*records: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in (HEADER, *records))


def unit(unit_id: str, user_id: str, text: str = "alice's own note", **fields: Any) -> dict[str, Any]:
    return {"kind": "unit", "id": unit_id, "text": text, "user_id": user_id, **fields}


def event(unit_id: str, user_id: str, actor: str, seq: int) -> dict[str, Any]:
    return {"kind": "event", "seq": seq, "time": datetime(2026, 1, 1, tzinfo=timezone.utc).isoformat(),
            "actor": actor, "action": "update", "unit_ids": [unit_id], "user_id": user_id, "agent_id": None,
            "session_id": None, "reason": f"restored {seq}", "details": {}}


@pytest.fixture(params=["sqlite", "postgresql"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Served]:
    """A live server with the keys of tests/server/conftest.py over a folder store or a PostgreSQL database."""
    if request.param == "sqlite":
        memory = Memory(tmp_path / "served-store", embedder="fake")
    else:
        postgres: PostgresServer = request.getfixturevalue("postgres")
        memory = Memory(url=postgres.fresh(), embedder="fake")
    served = Served(LiveServer(memory, rate_limit=None), memory)
    for name, spec in KEYS.items():
        served.keys[name], _ = create_key(memory.store, name=name, **spec)
    yield served
    for client in served.clients.values():
        client.close()
    served.live.stop()
    url = memory.url
    memory.close()
    if request.param == "postgresql" and url is not None:
        request.getfixturevalue("postgres").drop(url)


def _answer(response: httpx.Response, unit_id: str) -> tuple[int, str, str]:
    body = response.json()
    return response.status_code, body["error"], body["message"].replace(unit_id, "<id>")


def test_an_id_bob_deleted_cannot_be_imported_by_alice_and_bobs_history_stays_his(server: Served) -> None:
    bob, alice = server.client("bob"), server.client("alice")
    bob_id = bob.post("/v1/units", json={"text": "bob's plan", "session_id": "bob-s1"}).json()["id"]
    assert bob.request("DELETE", f"/v1/units/{bob_id}", params={"reason": "bob's private reason"}).status_code == 204
    before = bob.get(f"/v1/units/{bob_id}/history").json()["events"]
    assert [e["action"] for e in before] == ["add", "delete"]

    refused = alice.post("/v1/import", content=dump(unit(bob_id, "alice")), headers=NDJSON)
    assert _answer(refused, bob_id) == (
        400, "MalformedDataError", "record 2 (id <id>): this unit id cannot be imported here; give the unit another id")
    assert bob.get(f"/v1/units/{bob_id}/history").json()["events"] == before
    assert alice.get(f"/v1/units/{bob_id}/history").status_code == 404
    assert alice.get(f"/v1/units/{bob_id}").status_code == 404
    assert server.memory.count_units(user_id="alice") == 0  # nothing of the dump was stored

    own = alice.post("/v1/import", content=dump(unit("a1b2c3", "alice")), headers=NDJSON).json()
    assert own["stored"] == 1  # a free id imports as before
    assert all(e["user_id"] == "alice" for e in alice.get("/v1/units/a1b2c3/history").json()["events"])


def test_every_refused_id_gets_the_same_answer(server: Served) -> None:
    bob, alice, root = server.client("bob"), server.client("alice"), server.client("root")
    live = bob.post("/v1/units", json={"text": "bob's live unit"}).json()["id"]
    deleted = bob.post("/v1/units", json={"text": "bob's deleted unit"}).json()["id"]
    bob.request("DELETE", f"/v1/units/{deleted}")
    carol = root.post("/v1/units", json={"text": "carol's unit", "user_id": "carol"}).json()["id"]
    assert root.post("/v1/forget", json={"user_id": "carol"}).status_code == 200  # tombstones gone, the log stays
    bot = server.client("alice-bot").post("/v1/units", json={"text": "the bot's unit"}).json()["id"]
    server.client("alice-bot").request("DELETE", f"/v1/units/{bot}")  # alice's, but another agent's

    answers = {name: _answer(alice.post("/v1/import", content=dump(unit(uid, "alice")), headers=NDJSON), uid)
               for name, uid in {"live": live, "deleted": deleted, "only in the log": carol,
                                 "another agent's": bot}.items()}
    assert len(set(answers.values())) == 1, answers
    assert next(iter(answers.values()))[:2] == (400, "MalformedDataError")
    assert server.memory.count_units(user_id="alice", include_superseded=True) == 0


def test_bob_can_restore_his_own_deleted_unit_with_its_id(server: Served) -> None:
    bob = server.client("bob")
    bob_id = bob.post("/v1/units", json={"text": "bob's note to restore"}).json()["id"]
    bob.request("DELETE", f"/v1/units/{bob_id}")
    restored = bob.post("/v1/import", content=dump(unit(bob_id, "bob", "bob's note to restore")), headers=NDJSON,
                        params={"allow_forgotten": True})
    assert restored.json()["stored"] == 1
    assert [e["action"] for e in bob.get(f"/v1/units/{bob_id}/history").json()["events"]] == [
        "add", "delete", "import"]


def test_a_user_bound_admin_key_keeps_only_actors_inside_its_scope(server: Served) -> None:
    unit_id = server.client("alice").post("/v1/units", json={"text": "alice's unit with a past"}).json()["id"]
    claimed = ["key:root", "key:bob", "key:alice", "key:alice-bot", "local:root", "key:nobody"]
    records = [event(unit_id, "alice", actor, seq) for seq, actor in enumerate(claimed, 1)]
    summary = server.client("alice-admin").post("/v1/import", content=dump(*records), headers=NDJSON).json()
    assert summary["events"] == len(claimed)
    history = server.client("alice").get(f"/v1/units/{unit_id}/history").json()["events"]
    logged = {e["reason"]: e["actor"] for e in history if e["reason"]}
    assert logged == {"restored 1": "key:alice-admin", "restored 2": "key:alice-admin", "restored 3": "key:alice",
                      "restored 4": "key:alice-bot", "restored 5": "key:alice-admin",
                      "restored 6": "key:alice-admin"}
    assert not any(e["actor"] in ("key:root", "key:bob") for e in server.client("root").get("/v1/log").json()["events"])


def test_the_facade_refuses_a_deleted_id_of_another_user(mem: Memory) -> None:
    bob_id = mem.add("bob's secret", user_id="bob", session_id="s1").id
    mem.delete(bob_id, user_id="bob", reason="private")
    with pytest.raises(MalformedDataError, match="this unit id cannot be imported here"):
        mem.import_records([HEADER, unit(bob_id, "ann")])
    assert [e.action for e in mem.history(bob_id, user_id="bob")] == ["add", "delete"]
    with pytest.raises(NotFoundError):
        mem.history(bob_id, user_id="ann")
    assert mem.count_units(user_id="ann") == 0
