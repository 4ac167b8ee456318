"""Search runs in the database: no over-fetch loss for a small user, and the same hits as the embedded backend."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from omnimem import Memory
from omnimem.mau import MAU, Links, Modality, Scope
from omnimem.store.base import SearchFilter
from omnimem.store.postgres import search as pg_search
from omnimem.store.postgres.search import PgSearch
from omnimem.store.postgres.store import PostgresStore
from tests.store.test_unit_store import NOW

DIM = 16


def units(user: str, count: int, rng: np.random.Generator, start: int = 0) -> list[MAU]:
    vectors = rng.standard_normal((count, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return [MAU(f"{user}-{start + i}", f"note {i} of {user}", Modality.TEXT, NOW, NOW, Scope(user), f"h-{user}-{i}",
                links=Links(), embedding=vectors[i]) for i in range(count)]


@pytest.mark.parametrize("exact_below", [pg_search.EXACT_BELOW, 10], ids=["narrow-exact", "hnsw-then-exact"])
def test_a_small_user_among_large_ones_gets_every_hit(pg_url: str, exact_below: int,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pg_search, "EXACT_BELOW", exact_below)  # 10: the HNSW path runs, and comes back short
    store = PostgresStore(pg_url)
    store.init_meta("fake", DIM)
    rng = np.random.default_rng(7)
    for user in ("big1", "big2", "big3"):
        for start in range(0, 1500, 500):
            store.insert(units(user, 500, rng, start), {})
    small = units("small", 5, rng)
    store.insert(small, {})
    search = PgSearch(store)
    for probe in small:
        assert probe.embedding is not None
        found = search.within(SearchFilter(Scope("small"))).dense(probe.embedding, 5)
        assert len(found) == 5  # every unit of the small user, none of the others
        assert {store.get_rows([rid])[rid].id for rid, _ in found} == {u.id for u in small}
        assert store.get_rows([found[0][0]])[found[0][0]].id == probe.id
    text = search.within(SearchFilter(Scope("small"))).text("note small", 10)
    assert len(text) == 5
    store.close()


DIALOGUE = [
    ("Melanie", "I painted a sunset with a palm tree last weekend."),
    ("Caroline", "Wow, I love the colours. I went to a pride parade."),
    ("Melanie", "My kids and I went camping at the lake."),
    ("Caroline", "I am researching adoption agencies for my family."),
    ("Melanie", "We roasted marshmallows and told stories by the campfire."),
    ("Caroline", "The support group gave me courage to be myself."),
    ("Melanie", "Pottery class is my new hobby; I made a bowl."),
    ("Caroline", "I want to study counseling and mental health."),
] * 3
QUERIES = ["what did Melanie paint", "camping at the lake", "adoption agencies", "pottery bowl",
           "counseling mental health", "pride parade colours", "campfire stories", "support group courage"]


def test_congruence_with_the_embedded_backend(pg_url: str, tmp_path: Path) -> None:
    """Same ingest and queries on SQLite and PostgreSQL: dense top hits identical; BM25 identical too.

    Measured here: the BM25-in-SQL ranking (same tokenizer, bm25s's Lucene formula and statistics) returns the
    same units with the same scores (to 1e-4) as bm25s: an overlap of 1.0 at k = 10 for all 24 query/scope
    pairs. Units with equal scores may come in another order (and a tie at the cut-off may keep another
    member), so rankings are compared with ties grouped; the facade's hits are the same sets.
    """
    turns = [{"speaker": s, "text": f"{t} (week {i // 8})", "time": f"2023-07-{10 + i // 8}T10:{i:02d}"}
             for i, (s, t) in enumerate(DIALOGUE)]
    with Memory(tmp_path / "lite", embedder="fake") as lite, Memory(url=pg_url, embedder="fake") as pg:
        for m in (lite, pg):
            m.add_dialogue(turns[:12], user_id="mel", session_id="s1")
            m.add_dialogue(turns[12:], user_id="mel", session_id="s2")
            m.add_dialogue(turns[:5], user_id="car", session_id="s9")
        overlaps: list[float] = []
        contexts: list[float] = []
        for query in QUERIES:
            vector = lite.embedder.embed([query])[0]
            for scope in (Scope(), Scope("mel"), Scope("mel", None, "s2")):
                a = lite.engine.state.search.within(SearchFilter(scope))
                b = pg.engine.state.search.within(SearchFilter(scope))
                assert _ranked(lite, a.dense(vector, 10)) == _ranked(pg, b.dense(vector, 10)), (query, scope)
                text_a, text_b = a.text(query, 10), b.text(query, 10)
                ranked_a, ranked_b = _ranked(lite, text_a), _ranked(pg, text_b)
                overlaps.append(sum(x == y for x, y in zip(ranked_a, ranked_b)) / max(1, len(ranked_a)))
                assert ranked_a == ranked_b, (query, scope)
            hits_a = {h.unit.summary for h in lite.search(query, user_id="mel").hits}
            hits_b = {h.unit.summary for h in pg.search(query, user_id="mel").hits}
            contexts.append(len(hits_a & hits_b) / len(hits_a | hits_b))
        assert min(overlaps) == 1.0
        assert min(contexts) == 1.0  # the same hits; equal scores may come in another order


def _ranked(m: Memory, found: list[tuple[int, float]]) -> list[tuple[float, str]]:
    """(score to 1e-4, unit) best first, equal scores in a fixed order (backends break ties differently)."""
    keyed = [(-round(score, 4), key) for key, (_, score) in zip(_ids(m, found), found)]
    ranked = [(-s, key) for s, key in sorted(keyed)]
    last = ranked[-1][0] if ranked else 0.0  # the tie at the cut-off may be cut at another member
    return [(s, key) for s, key in ranked if s > last] + [(last, "") for s, _ in ranked if s == last]


def _ids(m: Memory, found: list[tuple[int, float]]) -> list[str]:
    """Units by what they hold (ids are random per store)."""
    rows = m.store.get_rows([rid for rid, _ in found])
    return [f"{rows[rid].scope.session_id}|{rows[rid].summary}" for rid, _ in found]


def test_a_wide_search_walks_the_hnsw_index_and_a_narrow_one_does_not(pg_url: str) -> None:
    """The planner serves ORDER BY distance from HNSW only when nothing else is sorted on (a guard)."""
    import psycopg
    from pgvector.psycopg import register_vector

    store = PostgresStore(pg_url)
    store.init_meta("fake", DIM)
    rng = np.random.default_rng(3)
    store.insert(units("many", 3000, rng), {})
    wide = PgSearch(store).within(SearchFilter(Scope()))
    q = rng.standard_normal(DIM).astype(np.float32)
    with psycopg.connect(pg_url) as conn:
        register_vector(conn)
        conn.execute("ANALYZE units")
        plans = {}
        for exact in (False, True):
            order = "(embedding <#> %s) + 0, rid" if exact else "embedding <#> %s"
            plans[exact] = " ".join(r[0] for r in conn.execute(
                f"EXPLAIN SELECT rid FROM units WHERE {wide.sql} ORDER BY {order} LIMIT 300", [*wide.args, q]))
    assert "units_embedding_hnsw" in plans[False] and "units_embedding_hnsw" not in plans[True]
    assert len(wide.dense(q, 300)) == 300
    store.close()


def test_a_filter_that_drops_the_best_candidates_still_gets_its_best_k(pg_url: str,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """BM25 in SQL filters only the best CANDIDATES x k units by their rows; when the filter keeps too few of
    them (a session-scoped search whose user's other session matches better), the exact query answers."""
    with Memory(url=pg_url, embedder="fake") as m:
        trips = ("dawn", "storm", "sunset", "island", "fog", "race", "camp", "heron", "canyon", "picnic", "moon",
                 "rapids")
        m.add("kayak kayak on the lake again", user_id="ann", session_id="a")
        for word in trips:  # one add each: no turn before it in the session lends its words
            m.add(f"kayak kayak lake {word}", user_id="ann", session_id="a")
        for text in ("bought a kayak paddle", "a quiet lake with a book", "lake swim before work",
                     "rain over the lake", "painted the garage door"):
            m.add(text, user_id="ann", session_id="b")
        where = SearchFilter(Scope("ann", None, "b"))
        fallbacks: list[int] = []
        first_round = pg_search.PgCandidates._had_candidates

        def counted(conn: object, head: str, common: list[object], limit: int) -> bool:
            fallbacks.append(limit)
            return first_round(conn, head, common, limit)

        monkeypatch.setattr(pg_search.PgCandidates, "_had_candidates", staticmethod(counted))
        found = m.engine.state.search.within(where).text("kayak lake", 3)
        assert fallbacks == [pg_search.CANDIDATES * 3]  # the best 6 were all session a's: none passed the filter
        monkeypatch.setattr(pg_search, "CANDIDATES", 1000)  # every candidate filtered at once: the exact answer
        assert m.engine.state.search.within(where).text("kayak lake", 3) == found
        rows = m.store.get_rows([rid for rid, _ in found])
        assert len(found) == 3 and {rows[rid].scope.session_id for rid, _ in found} == {"b"}
        assert [score for _, score in found] == sorted((score for _, score in found), reverse=True)
        whole = m.engine.state.search.within(SearchFilter(Scope("ann"))).text("kayak lake", 3)
        assert {m.store.get_rows([rid])[rid].scope.session_id for rid, _ in whole} == {"a"}  # no second query


def test_a_search_asks_for_its_dense_and_text_lists_side_by_side(pg_url: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """On PostgreSQL the first pass's two queries run at once, each on its own connection: the dense query here
    waits for the text query to begin, which it could never see if they ran one after the other."""
    import threading

    began = threading.Event()
    seen: list[bool] = []
    dense, text = pg_search.PgCandidates.dense, pg_search.PgCandidates.text

    def slow_dense(self: pg_search.PgCandidates, vector: object, k: int) -> list[tuple[int, float]]:
        seen.append(began.wait(10))
        return dense(self, vector, k)  # type: ignore[arg-type]

    def marked_text(self: pg_search.PgCandidates, query: str, k: int) -> list[tuple[int, float]]:
        began.set()
        return text(self, query, k)

    monkeypatch.setattr(pg_search.PgCandidates, "dense", slow_dense)
    monkeypatch.setattr(pg_search.PgCandidates, "text", marked_text)
    with Memory(url=pg_url, embedder="fake") as m:
        m.add("The tram up the hill is lovely.", user_id="u")
        m.add("We took the ferry across the bay.", user_id="u")
        hits = m.search("tram hill", user_id="u").hits
    assert seen and seen[0] is True
    assert hits and "tram" in hits[0].unit.summary


@pytest.mark.parametrize("user", [None, "ann"], ids=["global", "one-user"])
def test_bm25_reads_each_query_terms_postings_by_a_scan_keyed_by_that_term(pg_url: str, user: str | None) -> None:
    """Each query term's postings come from a scan keyed by that term, in a loop over the query's few terms, even
    where the planner is told to avoid loops: never a join over all postings, which it chose when it misjudged
    the terms' sizes at 100k units (a hash of the postings that spilled to disk, or a merge over the whole
    posting index). The scores equal a plain per-posting BM25 sum over the same postings."""
    import psycopg

    with Memory(url=pg_url, embedder="fake") as m:
        for i in range(60):
            text = f"kayak trip {i} on the lake" if i % 3 else f"lake swim number {i}"
            m.add(text, user_id="ann" if i % 2 else "bob")
        args = [["kayak", "lake"], [1, 2], pg_search.K1, pg_search.B, pg_search.B, *([user] if user else [])]
        head = pg_search.scored_sql(user)
        with psycopg.connect(pg_url) as conn:
            conn.execute("ANALYZE")
            conn.execute("SET enable_nestloop = off")  # a planner that could join the postings whole now would
            plan = "\n".join(r[0] for r in conn.execute(f"EXPLAIN {head} SELECT rid, score FROM scored", args))
            scores = dict(conn.execute(f"{head} SELECT rid, score FROM scored", args).fetchall())
            own = "" if user is None else "AND t.tenant = %s"
            plain = dict(conn.execute(
                f"""SELECT t.rid, SUM(q.weight * ln(1 + (c.docs::float8 - d.df + 0.5) / (d.df + 0.5)) * t.tf
                           / (t.tf + %s * (1 - %s + %s * t.doc_len / (GREATEST(c.doc_len, 1)::float8 / c.docs)))
                           )::float4
                    FROM unnest(%s::text[], %s::int[]) AS q(term, weight) JOIN term_df d ON d.term = q.term
                         CROSS JOIN counters c JOIN terms t ON t.term = q.term {own}
                    GROUP BY t.rid""",
                [pg_search.K1, pg_search.B, pg_search.B, ["kayak", "lake"], [1, 2], *([user] if user else [])]
            ).fetchall())
    lines = plan.splitlines()
    postings = next(i for i, line in enumerate(lines) if " on terms p" in line)
    assert "(term = idf.term)" in lines[postings + 1], plan  # the scan's key is one query term: a loop per term
    assert scores == plain and len(scores) == (60 if user is None else 30)


def test_short_messages_fill_the_budget_on_postgresql_too(pg_url: str) -> None:
    """The deeper reading and the names left out (``elide_speakers="auto"``) on the database backend."""
    from itertools import islice

    from benchmarks.retrieval.packing_cost import short_chats
    from omnimem.tokens import count_tokens

    with Memory(url=pg_url, embedder="fake-exact") as m:
        for user, session, dialogue in islice(short_chats(2000), 2):
            m.add_dialogue(dialogue, user_id=user, session_id=session)
        ctx = m.search("who has the kite?", budget=1000, user_id="user-1")
    with Memory(url=pg_url, embedder="fake-exact", depth=50) as first:
        cut = first.search("who has the kite?", budget=1000, user_id="user-1")
    assert not cut.dropped and cut.tokens < 800  # the first depth alone leaves room
    assert ctx.dropped and 900 < ctx.tokens <= 1000 and len(ctx.hits) > len(cut.hits)
    assert ctx.tokens == count_tokens(ctx.render()) and {h.unit.scope.user_id for h in ctx.hits} == {"user-1"}
    assert any(not line.startswith("[") and ": " not in line for line in ctx.lines())  # a name left out
