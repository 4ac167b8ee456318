"""An import is no oracle for ids that come from outside: a mem0 memory gets a fresh omnimem id (mem0's id is
its source id), so bob importing a memory with the id of one alice imported gets the answer a fresh id gets,
and no import of his can tell whether alice (or anyone) holds that mem0 id. Over a real server on loopback,
on SQLite and on PostgreSQL, with the real remote client."""

from __future__ import annotations

import json
from typing import Any

from tests.server.conftest import Served
from tests.server.test_import_takeover import server  # noqa: F401 - the live server on SQLite and PostgreSQL

SHARED = "3fa85f64-5717-4562-b3fc-2c963f66afa6"
FRESH = "9b2c1d0e-8f7a-4b6c-9d5e-4f3a2b1c0d9e"


def memory(mem0_id: str, user: str, text: str) -> dict[str, Any]:
    return {"id": mem0_id, "memory": text, "user_id": user, "created_at": "2025-03-01T10:00:00+00:00"}


def test_bob_cannot_learn_that_alice_imported_a_mem0_id(server: Served) -> None:  # noqa: F811
    alice, bob = server.remote("alice"), server.remote("bob")
    assert alice.import_mem0([memory(SHARED, "alice", "Alice takes insulin twice a day")])["stored"] == 1
    held = bob.import_mem0([memory(SHARED, "bob", "Bob likes jazz")])  # was a 400 "cannot be imported here"
    fresh = bob.import_mem0([memory(FRESH, "bob", "Bob likes blues")])
    assert held == fresh == {"units": 1, "stored": 1, "skipped": 0, "forgotten": 0, "events": 0}
    mine = alice.units()[0]
    assert mine.id != SHARED and mine.source_ids == (SHARED,)
    raw = [{"kind": "header", "format": "omnimem-export", "version": 1},
           {"kind": "unit", "id": SHARED, "text": "Bob's probe", "user_id": "bob"}]
    probe = server.client("bob").post("/v1/import", content="".join(json.dumps(r) + "\n" for r in raw),
                                      headers={"content-type": "application/x-ndjson"})
    assert probe.status_code == 200 and probe.json()["stored"] == 1  # alice's unit never had mem0's id

    assert [(u.summary, u.user_id) for u in alice.units()] == [("Alice takes insulin twice a day", "alice")]
    assert alice.get(mine.id).summary == "Alice takes insulin twice a day"
    assert alice.import_mem0([memory(SHARED, "alice", "Alice takes insulin twice a day")])["stored"] == 0
    assert {u.summary for u in bob.units()} == {"Bob likes jazz", "Bob likes blues", "Bob's probe"}
    alice.close()
    bob.close()
