"""OmnimemStore as LangGraph's BaseStore: a compiled graph remembers across invocations, namespaces stay
apart, values round-trip, and every operation kind runs through batch/abatch."""

from __future__ import annotations

import asyncio
import hashlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore, GetOp, ListNamespacesOp, MatchCondition, PutOp, SearchOp

from omnimem import Memory
from omnimem.errors import ConfigError, InvalidInputError, MissingDependencyError
from omnimem.integrations.langgraph import OmnimemStore, render


class State(TypedDict, total=False):
    user: str
    message: str
    recalled: list[str]


def chat_node(state: State, *, store: BaseStore) -> dict[str, Any]:
    """Recall what the store holds about the message; store "remember ..." messages."""
    namespace = (state["user"], "memories")
    recalled = [item.value["text"] for item in store.search(namespace, query=state["message"], limit=3)]
    if state["message"].startswith("remember "):
        text = state["message"].removeprefix("remember ")
        store.put(namespace, hashlib.sha1(text.encode()).hexdigest()[:12], {"text": text})
    return {"recalled": recalled}


def compiled(store: BaseStore) -> Any:
    graph = StateGraph(State)
    graph.add_node("chat", chat_node)
    graph.add_edge(START, "chat")
    graph.add_edge("chat", END)
    return graph.compile(store=store)


@pytest.fixture
def store() -> Iterator[OmnimemStore]:
    with Memory(embedder="fake") as mem:
        yield OmnimemStore(memory=mem)


def test_a_compiled_graph_remembers_across_invocations(tmp_path: Path) -> None:
    with Memory(tmp_path / "m", embedder="fake") as mem:
        app = compiled(OmnimemStore(memory=mem))
        first = app.invoke({"user": "ann", "message": "remember I am allergic to peanuts"})
        assert first["recalled"] == []
        app.invoke({"user": "ann", "message": "remember my sister lives in Porto"})
    with Memory(tmp_path / "m", embedder="fake") as mem:  # another process's view: reopened from disk
        app = compiled(OmnimemStore(memory=mem))
        second = app.invoke({"user": "ann", "message": "what am I allergic to?"})
        assert second["recalled"][0] == "I am allergic to peanuts"
        other = app.invoke({"user": "bob", "message": "what am I allergic to?"})
        assert other["recalled"] == []  # another user's namespace sees none of ann's items


def test_values_round_trip_and_a_put_replaces(store: OmnimemStore) -> None:
    value = {"text": "Ann prefers tea", "n": 3, "ok": True, "nested": {"list": [1, 2.5, None, "ü"]}, "empty": {}}
    store.put(("ann", "prefs"), "drink", value)
    item = store.get(("ann", "prefs"), "drink")
    assert item is not None and item.value == value and item.key == "drink" and item.namespace == ("ann", "prefs")
    store.put(("ann", "prefs"), "drink", {"text": "Ann now prefers coffee"})
    again = store.get(("ann", "prefs"), "drink")
    assert again is not None and again.value == {"text": "Ann now prefers coffee"}
    assert again.created_at == item.created_at and again.updated_at > item.updated_at
    hits = store.search(("ann",), query="prefers")
    assert [h.value["text"] for h in hits] == ["Ann now prefers coffee"]  # the replaced version is not searched
    store.put(("ann", "prefs"), "drink-copy", {"text": "Ann now prefers coffee"})  # no novelty filter in a store
    assert store.get(("ann", "prefs"), "drink-copy") is not None and len(store.search(("ann",), query="coffee")) == 2


def test_delete_by_put_none_removes_every_version(store: OmnimemStore) -> None:
    store.put(("ann",), "k", {"text": "first"})
    store.put(("ann",), "k", {"text": "second"})
    store.batch([PutOp(("ann",), "k", None)])
    assert store.get(("ann",), "k") is None
    assert store.memory.stats()["units"] == 0  # history included: zero residue
    store.delete(("ann",), "never-there")  # deleting a missing key is a no-op, as in LangGraph's stores


def test_namespaces_never_see_each_others_items(store: OmnimemStore) -> None:
    store.put(("ann", "work"), "a", {"text": "the quarterly report is due friday"})
    store.put(("ann", "home"), "a", {"text": "the plumber comes friday"})
    store.put(("bob", "work"), "a", {"text": "the quarterly report is late"})
    store.put(("ann",), "a", {"text": "ann's top-level note about friday"})
    assert store.get(("ann", "work"), "a").value["text"].startswith("the quarterly")  # type: ignore[union-attr]
    assert store.get(("ann", "home"), "a").value["text"] == "the plumber comes friday"  # type: ignore[union-attr]
    assert store.get(("ann",), "a").value["text"] == "ann's top-level note about friday"  # type: ignore[union-attr]
    work = store.search(("ann", "work"), query="friday report")
    assert [(i.namespace, i.key) for i in work] == [(("ann", "work"), "a")]
    assert work[0].score is not None and work[0].score > 0
    everything_ann = store.search(("ann",), query="friday")
    assert {i.namespace for i in everything_ann} == {("ann",), ("ann", "work"), ("ann", "home")}  # prefix semantics
    assert all(i.namespace[0] == "bob" for i in store.search(("bob",), query="friday report quarterly"))


def test_search_without_query_filters_and_pages(store: OmnimemStore) -> None:
    for n in range(5):
        store.put(("docs",), f"d{n}", {"text": f"document {n}", "kind": "report" if n % 2 else "memo", "n": n})
    listed = store.search(("docs",), limit=10)
    assert [i.key for i in listed] == ["d4", "d3", "d2", "d1", "d0"]  # newest first
    reports = store.search(("docs",), filter={"kind": "report"})
    assert sorted(i.key for i in reports) == ["d1", "d3"]
    assert [i.key for i in store.search(("docs",), filter={"n": {"$gte": 3}})] == ["d4", "d3"]
    assert [i.key for i in store.search(("docs",), limit=2, offset=1)] == ["d3", "d2"]
    with pytest.raises(InvalidInputError, match="unknown filter operator"):
        store.search(("docs",), filter={"n": {"$like": 3}})


def test_list_namespaces(store: OmnimemStore) -> None:
    for namespace in [("ann", "work", "2024"), ("ann", "home"), ("bob", "work", "2024"), ("bob", "v1")]:
        store.put(namespace, "k", {"text": "x"})
    assert store.list_namespaces() == [("ann", "home"), ("ann", "work", "2024"), ("bob", "v1"),
                                       ("bob", "work", "2024")]
    assert store.list_namespaces(prefix=("ann",)) == [("ann", "home"), ("ann", "work", "2024")]
    assert store.list_namespaces(suffix=("2024",)) == [("ann", "work", "2024"), ("bob", "work", "2024")]
    assert store.list_namespaces(prefix=("*", "work")) == [("ann", "work", "2024"), ("bob", "work", "2024")]
    assert store.list_namespaces(max_depth=1) == [("ann",), ("bob",)]
    assert store.list_namespaces(limit=1, offset=1) == [("ann", "work", "2024")]


def test_batch_and_abatch_run_every_operation_kind_in_order(store: OmnimemStore) -> None:
    ops = [PutOp(("ann",), "a", {"text": "tram to the castle"}), GetOp(("ann",), "a"),
           SearchOp(("ann",), query="castle"), ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("ann",)),)),
           PutOp(("ann",), "a", None), GetOp(("ann",), "a")]
    results = store.batch(ops)
    assert results[0] is None and results[1].value == {"text": "tram to the castle"}  # type: ignore[union-attr]
    assert [i.key for i in results[2]] == ["a"] and results[3] == [("ann",)] and results[5] is None  # type: ignore[union-attr]
    asynced = asyncio.run(store.abatch([PutOp(("bob",), "b", {"text": "ferry"}), GetOp(("bob",), "b")]))
    assert asynced[1].value == {"text": "ferry"}  # type: ignore[union-attr]
    got = asyncio.run(store.aget(("bob",), "b"))
    assert got is not None and got.key == "b"


def test_index_fields_choose_the_searched_text(store: OmnimemStore) -> None:
    assert render({"text": "tea", "meta": {"by": "ann", "tags": ["x", "y"]}, "n": 2}) == \
        "text: tea\nmeta.by: ann\nmeta.tags: x\nmeta.tags: y\nn: 2"
    assert render({"a": [{"b": "one"}, {"b": "two"}], "c": "no"}, ["a[*].b"]) == "a[*].b: one\na[*].b: two"
    assert render({"a": [{"b": "one"}, {"b": "two"}]}, ["a[-1].b"]) == "a[-1].b: two"
    store.put(("ann",), "k", {"title": "zebra crossing", "body": "unrelated words"}, index=["body"])
    unit = store.memory.units(user_id="ann")[0]
    assert "zebra" not in store.memory.full_text(unit.id) and "unrelated" in unit.summary


def test_bad_input_is_refused(store: OmnimemStore) -> None:
    for op in [PutOp((), "k", {"text": "x"}), PutOp(("ann", " "), "k", {"text": "x"}), PutOp(("ann",), "", {"t": "x"}),
               PutOp(("ann",), "k", ["not", "a", "mapping"])]:  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError):
            store.batch([op])
    assert store.memory.stats()["units"] == 0
    with pytest.raises(ConfigError, match="an omnimem Memory"):
        OmnimemStore(memory=object())


def test_without_the_extra_the_error_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "omnimem.integrations.langgraph")
    monkeypatch.setitem(sys.modules, "langgraph.store.base", None)  # as if langgraph were missing
    with pytest.raises(MissingDependencyError, match=r"pip install 'omnimem\[langgraph\]'"):
        import omnimem.integrations.langgraph  # noqa: F401


def test_on_postgresql(postgres: Any) -> None:
    url = postgres.fresh()
    try:
        with Memory(url=url, embedder="fake") as mem:
            app = compiled(OmnimemStore(memory=mem))
            app.invoke({"user": "ann", "message": "remember the spare key is under the blue pot"})
            store = OmnimemStore(memory=mem)
            store.put(("ann", "prefs"), "k", {"text": "tea", "n": [1, {"x": None}]})
            assert store.get(("ann", "prefs"), "k").value == {"text": "tea", "n": [1, {"x": None}]}  # type: ignore[union-attr]
            assert app.invoke({"user": "ann", "message": "where is the spare key?"})["recalled"] == \
                ["the spare key is under the blue pot"]
            assert store.list_namespaces() == [("ann", "memories"), ("ann", "prefs")]
    finally:
        postgres.drop(url)
