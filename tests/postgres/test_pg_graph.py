"""Graph expansion on PostgreSQL: the neighbourhood comes from one recursive query, equal to hop-by-hop reads."""

from __future__ import annotations

from omnimem import Memory
from omnimem.results.entities import Entity, EntityType, Relation
from omnimem.mau import Scope
from omnimem.store.postgres.graph import PgGraphRows
from omnimem.store.postgres.store import PostgresStore
from tests.store.test_unit_store import unit


def test_the_recursive_neighbourhood_equals_hop_by_hop_reads(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    store.init_meta("fake", 4)
    chain = ["a", "b", "c", "d", "e"]  # a - b - c - d - e, and x linked to c; bob's y - z apart

    def write(rows: PgGraphRows) -> None:  # type: ignore[misc]
        for name in [*chain, "x"]:
            rows.upsert_entity(Entity(f"e-{name}", name.upper(), (), EntityType.PERSON, 0.9, Scope("ann")))
        rows.upsert_entity(Entity("e-y", "Y", (), EntityType.PERSON, 0.9, Scope("bob")))
        rows.upsert_entity(Entity("e-z", "Z", (), EntityType.PERSON, 0.9, Scope("bob")))
        for left, right in zip(chain, chain[1:]):
            rows.upsert_relation(Relation(f"e-{left}", f"e-{right}", "knows", 0.8, ("u1",)))
        rows.upsert_relation(Relation("e-x", "e-c", "likes", 0.6, ("u1",)))
        rows.upsert_relation(Relation("e-y", "e-z", "knows", 0.5, ("u2",)))

    store.insert([unit("u1", Scope("ann")), unit("u2", Scope("bob"))], {}, derived=[write])
    with store.graph_rows() as rows:
        near = rows.adjacency(["e-a"], 2)
        assert sorted(near) == ["e-a", "e-b", "e-c"]
        for entity, edges in near.items():
            assert edges == rows.neighbors(entity)
        assert sorted(rows.adjacency(["e-a"], 4)) == ["e-a", "e-b", "e-c", "e-d", "e-e", "e-x"]
        assert rows.adjacency(["e-y"], 3) == {"e-y": [("e-z", 0.5)], "e-z": [("e-y", 0.5)]}  # bob's, apart
    store.close()


def test_graph_search_on_postgresql(pg_url: str) -> None:
    with Memory(url=pg_url, embedder="fake", graph=True) as m:
        m.add("Caroline met Melanie in Boston.", user_id="ann")
        m.add("Melanie paints sunsets with her kids.", user_id="ann")
        assert m.flush(timeout=120)  # graph extraction is queued enrichment
        found = {e.name for e in m.entities(user_id="ann")}
        assert {"Caroline", "Melanie"} <= found
        hits = [h.unit.summary for h in m.search("What does Caroline's friend paint?", user_id="ann").hits]
        assert "Melanie paints sunsets with her kids." in hits
    with Memory(url=pg_url, embedder="fake", graph=True, graph_weight=1.0) as fused:  # the graph inside the fusion
        ctx = fused.search("What does Caroline's friend paint?", user_id="ann")
        reached = {h.unit.summary: h for h in ctx.hits if "graph" in h.sources}
        assert ctx.graph is not None and ctx.graph["added"] == []
        assert "graph" in reached["Melanie paints sunsets with her kids."].ranks


def test_a_write_between_prefetch_and_writer_leaves_no_entity_of_a_forgotten_unit(pg_url: str) -> None:
    """Prefetch hands its candidate pool to the writer only while the change counter stands still; a forget in
    between (here, on PostgreSQL, whose counter the writer reads on another connection) makes it read again."""
    session = [{"speaker": "Melanie", "text": "I painted a sunset in Boston with Caroline."}]
    with Memory(url=pg_url, embedder="fake", graph=True, enrich="sync") as m:
        assert m.graph is not None
        graph = m.graph
        m.add_dialogue(session, user_id="pool-ann", session_id="s0")
        extract = graph.extract

        def extract_then_forget(units):  # type: ignore[no-untyped-def]
            out = extract(units)  # the pool, with session s0's entities, is handed over...
            m.forget(user_id="pool-ann", session_id="s0")  # ...and then they are forgotten
            return out

        graph.extract = extract_then_forget  # type: ignore[method-assign]
        m.add_dialogue(session, user_id="pool-ann", session_id="s1")
        entities = m.entities(user_id="pool-ann")
        assert [e.name for e in entities].count("Melanie") == 1
        for entity in entities:  # each one exists and is attested by a unit that is still there
            assert graph.details(entity)["units"]
