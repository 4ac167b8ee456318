from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from omnimem.store.sqlite import graph as store
from omnimem.graph.expand import expand, find_seeds
from omnimem.graph.extract import SpacyExtractor
from omnimem.results.entities import Entity, EntityType, Relation
from omnimem.mau import Scope
from omnimem.graph.resolve import CandidateIndex, EntityResolver

U1 = Scope(user_id="u1", agent_id="a1", session_id="s1")
U2 = Scope(user_id="u2")


@pytest.fixture(params=[False, True], ids=["fk-off", "fk-on"])
def conn(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[sqlite3.Connection]:
    connection = sqlite3.connect(tmp_path / "graph.db")
    connection.execute("PRAGMA synchronous = OFF")  # a real file, without waiting for the disk
    if request.param:
        connection.execute("PRAGMA foreign_keys = ON")
    with connection:
        store.create_graph_schema(connection)
        store.create_graph_schema(connection)  # idempotent
    yield connection
    connection.close()


def _person(eid: str, name: str, aliases: tuple[str, ...] = (), scope: Scope = U1, conf: float = 0.8) -> Entity:
    return Entity(eid, name, aliases, EntityType.PERSON, conf, scope)


def _add(conn: sqlite3.Connection, entity: Entity, *units: str) -> None:
    store.upsert_entity(conn, entity)
    for unit in units:
        store.link_entity_unit(conn, entity.id, unit, entity.confidence)


def _chat_graph(conn: sqlite3.Connection) -> None:
    """caroline -knows- melanie -painted- sunset; unit m1 says the first, m2 the second."""
    with conn:
        _add(conn, _person("car", "Caroline"), "m1")
        _add(conn, _person("mel", "Melanie", ("Mel",)), "m1", "m2")
        _add(conn, Entity("sun", "sunset", (), EntityType.CONCEPT, 0.5, U1), "m2")
        store.upsert_relation(conn, Relation("car", "mel", "knows", 0.9, ("m1",)))
        store.upsert_relation(conn, Relation("mel", "sun", "painted", 0.7, ("m2",)))


def test_entities_round_trip_with_aliases_and_scope(conn: sqlite3.Connection) -> None:
    _chat_graph(conn)
    with conn:
        _add(conn, _person("other", "Caroline", scope=U2), "m9")
    everyone = store.entities(conn)
    assert [e.id for e in everyone] == ["car", "mel", "other", "sun"]
    mel = store.entities(conn, ids=["mel"])[0]
    assert mel == _person("mel", "Melanie", ("Mel",))
    assert [e.id for e in store.entities(conn, user_id="u1")] == ["car", "mel", "sun"]
    assert [e.id for e in store.entities(conn, user_id="u1", session_id="nope")] == []
    assert [e.id for e in store.entities(conn, user_id="u2")] == ["other"]
    assert store.entities(conn, ids=[]) == []


def test_find_by_alias_is_case_insensitive_and_scoped(conn: sqlite3.Connection) -> None:
    _chat_graph(conn)
    with conn:
        _add(conn, _person("other", "Caroline", scope=U2), "m9")
    assert store.find_by_alias(conn, "MEL") == ["mel"]
    assert store.find_by_alias(conn, "caroline") == ["car", "other"]
    assert store.find_by_alias(conn, "caroline", user_id="u2") == ["other"]


def test_upserts_merge_rather_than_duplicate(conn: sqlite3.Connection) -> None:
    _chat_graph(conn)
    with conn:
        store.upsert_entity(conn, _person("mel", "Melanie Brown", ("Mellie",), conf=0.6), embedding=[1.0, 2.0])
        store.upsert_relation(conn, Relation("car", "mel", "knows", 0.95, ("m3",)))
    mel = store.entities(conn, ids=["mel"])[0]
    assert mel.name == "Melanie Brown"
    assert set(mel.aliases) == {"Mel", "Melanie", "Mellie"}  # aliases accumulate
    assert mel.confidence == 0.8  # never lowered by an upsert
    assert conn.execute("SELECT COUNT(*) FROM relations").fetchone()[0] == 2
    (knows,) = [r for r in store.relations_of_units(conn, ["m1"]) if r.label == "knows"]
    assert knows.unit_ids == ("m1", "m3") and knows.confidence == 0.95
    vectors = store.entity_embeddings(conn, ["mel", "car"])
    assert list(vectors) == ["mel"] and vectors["mel"].tolist() == [1.0, 2.0]


def test_neighbors_go_both_ways_with_the_strongest_label(conn: sqlite3.Connection) -> None:
    _chat_graph(conn)
    with conn:
        store.upsert_relation(conn, Relation("mel", "car", "friend_of", 0.95, ("m1",)))
    assert store.neighbors(conn, "mel") == [("car", 0.95), ("sun", 0.7)]
    assert store.neighbors(conn, "sun") == [("mel", 0.7)]
    assert store.neighbors(conn, "nobody") == []


def test_expansion_runs_over_the_store(conn: sqlite3.Connection) -> None:
    _chat_graph(conn)
    result = expand({"car": 1.0}, lambda eid: store.neighbors(conn, eid))
    assert result.scores() == pytest.approx({"car": 1.0, "mel": 0.45, "sun": 0.1575})


def test_cascade_deletes_what_only_the_units_attested(conn: sqlite3.Connection) -> None:
    _chat_graph(conn)
    with conn:
        outcome = store.delete_units_cascade(conn, ["m2"])
    # sunset had only m2; melanie keeps m1; "painted" had only m2.
    assert outcome == store.CascadeResult(entities_deleted=1, relations_deleted=1)
    assert [e.id for e in store.entities(conn)] == ["car", "mel"]
    assert store.neighbors(conn, "mel") == [("car", 0.9)]
    assert conn.execute("SELECT COUNT(*) FROM entity_aliases WHERE entity_id = 'sun'").fetchone()[0] == 0
    assert conn.execute("SELECT COUNT(*) FROM relation_units WHERE unit_id = 'm2'").fetchone()[0] == 0

    with conn:
        outcome = store.delete_units_cascade(conn, ["m1", "never-existed"])
    assert outcome == store.CascadeResult(entities_deleted=2, relations_deleted=1)
    for table in ("entities", "entity_aliases", "relations", "relation_units", "entity_units"):
        assert conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] == 0, table


def test_cascade_removes_relations_of_deleted_entities_even_if_still_attested(conn: sqlite3.Connection) -> None:
    with conn:
        _add(conn, _person("a", "Ann"), "m1")
        _add(conn, _person("b", "Bea"), "m1", "m2")
        store.upsert_relation(conn, Relation("a", "b", "knows", 0.9, ("m2",)))  # oddly attested by m2 only
        outcome = store.delete_units_cascade(conn, ["m1"])
    assert outcome.entities_deleted == 1 and outcome.relations_deleted == 1
    assert store.neighbors(conn, "b") == []


def test_cascade_recomputes_confidence_from_remaining_units(conn: sqlite3.Connection) -> None:
    with conn:
        _add(conn, _person("a", "Ann"), "m1")
        _add(conn, _person("b", "Bea"), "m1")
        store.link_entity_unit(conn, "a", "m2", 0.99)
        store.upsert_relation(conn, Relation("a", "b", "knows", 0.9, ("m2",)))
        store.upsert_relation(conn, Relation("a", "b", "knows", 0.4, ("m1",)))
    assert store.neighbors(conn, "a") == [("b", 0.9)]
    with conn:
        store.delete_units_cascade(conn, ["m2"])
    assert store.neighbors(conn, "a") == [("b", 0.4)]
    assert store.entities(conn, ids=["a"])[0].confidence == 0.8


def test_cascade_leaves_unlinked_records_alone_and_handles_many_units(conn: sqlite3.Connection) -> None:
    with conn:
        store.upsert_entity(conn, _person("loose", "Lou"))  # never linked to a unit
        for i in range(1200):  # more units than one SQL statement may bind
            _add(conn, Entity(f"e{i:04d}", f"thing {i}", (), EntityType.OBJECT, 0.5, U1), f"u{i}")
        outcome = store.delete_units_cascade(conn, [f"u{i}" for i in range(1200)])
    assert outcome.entities_deleted == 1200
    assert [e.id for e in store.entities(conn)] == ["loose"]


def test_writes_respect_the_callers_transaction(tmp_path: Path) -> None:
    path = tmp_path / "tx.db"
    conn = sqlite3.connect(path)
    with conn:
        store.create_graph_schema(conn)
    try:
        with conn:
            store.upsert_entity(conn, _person("a", "Ann"))
            raise RuntimeError("abort")
    except RuntimeError:
        pass
    assert store.entities(sqlite3.connect(path)) == []
    conn.close()


def test_relation_ids_are_stable() -> None:
    assert store.relation_id("a", "b", "knows") == store.relation_id("a", "b", "knows")
    assert store.relation_id("a", "b", "knows") != store.relation_id("b", "a", "knows")
    np.testing.assert_equal(len(store.relation_id("a", "b", "x")), 28)


# --------------------------------------------------------------------------- end to end

CHAT = Scope(user_id="u1")


def _ingest(conn: sqlite3.Connection, units: dict[str, str], extractor: SpacyExtractor, embed: Callable) -> None:
    """The wiring the core does: extract, resolve into existing entities, store with evidence."""
    resolver = EntityResolver(embed)
    index = CandidateIndex(store.entities(conn, user_id="u1"), scope=CHAT)
    extractions = extractor.extract(list(units.values()))
    with conn:
        for unit_id, extraction in zip(units, extractions, strict=True):
            ids: dict[str, str] = {}
            for mention in extraction.entities:
                found = resolver.resolve(mention, index, scope=CHAT).entity_id
                if found is None:
                    entity = Entity(f"ent{len(index)}", mention.name, (), mention.type, mention.confidence, CHAT)
                else:
                    (known,) = [e for e in index.entities if e.id == found]
                    entity = resolver.merge(known, mention)
                index.add(entity)
                store.upsert_entity(conn, entity)
                store.link_entity_unit(conn, entity.id, unit_id, mention.confidence)
                ids[mention.name] = entity.id
            for rel in extraction.relations:
                if ids[rel.source] != ids[rel.target]:
                    store.upsert_relation(
                        conn, Relation(ids[rel.source], ids[rel.target], rel.label, rel.confidence, (unit_id,))
                    )


def test_chat_to_graph_to_answer(
    conn: sqlite3.Connection, spacy_extractor: SpacyExtractor, embed: Callable
) -> None:
    _ingest(
        conn,
        {
            "m1": "Melanie: I painted a sunset last weekend with Caroline.",
            "m2": "Caroline: Mel, your sunset painting is beautiful!",
            "m3": "Caroline went to an LGBTQ support group in Boston.",
        },
        spacy_extractor,
        embed,
    )
    people = {e.name: e for e in store.entities(conn, user_id="u1") if e.type is EntityType.PERSON}
    assert set(people) == {"Melanie", "Caroline"}  # "Mel" merged into Melanie
    assert people["Melanie"].aliases == ("Mel",)

    seeds = find_seeds("What did Mel paint?", spacy_extractor, store.entities(conn, user_id="u1"))
    assert seeds == {people["Melanie"].id: 1.0}
    result = expand(seeds, lambda eid: store.neighbors(conn, eid), hops=1)
    names = {e.id: e.name for e in store.entities(conn, ids=[r.entity for r in result.reached])}
    assert {"sunset", "Caroline", "sunset painting"} <= set(names.values())

    with conn:
        store.delete_units_cascade(conn, ["m2"])  # forget the compliment
    remaining = {e.name for e in store.entities(conn, user_id="u1")}
    assert "sunset painting" not in remaining and {"Melanie", "Caroline", "sunset"} <= remaining
