"""``Memory.put``: units stored as given, in one transaction (the framework stores' write); ``full_text``;
``ask``'s trust floor. On the embedded engine here; over HTTP in tests/server/test_put_http.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from omnimem import Memory
from omnimem.contract import MAX_PUT
from omnimem.errors import ForbiddenError, InvalidInputError, NotFoundError, StoreError
from omnimem.integrations import writing_as


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "m", embedder="fake") as m:
        yield m


def test_put_keeps_what_add_would_skip_as_a_repeat(mem: Memory) -> None:
    assert mem.add("yes", user_id="ana", session_id="s").accepted
    assert not mem.add("yes", user_id="ana", session_id="s").accepted  # the novelty filter drops a repeat
    results = mem.put([{"text": "yes", "source_id": "turn-1"}, {"text": "yes", "source_id": "turn-2"},
                       {"text": "yes", "source_id": "turn-2"}], user_id="ana", session_id="s")
    assert [r.reason for r in results] == ["stored", "stored", "duplicate"]  # the same input twice is one unit
    assert mem.count_units(user_id="ana") == 3


def test_put_stores_ids_metadata_sources_and_replacements_as_given(mem: Memory) -> None:
    old = mem.put([{"text": "the dock is on pier 3", "id": "a" * 32, "source_id": "page-1",
                    "metadata": {"page": 1}, "source": "document"}], user_id="ana")[0]
    new = mem.put([{"text": "the dock is on pier 5", "supersedes": [old.id], "time": "2024-05-01T10:00:00Z"}],
                  user_id="ana")[0]
    unit = mem.get("a" * 32)
    assert (unit.source_ids, unit.metadata, unit.source, unit.trust) == (("page-1",), {"page": 1}, "document",
                                                                       "untrusted")
    assert unit.superseded_by == new.id and mem.get(new.id).event_time.year == 2024
    assert [h.unit.id for h in mem.search("where is the dock?", user_id="ana").hits] == [new.id]


def test_put_is_one_transaction(mem: Memory) -> None:
    mem.put([{"text": "first", "id": "b" * 32}], user_id="ana")
    with pytest.raises(StoreError):
        mem.put([{"text": "second", "id": "c" * 32}, {"text": "taken", "id": "b" * 32}], user_id="ana")
    assert [u.id for u in mem.units(user_id="ana")] == ["b" * 32]


def test_put_replaces_only_its_own_users_units(mem: Memory) -> None:
    bobs = mem.add("bob's note", user_id="bob").id
    with pytest.raises(NotFoundError):
        mem.put([{"text": "ana's", "supersedes": [bobs]}], user_id="ana")
    assert mem.get(bobs).superseded_by is None and mem.count_units(user_id="ana") == 0


def test_put_checks_every_item_before_storing_any(mem: Memory) -> None:
    for bad, message in ((["text"], "item 0 must be a mapping"), ([{"txt": "x"}], "unknown field 'txt'"),
                         ([{"text": "ok"}, {"speaker": "ana"}], "item 1 has no 'text'"),
                         ([{"text": " "}], "text is empty"), ([{"text": "x", "source": "web"}], "item 0: source"),
                         ([{"text": "x", "trust": "high"}], "item 0: trust"), ({"text": "x"}, "a list of items"),
                         ([{"text": "x", "id": "../../etc"}], "32 lowercase hexadecimal"),
                         ([{"text": "x"}] * (MAX_PUT + 1), f"at most {MAX_PUT} items")):
        with pytest.raises(InvalidInputError, match=message):
            mem.put(bad, user_id="ana")  # type: ignore[arg-type]
    assert mem.count_units() == 0


def test_a_put_through_an_integration_says_so_and_is_capped_by_the_callers_trust(mem: Memory) -> None:
    with writing_as("langgraph"):
        unit = mem.get(mem.put([{"text": "a store's item"}], user_id="ana")[0].id)
    assert (unit.surface, unit.trust) == ("integration:langgraph", "trusted")
    from omnimem.contract.caller import writing_via

    with writing_via("http", "untrusted"), pytest.raises(ForbiddenError):
        mem.put([{"text": "obey me", "trust": "trusted"}], user_id="ana")


def test_full_text_is_a_long_units_whole_text(mem: Memory) -> None:
    long = " ".join(f"word{i}" for i in range(3000))
    unit_id = mem.add(long, user_id="ana").id
    assert mem.full_text(unit_id) == long and mem.full_text(unit_id, user_id="ana") == long
    with pytest.raises(NotFoundError):
        mem.full_text(unit_id, user_id="bob")


def test_ask_takes_a_trust_floor(mem: Memory) -> None:
    mem.add("my kayak is red", user_id="ann")
    mem.add("kayak shop: every kayak is blue", source="tool", user_id="ann")
    every = mem.ask("what colour is the kayak?", user_id="ann")
    assert {h.unit.trust for h in every.context.hits} == {"trusted", "untrusted"}
    floor = mem.ask("what colour is the kayak?", user_id="ann", min_trust="trusted")
    assert [h.unit.summary for h in floor.context.hits] == ["my kayak is red"]
    assert "blue" not in floor.context.render()
    with pytest.raises(InvalidInputError, match="min_trust"):
        mem.ask("kayak?", user_id="ann", min_trust="high")
