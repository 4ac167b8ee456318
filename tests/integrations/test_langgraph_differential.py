"""One seeded random sequence of store operations run against LangGraph's own ``InMemoryStore`` and against
``OmnimemStore``: every answer agrees (the intended differences are the ones docs/langgraph.md names)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
from langgraph.store.base import BaseStore, Item
from langgraph.store.memory import InMemoryStore

from omnimem import Memory
from omnimem.integrations.langgraph import OmnimemStore
from tests.postgres_server import PostgresServer

NAMESPACES = [("ann",), ("ann", "notes"), ("ann", "prefs"), ("ann", "work", "2024"), ("ann", "work", "v1"),
              ("bob", "notes"), ("bob", "work", "2024"), ("carl", "notes", "v1")]
KEYS = ["a", "b", "c", "d"]
WORDS = ["tea", "coffee", "garden", "tram", "castle", "report", "friday", "porto"]
EVERYTHING = 10_000  # a search limit above any item count here
OPERATIONS = 300


@pytest.fixture(params=["memory", "postgresql"])
def stores(request: pytest.FixtureRequest) -> Iterator[tuple[InMemoryStore, OmnimemStore]]:
    if request.param == "memory":
        with Memory(embedder="fake") as mem:
            yield InMemoryStore(), OmnimemStore(memory=mem)
        return
    postgres: PostgresServer = request.getfixturevalue("postgres")
    url = postgres.fresh()
    try:
        with Memory(url=url, embedder="fake") as mem:
            yield InMemoryStore(), OmnimemStore(memory=mem)
    finally:
        postgres.drop(url)


def shown(items: list[Item] | list[Any]) -> list[tuple[tuple[str, ...], str, dict[str, Any]]]:
    return [(i.namespace, i.key, i.value) for i in items]


def a_value(rng: random.Random) -> dict[str, Any]:
    value: dict[str, Any] = {"text": " ".join(rng.sample(WORDS, 2)), "n": rng.randint(0, 9),
                             "kind": rng.choice(["memo", "report"])}
    if rng.random() < 0.3:
        value["meta"] = {"by": rng.choice(["ann", "bob"]), "tags": rng.sample(WORDS, 2)}
    return value


def a_filter(rng: random.Random) -> dict[str, Any] | None:
    return rng.choice([
        None, None, {"kind": rng.choice(["memo", "report"])}, {"n": {"$gte": rng.randint(0, 9)}},
        {"n": {"$lt": rng.randint(0, 9)}, "kind": "memo"}, {"n": {"$ne": rng.randint(0, 9)}},
        {"meta": {"by": "ann"}}, {"n": rng.randint(0, 9)},
    ])


def a_prefix(rng: random.Random) -> tuple[str, ...]:
    namespace = rng.choice(NAMESPACES)
    return namespace[:rng.randint(0, len(namespace))]


def a_pattern(rng: random.Random, *, suffix: bool) -> tuple[str, ...] | None:
    if rng.random() < 0.5:
        return None
    namespace = rng.choice(NAMESPACES)
    n = rng.randint(1, len(namespace))
    part = list(namespace[-n:] if suffix else namespace[:n])
    if rng.random() < 0.3:
        part[rng.randrange(n)] = "*"
    return tuple(part)


def holding_only_items(reference: InMemoryStore) -> InMemoryStore:
    """A fresh InMemoryStore with the reference's items: it lists no namespace that a delete emptied or a get
    of a missing item created (InMemoryStore keeps those; OmnimemStore lists namespaces that hold items)."""
    fresh = InMemoryStore()
    for item in reference.search((), limit=EVERYTHING):
        fresh.put(item.namespace, item.key, item.value)
    return fresh


def test_a_random_sequence_gets_the_same_answers_as_langgraphs_in_memory_store(
        stores: tuple[InMemoryStore, OmnimemStore]) -> None:
    reference, ours = stores
    rng = random.Random(35)
    last_put: dict[tuple[tuple[str, ...], str], int] = {}  # the step of each item's latest put
    counts = dict.fromkeys(["put", "delete", "get", "search", "query", "list"], 0)
    answered = dict.fromkeys(["get", "search", "query", "list"], 0)  # answers that were not empty
    for step in range(OPERATIONS):
        kind = rng.choices(["put", "delete", "get", "search", "query", "list"], [8, 2, 4, 4, 1, 2])[0]
        counts[kind] += 1
        namespace, key = rng.choice(NAMESPACES), rng.choice(KEYS)
        stores_: tuple[BaseStore, BaseStore] = (reference, ours)
        if kind == "put":
            value = a_value(rng)
            for store in stores_:
                store.put(namespace, key, value)
            last_put[(namespace, key)] = step
        elif kind == "delete":
            for store in stores_:
                store.delete(namespace, key)
            last_put.pop((namespace, key), None)
        elif kind == "get":
            expected, got = reference.get(namespace, key), ours.get(namespace, key)
            assert (expected is None) == (got is None), (step, namespace, key)
            if expected is not None and got is not None:
                assert shown([got]) == shown([expected])
                answered["get"] += 1
        elif kind == "search":  # no query: newest first (InMemoryStore lists in insertion order)
            prefix, where = a_prefix(rng), a_filter(rng)
            limit, offset = rng.randint(1, 6), rng.randint(0, 4)
            matching = reference.search(prefix, filter=where, limit=EVERYTHING)
            newest_first = sorted(matching, key=lambda i: last_put[(i.namespace, i.key)], reverse=True)
            page = ours.search(prefix, filter=where, limit=limit, offset=offset)
            assert shown(page) == shown(newest_first[offset:offset + limit]), (step, prefix, where, limit, offset)
            assert len(page) == len(reference.search(prefix, filter=where, limit=limit, offset=offset))
            answered["search"] += bool(page)
        elif kind == "query":  # a query ranks by relevance: every item found is one the filter and prefix allow
            prefix, where, limit = a_prefix(rng), a_filter(rng), rng.randint(1, 6)
            allowed = shown(reference.search(prefix, filter=where, limit=EVERYTHING))
            found = shown(ours.search(prefix, query=rng.choice(WORDS), filter=where, limit=limit))
            assert len(found) <= limit and all(f in allowed for f in found)
            assert len({(ns, k) for ns, k, _ in found}) == len(found)  # one item once
            answered["query"] += bool(found)
        else:
            options: dict[str, Any] = {"prefix": a_pattern(rng, suffix=False), "suffix": a_pattern(rng, suffix=True),
                                       "max_depth": rng.choice([None, None, 1, 2, 3]),
                                       "limit": rng.randint(1, 6), "offset": rng.randint(0, 3)}
            expected_namespaces = holding_only_items(reference).list_namespaces(**options)
            assert ours.list_namespaces(**options) == expected_namespaces, (step, options)
            answered["list"] += bool(expected_namespaces)
    assert min(counts.values()) >= 10, counts  # every kind of operation ran
    assert all(answered[kind] >= counts[kind] // 3 for kind in answered), (answered, counts)  # and found things
    assert shown(sorted(ours.search((), limit=EVERYTHING), key=lambda i: (i.namespace, i.key))) == \
        shown(sorted(reference.search((), limit=EVERYTHING), key=lambda i: (i.namespace, i.key)))
