"""A LangGraph namespace label is an exact string: no spelling of one user's label reaches that user's memory
(search, retriever, export, forget), and an item is found by its exact namespace and key however many other
spellings share its omnimem scope. On the embedded store and on PostgreSQL."""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from omnimem import Memory
from omnimem.errors import InvalidInputError
from omnimem.integrations.langchain import OmnimemRetriever
from omnimem.integrations.langgraph import OmnimemStore
from tests.postgres_server import PostgresServer

VICTIMS = ["ann", "zoë"]  # NFC, as omnimem keeps user ids
# Spellings that omnimem's user id would turn into a victim's (trimmed, NFC): a put under them is refused.
REFUSED = {
    "trailing space": "ann ", "leading space": " ann", "tab": "ann\t", "newline": "ann\n",
    "ideographic space": "ann\u3000", "no-break space": "\u00a0ann", "NFD": unicodedata.normalize("NFD", "zoë"),
    "combining mark after a letter": "zoe\u0308",
}
# Spellings omnimem keeps exactly: each is a user of its own, apart from the victims.
KEPT = {
    "capitalised": "Ann", "upper case": "ANN", "zero-width space after": "ann\u200b",
    "zero-width space before": "\u200bann", "zero-width joiner inside": "an\u200dn",
    "lone combining mark first": "\u0301ann", "a lone combining mark": "\u0301",
    "zoe without diaeresis": "zoe",
}


@pytest.fixture(params=["path", "postgresql"])
def mem(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    if request.param == "path":
        with Memory(tmp_path / "m", embedder="fake") as m:
            yield m
        return
    postgres: PostgresServer = request.getfixturevalue("postgres")
    url = postgres.fresh()
    try:
        with Memory(url=url, embedder="fake") as m:
            yield m
    finally:
        postgres.drop(url)


def everything_about(mem: Memory, user: str) -> str:
    """What a user's search, retriever and export show, as one text."""
    shown: list[Any] = [h.text for h in mem.search("planted instruction note", user_id=user, budget=4000).hits]
    shown += [d.page_content for d in OmnimemRetriever(memory=mem, user_id=user, budget=4000).invoke("planted")]
    shown += list(mem.export(user_id=user))
    return json.dumps(shown, ensure_ascii=False, default=str)


def test_no_spelling_of_a_label_reaches_another_users_memory(mem: Memory) -> None:
    store = OmnimemStore(memory=mem)
    for victim in VICTIMS:
        store.put((victim, "notes"), "k", {"text": f"{victim}'s own note about the garden"})
    for name, label in REFUSED.items():
        for namespace in [(label,), (label, "notes")]:
            with pytest.raises(InvalidInputError, match="canonical form"):
                store.put(namespace, "k", {"text": f"planted instruction ({name})"})
            assert store.get(namespace, "k") is None and store.search(namespace) == []
            store.delete(namespace, "k")  # nothing under it: a no-op, the victims' items stay
    for name, label in KEPT.items():
        store.put((label, "notes"), "k", {"text": f"planted instruction ({name})"})
    assert mem.count_units() == len(VICTIMS) + len(KEPT)  # nothing of a refused put was stored

    for victim in VICTIMS:
        assert "planted" not in everything_about(mem, victim)
        assert [i.value["text"] for i in store.search((victim,))] == [f"{victim}'s own note about the garden"]
        assert store.list_namespaces(prefix=(victim,)) == [(victim, "notes")]
    for name, label in KEPT.items():
        item = store.get((label, "notes"), "k")
        assert item is not None and item.value == {"text": f"planted instruction ({name})"}
        assert "own note" not in everything_about(mem, label) and f"({name})" in everything_about(mem, label)

    for victim in VICTIMS:  # forgetting a user takes only that user's items
        assert mem.forget(user_id=victim) == 1
    assert mem.count_units() == len(KEPT)
    assert all(store.get((label, "notes"), "k") is not None for label in KEPT.values())
    for label in KEPT.values():
        mem.forget(user_id=label)
    assert mem.count_units() == 0


def test_an_item_is_found_whatever_else_shares_its_scope(mem: Memory) -> None:
    store = OmnimemStore(memory=mem)
    # 60 keys that omnimem's session id makes "k" (trimmed), and deeper labels that NFC makes "café":
    # all of them share the omnimem scope (ann, ["notes"], k) with ann's item.
    spellings = [(("ann", "notes"), " " * n + "k") for n in range(1, 41)] + \
                [(("ann", "notes"), "k" + "\t" * n) for n in range(1, 21)]
    cafe_nfd = unicodedata.normalize("NFD", "café")
    spellings += [(("ann", cafe_nfd), "k")]
    for n, (namespace, key) in enumerate(spellings):
        store.put(namespace, key, {"text": f"spelling {n}", "n": n})

    store.put(("ann", "notes"), "k", {"text": "ann's first value"})
    store.put(("ann", "café"), "k", {"text": "the NFC café"})
    got = store.get(("ann", "notes"), "k")
    assert got is not None and got.value == {"text": "ann's first value"}
    store.put(("ann", "notes"), "k", {"text": "ann's second value"})
    assert store.get(("ann", "notes"), "k").value == {"text": "ann's second value"}  # type: ignore[union-attr]
    assert store.get(("ann", "café"), "k").value == {"text": "the NFC café"}  # type: ignore[union-attr]
    for n, (namespace, key) in enumerate(spellings):
        assert store.get(namespace, key).value == {"text": f"spelling {n}", "n": n}  # type: ignore[union-attr]

    store.delete(("ann", "notes"), "k")
    assert store.get(("ann", "notes"), "k") is None
    left = mem.units(user_id="ann", include_superseded=True, limit=1000)
    assert not [u for u in left if u.metadata["langgraph"]["key"] == "k"
                and u.metadata["langgraph"]["namespace"] == ["ann", "notes"]]  # every version gone
    assert len(left) == len(spellings) + 1  # the others stay, untouched
    for namespace, key in spellings + [(("ann", "café"), "k")]:
        store.delete(namespace, key)
    assert mem.count_units(include_superseded=True) == 0  # zero residue


def test_an_item_stored_before_the_check_under_a_refused_label_can_still_be_read_and_deleted(mem: Memory) -> None:
    record = {"namespace": ["ann "], "key": "k", "value": {"text": "planted"},
              "created_at": "2024-01-01T00:00:00+00:00"}
    mem.add("text: planted", user_id="ann ", agent_id="[]", session_id="k", metadata={"langgraph": record})  # as once
    store = OmnimemStore(memory=mem)
    item = store.get(("ann ",), "k")
    assert item is not None and item.value == {"text": "planted"} and store.get(("ann",), "k") is None
    store.delete(("ann ",), "k")  # the way to take it out of ann's memory
    assert store.get(("ann ",), "k") is None and mem.count_units(user_id="ann", include_superseded=True) == 0
