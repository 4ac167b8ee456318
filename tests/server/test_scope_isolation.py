"""A key bound to a user (or a user and an agent) never reads, writes, exports or forgets outside it.

Bob's key against Alice's data, route by route: a different scope asked for
explicitly is 403 ScopeError; a unit of hers named by id is 404 (its
existence is not revealed); what his key lists, searches or exports by
default holds nothing of hers. Nothing of hers changes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from omnimem import NotFoundError
from omnimem.errors import AuthError, ForbiddenError, ScopeError
from tests.conftest import clear_user_settings
from tests.server.conftest import Served, png, start, stop


def _error(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.json()["error"] == code


def build_world(served: Served) -> dict[str, Any]:
    """Alice has two notes (one by her bot) and an image; Bob has one note."""
    alice, bot, bob = served.client("alice"), served.client("alice-bot"), served.client("bob")
    ids = {
        "alice": alice.post("/v1/units", json={"text": "alice likes green tea in the morning"}).json()["id"],
        "alice_bot": bot.post("/v1/units", json={"text": "the bot reminded alice about her dentist"}).json()["id"],
        "alice_image": alice.post("/v1/images", files={"file": ("tea.png", png(1))},
                                  data={"caption": "a cup of green tea"}).json()["id"],
        "bob": bob.post("/v1/units", json={"text": "bob likes black coffee with green tea biscuits"}).json()["id"],
    }
    assert all(ids.values())
    return ids


@pytest.fixture
def world(served: Served) -> dict[str, Any]:
    return build_world(served)


def _units(served: Served) -> list[dict[str, Any]]:
    """Every unit record of the store (root's export), to check a refused request changed nothing."""
    exported = served.client("root").get("/v1/export", params={"all": "true"}).raise_for_status()
    return [r for r in map(json.loads, exported.text.splitlines()) if r["kind"] == "unit"]


@pytest.fixture(scope="module")
def _shared_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, dict[str, Any]]]:
    """One server and world for the tests whose requests are all refused (one start instead of one per test)."""
    with pytest.MonkeyPatch.context() as patch:
        clear_user_settings(patch, tmp_path_factory)
        shared = start(tmp_path_factory.mktemp("scope-isolation"))
        try:
            yield shared, build_world(shared)
        finally:
            stop(shared)


@pytest.fixture
def refused(_shared_world: tuple[Served, dict[str, Any]]) -> Iterator[tuple[Served, dict[str, Any]]]:
    """The shared server and world; after the test, every unit must be as before (nothing leaks to the next)."""
    served, _ = _shared_world
    before = _units(served)
    assert len(before) == 4  # alice's three and bob's one
    yield _shared_world
    assert _units(served) == before, "a refused request changed the shared store"


def _alice_unchanged(served: Served, ids: dict[str, Any]) -> None:
    for key in ("alice", "alice_bot", "alice_image"):
        assert served.memory.get(ids[key], user_id="alice").id == ids[key]


SCOPED_READS = [  # (method, path, query/body) naming Alice's scope explicitly
    ("POST", "/v1/search", {"json": {"query": "tea", "user_id": "alice"}}),
    ("POST", "/v1/ask", {"json": {"question": "what tea?", "user_id": "alice"}}),
    ("GET", "/v1/units", {"params": {"user_id": "alice"}}),
    ("GET", "/v1/log", {"params": {"user_id": "alice"}}),
    ("GET", "/v1/export", {"params": {"user_id": "alice"}}),
    ("GET", "/v1/entities", {"params": {"user_id": "alice"}}),
    ("GET", "/v1/entities/alice", {"params": {"user_id": "alice"}}),
    ("GET", "/v1/entities/alice/neighbors", {"params": {"user_id": "alice"}}),
    ("POST", "/v1/units", {"json": {"text": "bob writes into alice", "user_id": "alice"}}),
    ("POST", "/v1/dialogues", {"json": {"turns": [{"text": "hi"}], "user_id": "alice"}}),
    ("POST", "/v1/images", {"files": {"file": ("x.png", png(2))}, "data": {"user_id": "alice"}}),
]


@pytest.mark.parametrize(("method", "path", "kwargs"), SCOPED_READS, ids=[f"{m} {p}" for m, p, _ in SCOPED_READS])
def test_another_users_scope_is_refused_on_every_route(refused: tuple[Served, dict[str, Any]], method: str,
                                                       path: str, kwargs: dict[str, Any]) -> None:
    served, world = refused
    _error(served.client("bob").request(method, path, **kwargs), 403, "ScopeError")
    _alice_unchanged(served, world)
    assert served.memory.count_units(user_id="alice") == 3


BY_ID = [
    ("GET", "/v1/units/{id}", {}),
    ("GET", "/v1/units/{id}/raw", {}),
    ("GET", "/v1/units/{id}/history", {}),
    ("PATCH", "/v1/units/{id}", {"json": {"text": "bob rewrites alice's memory"}}),
    ("DELETE", "/v1/units/{id}", {}),
]


@pytest.mark.parametrize(("method", "path", "kwargs"), BY_ID, ids=[f"{m} {p}" for m, p, _ in BY_ID])
@pytest.mark.parametrize("target", ["alice", "alice_image"])
def test_another_users_unit_by_id_is_not_found(refused: tuple[Served, dict[str, Any]], method: str, path: str,
                                               kwargs: dict[str, Any], target: str) -> None:
    served, world = refused
    response = served.client("bob").request(method, path.format(id=world[target]), **kwargs)
    missing = served.client("bob").request(method, path.format(id="no-such-unit"), **kwargs)
    _error(response, 404, "NotFoundError")
    assert response.json()["message"].replace(world[target], "X") == missing.json()["message"].replace(
        "no-such-unit", "X")  # the same answer as for an id that does not exist
    _alice_unchanged(served, world)


def test_what_a_key_sees_by_default_is_its_own_scope(served: Served, world: dict[str, Any]) -> None:
    bob = served.client("bob")
    hits = bob.post("/v1/search", json={"query": "green tea", "top_k": 50}).json()["hits"]
    assert [h["unit"]["id"] for h in hits] == [world["bob"]]
    assert [u["id"] for u in bob.get("/v1/units").json()["units"]] == [world["bob"]]
    assert {e["user_id"] for e in bob.get("/v1/log").json()["events"]} == {"bob"}
    exported = [json.loads(line) for line in bob.get("/v1/export").text.splitlines()]
    assert {r["id"] for r in exported if r["kind"] == "unit"} == {world["bob"]}
    assert not any(world["alice"] in json.dumps(r) for r in exported)
    assert bob.get("/v1/stats").json()["units"] == 1
    assert served.client("alice").get("/v1/stats").json()["units"] == 3


def test_an_agent_bound_key_stays_inside_its_agent(served: Served, world: dict[str, Any]) -> None:
    bot = served.client("alice-bot")
    _error(bot.post("/v1/search", json={"query": "tea", "agent_id": "other"}), 403, "ScopeError")
    _error(bot.get(f"/v1/units/{world['alice']}"), 404, "NotFoundError")  # alice's own note: not the bot's
    assert [u["id"] for u in bot.get("/v1/units").json()["units"]] == [world["alice_bot"]]


def test_superseding_another_users_unit_is_not_found(served: Served, world: dict[str, Any]) -> None:
    response = served.client("bob").post("/v1/units", json={"text": "correction", "supersedes": [world["alice"]]})
    _error(response, 404, "NotFoundError")
    assert served.memory.get(world["alice"]).superseded_by is None


def test_forget_stays_inside_the_keys_scope(served: Served, world: dict[str, Any]) -> None:
    admin = served.client("alice-admin")
    _error(admin.post("/v1/forget", json={"user_id": "bob"}), 403, "ScopeError")
    _error(admin.post("/v1/forget", json={"all": True}), 403, "ScopeError")
    _error(admin.post("/v1/forget", json={"all_users": True, "since": "2000-01-01"}), 403, "ScopeError")
    _error(admin.get("/v1/export", params={"all": "true"}), 403, "ScopeError")
    preview = admin.post("/v1/forget", json={"unit_ids": [world["bob"]], "preview": True}).json()
    assert preview == {"units": [], "count": 0}
    assert admin.post("/v1/forget", json={"unit_ids": [world["bob"], world["alice"]]}).json() == {"forgotten": 1}
    assert served.memory.get(world["bob"]).id == world["bob"]
    with pytest.raises(NotFoundError):
        served.memory.get(world["alice"])


def test_import_of_another_users_records_is_refused_whole(served: Served, world: dict[str, Any]) -> None:
    dump = served.client("alice").get("/v1/export").text
    foreign = dump.replace('"alice"', '"carol"')
    response = served.client("bob").post("/v1/import", content=foreign,
                                         headers={"content-type": "application/x-ndjson"})
    _error(response, 403, "ScopeError")
    assert served.memory.count_units(user_id="carol") == 0


def test_write_routes_need_a_write_key(served: Served, world: dict[str, Any]) -> None:
    reader = served.client("alice-reader")
    refused = [
        reader.post("/v1/units", json={"text": "a reader cannot write"}),
        reader.post("/v1/dialogues", json={"turns": [{"text": "nor this"}]}),
        reader.post("/v1/images", files={"file": ("x.png", png(3))}),
        reader.patch(f"/v1/units/{world['alice']}", json={"text": "nor an update"}),
        reader.delete(f"/v1/units/{world['alice']}"),
        reader.post("/v1/import", content=b"", headers={"content-type": "application/x-ndjson"}),
        reader.post("/v1/forget", json={"unit_ids": [world["alice"]]}),
        served.client("alice").post("/v1/forget", json={"unit_ids": [world["alice"]]}),  # forget is admin
    ]
    for response in refused:
        _error(response, 403, "ForbiddenError")
    assert reader.post("/v1/search", json={"query": "tea"}).status_code == 200
    _alice_unchanged(served, world)


def test_missing_invalid_and_revoked_keys_are_refused(served: Served, world: dict[str, Any]) -> None:
    _error(served.client(None).post("/v1/search", json={"query": "tea"}), 401, "AuthError")
    for header in ("Bearer omk_0000000000000000_" + "x" * 43, "Bearer nonsense", "Basic abc", "Bearer"):
        response = httpx.post(f"{served.url}/v1/search", json={"query": "tea"}, headers={"Authorization": header})
        _error(response, 401, "AuthError")
    forged = served.keys["bob"][:-4] + "AAAA"  # a real key id with the wrong secret
    _error(httpx.get(f"{served.url}/v1/units", headers={"Authorization": f"Bearer {forged}"}), 401, "AuthError")
    key_id = served.keys["bob"].split("_")[1]
    assert served.memory.store.revoke_key(key_id)
    _error(served.client("bob").get("/v1/units"), 401, "AuthError")
    assert served.client("alice").get("/v1/units").status_code == 200


def test_the_audit_log_names_the_key(served: Served, world: dict[str, Any]) -> None:
    events = served.memory.history(world["alice"])
    assert events[0].actor == "key:alice"
    assert served.memory.history(world["alice_bot"])[0].actor == "key:alice-bot"


def test_the_remote_client_raises_the_same_classes(served: Served, world: dict[str, Any]) -> None:
    with served.remote("bob") as bob:
        with pytest.raises(NotFoundError):
            bob.get(world["alice"])
        with pytest.raises(ScopeError):
            bob.search("tea", user_id="alice")
        with pytest.raises(ForbiddenError):
            bob.forget(unit_ids=[world["bob"]])
        assert [h.unit.id for h in bob.search("green tea").hits] == [world["bob"]]
    with served.remote("alice-reader") as reader, pytest.raises(ForbiddenError):
        reader.add("nope")
    with pytest.raises(AuthError):
        from omnimem import Memory

        with Memory(url=served.url, api_key="omk_bad") as nobody:
            nobody.search("tea")


def test_graph_routes_are_scoped(tmp_path: Path) -> None:
    served = start(tmp_path, graph=True)
    try:
        served.client("alice").post("/v1/dialogues", json={"turns": [
            {"text": "Melanie painted a sunset with Caroline in Boston.", "speaker": "Alice"}]})
        served.client("bob").post("/v1/units", json={"text": "Bob flew to Paris with Dave."})
        assert served.memory.flush(timeout=120)  # graph extraction is queued enrichment
        bob = served.client("bob")
        names = {e["name"] for e in bob.get("/v1/entities").json()["entities"]}
        assert "Paris" in names and not names & {"Melanie", "Caroline", "Boston"}
        assert bob.get("/v1/entities/Melanie").json() == {"entities": []}
        assert bob.get("/v1/entities/Melanie/neighbors").json() == {"neighbors": []}
        assert served.client("alice").get("/v1/entities/Melanie/neighbors").json()["neighbors"]
        alice = served.client("alice").get("/v1/entities").json()["entities"]
        assert {"Melanie", "Boston"} <= {e["name"] for e in alice}
        assert {e["user_id"] for e in alice} == {"alice"}
        _error(bob.get("/v1/entities", params={"user_id": "alice"}), 403, "ScopeError")
    finally:
        stop(served)
