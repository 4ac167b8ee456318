"""The ``GraphRows`` contract: graph and CLIP rows written with their units, through typed methods."""

from __future__ import annotations

import numpy as np
import pytest

from omnimem.results.entities import Entity, EntityType, Relation
from omnimem.mau import Scope
from omnimem.store.base import GraphRows, SearchFilter
from tests.store.conftest import Backend
from tests.store.test_unit_store import unit

ANN = Scope("ann", None, None)


def entity(eid: str, name: str) -> Entity:
    return Entity(eid, name, (), EntityType.PERSON, 0.9, ANN)


def graph_of(units: list[str]) -> object:
    def write(rows: GraphRows) -> None:
        rows.upsert_entity(entity("e1", "Caroline"))
        rows.upsert_entity(entity("e2", "Melanie"))
        for uid in units:
            rows.link_entity_unit("e1", uid, 0.8)
            rows.link_entity_unit("e2", uid, 0.7)
        rows.upsert_relation(Relation("e1", "e2", "friend_of", 0.6, tuple(units)))
    return write


def test_graph_rows_commit_with_their_units_and_read_back(backend: Backend) -> None:
    store = backend.store
    store.insert([unit("a", Scope("ann"))], {}, derived=[graph_of(["a"])])  # type: ignore[list-item]
    with store.graph_rows() as rows:
        assert [e.name for e in rows.entities(user_id="ann")] == ["Caroline", "Melanie"]
        assert [e.id for e in rows.owned_entities("ann", None)] == ["e1", "e2"]
        assert rows.find_by_alias("caroline", user_id="ann", agent_id=None) == ["e1"]
        assert rows.neighbors("e1") == [("e2", pytest.approx(0.6))]
        assert rows.entity_units("e1") == [("a", pytest.approx(0.8))]
        assert rows.relations("e2") == [("e1", "e2", "friend_of", pytest.approx(0.6))]
        assert sorted(rows.unit_links()) == [("e1", "a"), ("e2", "a")]


def test_a_failing_derived_writer_rolls_back_the_units(backend: Backend) -> None:
    def broken(rows: GraphRows) -> None:
        rows.upsert_entity(entity("e9", "Ghost"))
        raise RuntimeError("extractor failed half way")

    with pytest.raises(RuntimeError):
        backend.store.insert([unit("a", Scope("ann"))], {}, derived=[broken])
    assert backend.store.get(["a"]) == []
    with backend.store.graph_rows() as rows:
        assert rows.entities() == []


def test_deleting_the_last_evidence_deletes_entities_and_relations(backend: Backend) -> None:
    store = backend.store
    store.insert([unit("a", Scope("ann")), unit("b", Scope("ann"))], {},
                 derived=[graph_of(["a", "b"])])  # type: ignore[list-item]
    store.delete(["a"])
    with store.graph_rows() as rows:
        assert [u for u, _ in rows.entity_units("e1")] == ["b"] and len(rows.relations()) == 1
    store.delete(["b"])
    with store.graph_rows() as rows:
        assert rows.entities() == [] and rows.relations() == [] and rows.unit_links() == []


def test_clip_vectors_are_rows_of_their_image_units(backend: Backend) -> None:
    store, search = backend.store, backend.search
    near = np.array([0.0, 1.0, 0.0], dtype=np.float32)
    far = np.array([1.0, 0.0, 0.0], dtype=np.float32)

    def clip_rows(rows: GraphRows) -> None:
        rows.put_clip_vectors([("cat", "clip-test", near), ("car", "clip-test", far)])

    inserted = store.insert([unit("cat", Scope("ann")), unit("car", Scope("bob"))], {}, derived=[clip_rows])
    rid = {u.id: r for r, u in inserted}
    found = search.within(SearchFilter(Scope())).images(near, "clip-test", 2)
    assert [r for r, _ in found] == [rid["cat"], rid["car"]]
    assert [r for r, _ in search.within(SearchFilter(Scope("bob"))).images(near, "clip-test", 2)] == [rid["car"]]
    assert search.within(SearchFilter(Scope())).images(near, "other-model", 2) == []
    store.delete(["cat"])
    assert [r for r, _ in search.within(SearchFilter(Scope())).images(near, "clip-test", 2)] == [rid["car"]]
