"""The ``CandidateSearch`` contract: k-NN and text search filtered inside the backend."""

from __future__ import annotations

from datetime import timedelta

import numpy as np

from omnimem.mau import Scope
from omnimem.store.base import SearchFilter
from tests.store.conftest import Backend
from tests.store.test_unit_store import NOW, unit


def fill(backend: Backend) -> dict[str, int]:
    units = [
        unit("ann-kayak", Scope("ann", None, "s1"), vector=[1.0, 0.0, 0.0, 0.0], text="kayak on the lake"),
        unit("ann-piano", Scope("ann", None, "s2"), vector=[0.0, 1.0, 0.0, 0.0], text="piano lesson"),
        unit("bob-kayak", Scope("bob"), vector=[1.0, 0.0, 0.0, 0.0], text="kayak repair"),
    ]
    rows = backend.store.insert(units, {})
    backend.search.added(rows, np.stack([u.embedding for u in units]), backend.store.last_write_seq)
    return {u.id: rid for rid, u in rows}


def ids(found: list[tuple[int, float]], rid: dict[str, int]) -> list[str]:
    names = {v: k for k, v in rid.items()}
    return [names[r] for r, _ in found]


def test_dense_and_text_search_stay_inside_the_scope(backend: Backend) -> None:
    rid = fill(backend)
    query = np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32)
    everyone = backend.search.within(SearchFilter(Scope()))
    assert sorted(ids(everyone.dense(query, 2), rid)) == ["ann-kayak", "bob-kayak"]
    assert sorted(ids(everyone.text("kayak", 5), rid)) == ["ann-kayak", "bob-kayak"]
    ann = backend.search.within(SearchFilter(Scope("ann")))
    assert ids(ann.dense(query, 5), rid)[0] == "ann-kayak" and "bob-kayak" not in ids(ann.dense(query, 5), rid)
    assert ids(ann.text("kayak", 5), rid) == ["ann-kayak"]
    session = backend.search.within(SearchFilter(Scope("ann", None, "s2")))
    assert ids(session.dense(query, 5), rid) == ["ann-piano"]
    assert ann.admitted([rid["ann-piano"], rid["bob-kayak"]]) == {rid["ann-piano"]}


def test_superseded_units_are_withheld_unless_asked_and_as_of_sees_the_past(backend: Backend) -> None:
    rid = fill(backend)
    store = backend.store
    newer = unit("ann-canoe", Scope("ann", None, "s1"), vector=[1.0, 0.0, 0.0, 0.0], text="canoe on the lake",
                 when=NOW + timedelta(days=1))
    rows = store.insert([newer], {}, supersedes={"ann-canoe": ["ann-kayak"]})
    backend.search.sync()
    rid["ann-canoe"] = rows[0][0]
    current = backend.search.within(SearchFilter(Scope("ann")))
    assert "ann-kayak" not in ids(current.text("lake", 5), rid)
    assert "ann-kayak" in ids(backend.search.within(SearchFilter(Scope("ann"), True)).text("lake", 5), rid)
    superseded_at = store.get(["ann-kayak"])[0].superseded_at
    assert superseded_at is not None
    before = backend.search.within(SearchFilter(Scope("ann"), as_of=superseded_at - timedelta(microseconds=1)))
    assert ids(before.text("lake", 5), rid) == ["ann-kayak"]  # the canoe was not recorded yet


def test_search_catches_up_with_writes_it_was_not_told_about(backend: Backend) -> None:
    fill(backend)
    backend.store.insert([unit("late", Scope("cid"), text="zebra crossing")], {})
    backend.search.sync()
    assert len(backend.search.within(SearchFilter(Scope("cid"))).text("zebra", 5)) == 1
    assert backend.search.sizes()["dense"] == 4
