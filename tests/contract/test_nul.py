"""One rule for U+0000 on every backend: a NUL character in a unit's text, speaker, scope or source ids, a query
or a reason is refused (InvalidInputError; a 400 over HTTP) on SQLite as on PostgreSQL, where it used to be a 500
or a half-stored import. Metadata may hold one (JSON escapes it), on both. An import with a NUL anywhere stores
none of its units, whichever user holds it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from omnimem import InvalidInputError, MalformedDataError, Memory
from tests.server.conftest import Served
from tests.server.test_import_takeover import server  # noqa: F401 - the live server on SQLite and PostgreSQL

NUL = "\x00"
HEADER = {"kind": "header", "format": "omnimem-export", "version": 1}


@pytest.mark.parametrize("field", ["text", "speaker", "user_id", "agent_id", "session_id", "source_id"])
def test_add_refuses_a_nul_in_any_text_field(unchanged_mem: Memory, field: str) -> None:
    args: dict[str, Any] = {"text": "Ann likes tea", "user_id": "ann", "speaker": "Ann"}
    args[field] = f"{args.get(field, 'x')}{NUL}more"
    text = args.pop("text")
    with pytest.raises(InvalidInputError, match=f"{field} holds a NUL character"):
        unchanged_mem.add(text, **args)
    assert unchanged_mem.stats()["units"] == 0


def test_search_ask_and_forget_refuse_a_nul(mem: Memory) -> None:
    mem.add("Ann likes green tea", user_id="ann")
    for call in (lambda: mem.search(f"tea{NUL}", user_id="ann"), lambda: mem.search("tea", user_id=f"ann{NUL}"),
                 lambda: mem.ask(f"what{NUL}?", user_id="ann"),
                 lambda: mem.forget(user_id="ann", reason=f"asked{NUL}")):
        with pytest.raises(InvalidInputError, match="NUL character"):
            call()
    assert [h.unit.summary for h in mem.search("tea", user_id="ann").hits] == ["Ann likes green tea"]


def test_metadata_may_hold_a_nul_on_every_backend(mem: Memory) -> None:
    uid = mem.add("Ann likes tea", user_id="ann", metadata={"note": f"a{NUL}b"}).id
    assert mem.get(uid).metadata == {"note": f"a{NUL}b"}


def mem0_memory(n: int, user: str, text: str) -> dict[str, Any]:
    return {"id": f"{n:08d}-0000-4000-8000-000000000000", "memory": text, "user_id": user,
            "created_at": "2025-01-02T03:04:05+00:00"}


@pytest.mark.parametrize("bad", [{"memory": f"Bob's secret{NUL}"}, {"user_id": f"bob{NUL}"},
                                 {"run_id": f"s{NUL}1"}])
def test_a_two_user_mem0_export_with_a_nul_stores_nothing(mem: Memory, bad: dict[str, str]) -> None:
    first = [mem0_memory(n, "ann", f"Ann's memory number {n}") for n in range(1, 6)]
    with pytest.raises(MalformedDataError, match="record 6 .*NUL character"):
        mem.import_mem0([*first, {**mem0_memory(6, "bob", "Bob's memory"), **bad}])
    assert mem.stats()["units"] == 0  # the first user's five were stored before, on PostgreSQL
    assert mem.import_mem0(first)["stored"] == 5


def test_a_dump_with_a_nul_in_its_last_group_or_event_stores_nothing(mem: Memory) -> None:
    ann = [{"kind": "unit", "id": f"a{n}", "text": f"Ann's note {n}", "user_id": "ann"} for n in range(3)]
    bob = {"kind": "unit", "id": "b1", "text": "Bob's note", "user_id": "bob", "speaker": f"Bob{NUL}"}
    with pytest.raises(MalformedDataError, match="record 5 .*speaker holds a NUL"):
        mem.import_records([HEADER, *ann, bob])
    event = {"kind": "event", "seq": 1, "time": "2026-01-01T00:00:00+00:00", "actor": "key:x", "action": "update",
             "unit_ids": ["a0"], "user_id": "ann", "reason": f"why{NUL}", "details": {}}
    with pytest.raises(MalformedDataError, match="record 5: not a valid audit event"):
        mem.import_records([HEADER, *ann, event])
    assert mem.stats()["units"] == 0


def test_the_server_answers_400_for_a_nul_on_both_backends(server: Served) -> None:  # noqa: F811
    alice = server.client("alice")
    assert alice.post("/v1/units", json={"text": "Alice likes tea"}).status_code == 201
    for body in ({"text": f"Alice{NUL} likes coffee"}, {"text": "Alice likes coffee", "session_id": f"s{NUL}"},
                 {"text": "Alice likes coffee", "speaker": f"A{NUL}"}):
        refused = alice.post("/v1/units", json=body)
        assert refused.status_code == 400, refused.text
        assert refused.json()["error"] == "InvalidInputError" and "NUL character" in refused.json()["message"]
    for body in ({"query": f"tea{NUL}"}, {"query": "tea", "session_id": f"s{NUL}"}):
        refused = alice.post("/v1/search", json=body)
        assert refused.status_code == 400, refused.text
        assert "NUL character" in refused.json()["message"]
    root = server.client("root")
    refused = root.post("/v1/search", json={"query": "tea", "user_id": f"alice{NUL}"})
    assert refused.status_code == 400 and "user_id holds a NUL" in refused.json()["message"]
    dump = [HEADER, {"kind": "unit", "id": "c1", "text": "Carol's note", "user_id": "carol"},
            {"kind": "unit", "id": "d1", "text": f"Dan's{NUL} note", "user_id": "dan"}]
    refused = root.post("/v1/import", content="".join(json.dumps(r) + "\n" for r in dump),
                        headers={"content-type": "application/x-ndjson"})
    assert refused.status_code == 400 and refused.json()["error"] == "MalformedDataError"
    assert server.memory.stats()["units"] == 1
    assert [h["unit"]["summary"] for h in alice.post("/v1/search", json={"query": "tea"}).json()["hits"]] == [
        "Alice likes tea"]
