"""``POST /v1/put`` (the framework stores' write), a unit's full text, and the trust floor of ``POST /v1/ask``."""

from __future__ import annotations

from omnimem.store.apikeys import create_key
from tests.server.conftest import Served


def test_a_put_is_stored_in_the_keys_scope_and_capped_by_its_trust(served: Served) -> None:
    alice = served.client("alice")
    done = alice.post("/v1/put", json={"items": [{"text": "yes", "source_id": "t1"},  # into the key's own user
                                                 {"text": "yes", "source_id": "t2", "source": "tool"}]})
    assert done.status_code == 200, done.text
    other = alice.post("/v1/put", json={"items": [{"text": "x"}], "user_id": "bob"})
    assert other.status_code == 403 and other.json()["error"] == "ScopeError"
    units = {u.source_ids[0]: u for u in served.memory.units(user_id="alice")}
    assert {k: (u.trust, u.surface, u.actor) for k, u in units.items()} == {
        "t1": ("trusted", "http", "key:alice"), "t2": ("untrusted", "http", "key:alice")}
    served.keys["scraper"], _ = create_key(served.memory.store, name="scraper", role="write", user_id="alice",
                                           max_trust="untrusted")
    refused = served.client("scraper").post("/v1/put", json={"items": [{"text": "fine", "source_id": "t3"},
                                                                      {"text": "obey", "trust": "trusted"}]})
    assert refused.status_code == 403 and refused.json()["error"] == "ForbiddenError"
    assert served.memory.count_units(user_id="alice") == 2  # nothing of the refused call
    reader = served.client("alice-reader").post("/v1/put", json={"items": [{"text": "x"}]})
    assert reader.status_code == 403


def test_a_put_cannot_replace_another_users_unit_or_take_its_id(served: Served) -> None:
    bobs = served.memory.add("bob's note", user_id="bob").id
    alice = served.client("alice")
    replaced = alice.post("/v1/put", json={"items": [{"text": "mine now", "supersedes": [bobs]}]})
    taken = alice.post("/v1/put", json={"items": [{"text": "mine now", "id": bobs}]})
    assert replaced.status_code == 404 and taken.json()["error"] == "StoreError"
    assert served.memory.get(bobs).superseded_by is None and served.memory.count_units(user_id="alice") == 0
    too_many = alice.post("/v1/put", json={"items": [{"text": f"n{i}"} for i in range(257)]})
    assert too_many.status_code == 422


def test_the_remote_facade_reads_a_units_full_text(served: Served) -> None:
    long = " ".join(f"word{i}" for i in range(3000))
    with served.remote("alice") as remote:
        unit_id = remote.add(long).id
        assert remote.full_text(unit_id) == long
        assert served.client("alice").get(f"/v1/units/{unit_id}").json()["full_text"] == long


def test_ask_takes_a_trust_floor_over_http(served: Served) -> None:
    alice = served.client("alice")
    alice.post("/v1/units", json={"text": "my kayak is red"})
    alice.post("/v1/units", json={"text": "kayak shop: every kayak is blue", "source": "tool"})
    every = alice.post("/v1/ask", json={"question": "what colour is the kayak?"}).json()
    assert {h["unit"]["trust"] for h in every["context"]["hits"]} == {"trusted", "untrusted"}
    floor = alice.post("/v1/ask", json={"question": "what colour is the kayak?", "min_trust": "trusted"}).json()
    assert [h["unit"]["summary"] for h in floor["context"]["hits"]] == ["my kayak is red"]
    bad = alice.post("/v1/ask", json={"question": "kayak?", "min_trust": "high"})
    assert bad.status_code == 400 and "min_trust" in bad.json()["message"]
