"""Bulk loading into PostgreSQL (``BulkLoader``) and the document frequencies that BM25 reads (``term_df``)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import psycopg
import pytest

from omnimem import Memory
from omnimem.errors import InvalidInputError, StoreError
from omnimem.mau import MAU, Scope
from omnimem.store.postgres.bulk import BulkLoader
from omnimem.store.postgres.migrate import migrate
from omnimem.store.base import SearchFilter
from omnimem.store.postgres.schema import MIGRATIONS, SCHEMA_VERSION
from tests.postgres_server import PostgresServer

MIGRATION_8 = next(name for number, name, _ in MIGRATIONS if number == 8)

DIALOGUE = [
    ("ann", "s1", "I went kayaking on the lake with Omar last Sunday."),
    ("ann", "s1", "Omar lent me his old red kayak until May."),
    ("ann", "s2", "My sourdough starter finally bubbled this morning."),
    ("bob", "s1", "Bob repaired the vintage bicycle for the marathon."),
    ("bob", "s1", "The marathon route passes the lake and the museum."),
    ("bob", "s2", "Bob keeps bees in the garden behind the museum."),
]


def _embedded(path: Path) -> list[MAU]:
    """An embedded store with a few dialogues; its units in row order, vectors included."""
    with Memory(path, embedder="fake") as m:
        for user, session, text in DIALOGUE:
            m.add_dialogue([{"speaker": user, "text": text}], user_id=user, session_id=session)
        rows = m.store.get_rows(range(1, 100))
    return [rows[r] for r in sorted(rows)]


def _index(url: str) -> str | None:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'units_embedding_hnsw'").fetchone()
    return None if row is None else str(row[0])


def _df_matches_postings(url: str) -> None:
    with psycopg.connect(url) as conn:
        kept = dict(conn.execute("SELECT term, df FROM term_df").fetchall())
        counted = dict(conn.execute("SELECT term, COUNT(*) FROM terms GROUP BY term").fetchall())
    assert kept == counted


def test_a_bulk_loaded_store_searches_like_the_embedded_store_it_came_from(pg_url: str, tmp_path: Path) -> None:
    units = _embedded(tmp_path / "mem")
    with Memory(url=pg_url, embedder="fake") as pg:
        with BulkLoader(pg.store, maintenance_work_mem="64MB") as load:  # type: ignore[arg-type]
            assert _index(pg_url) is None  # the index is away during the load
            load.units(units[:4])
            load.units(units[4:])
        assert load.loaded == len(units) and load.build_seconds is not None and load.build_seconds >= 0
        assert "hnsw" in (_index(pg_url) or "")
        assert [u.id for u in pg.store.get([u.id for u in units])] == [u.id for u in units]
        assert [e.action for e in pg.history(units[0].id)] == ["import"]
        with Memory(tmp_path / "mem", read_only=True) as lite:
            for query, user in (("kayak lake", "ann"), ("marathon museum", None), ("bees", "bob")):
                want = lite.search(query, user_id=user, top_k=5)
                got = pg.search(query, user_id=user, top_k=5)
                assert [h.unit.id for h in got.hits] == [h.unit.id for h in want.hits]
                assert [h.score for h in got.hits] == pytest.approx([h.score for h in want.hits], abs=1e-4)
        pg.add("Ann sold the kayak in June", user_id="ann", session_id="s1")  # the normal path continues
        assert pg.get(pg.search("sold kayak June", user_id="ann").hits[0].unit.id).links.prev_id == units[1].id
    _df_matches_postings(pg_url)
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'vector_index'").fetchone() is None


def test_copy_from_moves_every_unit_of_an_embedded_store_with_its_raw_content(pg_url: str, tmp_path: Path) -> None:
    import io

    from PIL import Image

    image = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 30, 30)).save(image, format="PNG")
    with Memory(tmp_path / "mem", embedder="fake") as lite:
        for user, session, text in DIALOGUE:
            lite.add(text, user_id=user, session_id=session)
        photo = lite.add_image(image.getvalue(), "a red square", user_id="ann", session_id="s1")
        lite.delete(lite.search("sourdough", user_id="ann").hits[0].unit.id, user_id="ann")  # a gap in the rows
        want = {u.id: u for u in lite.store.get(lite.store.ids_in_scope(Scope()))}
        with Memory(url=pg_url, embedder="fake") as pg:
            with BulkLoader(pg.store) as load:  # type: ignore[arg-type]
                assert load.copy_from(lite.store, batch=2) == len(want) == len(DIALOGUE)
            got = {u.id: u for u in pg.store.get(list(want))}
            assert {i: (u.summary, u.scope, u.links.prev_id) for i, u in got.items()} == {
                i: (u.summary, u.scope, u.links.prev_id) for i, u in want.items()}
            assert pg.store.read_raw(got[photo.id or ""].raw_ref or "") == image.getvalue()
    _df_matches_postings(pg_url)


def test_a_failed_batch_leaves_nothing_of_itself_and_the_index_is_built_for_the_rest(pg_url: str,
                                                                                   tmp_path: Path) -> None:
    units = _embedded(tmp_path / "mem")
    with Memory(url=pg_url, embedder="fake") as pg:
        with pytest.raises(StoreError, match="nothing was stored"):
            with BulkLoader(pg.store) as load:  # type: ignore[arg-type]
                load.units(units[:3])
                load.units([*units[3:], units[0]])  # a unit already stored: its id is taken
        assert load.loaded == 3 and "hnsw" in (_index(pg_url) or "")
        assert pg.stats()["units"] == 3
    _df_matches_postings(pg_url)


def test_units_without_their_vectors_are_refused(pg_url: str, tmp_path: Path) -> None:
    units = _embedded(tmp_path / "mem")
    with Memory(url=pg_url, embedder="fake") as pg, BulkLoader(pg.store) as load:  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError, match="no vector"):
            load.units([replace(units[0], embedding=None)])
        with pytest.raises(InvalidInputError, match="384-d"):
            load.units([replace(units[0], embedding=np.ones(8, dtype=np.float32))])
        assert load.loaded == 0


def test_a_load_that_died_before_the_build_gets_its_index_at_the_next_open(pg_url: str, tmp_path: Path) -> None:
    units = _embedded(tmp_path / "mem")
    with Memory(url=pg_url, embedder="fake") as pg:
        load = BulkLoader(pg.store)
        load.__enter__()
        load.units(units)  # and the process dies here: no __exit__, no index
    assert _index(pg_url) is None
    with Memory(url=pg_url, read_only=True) as ro:  # a reader cannot build it, but still finds everything
        assert len(ro.search("kayak", user_id="ann").hits) >= 1
    with Memory(url=pg_url, embedder="fake") as pg:
        assert "hnsw" in (_index(pg_url) or "")
        assert pg.stats()["units"] == len(units)
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'vector_index'").fetchone() is None


def test_an_index_built_with_other_graph_parameters_keeps_them(pg_url: str, tmp_path: Path) -> None:
    units = _embedded(tmp_path / "mem")
    with Memory(url=pg_url, embedder="fake") as pg:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("DROP INDEX units_embedding_hnsw")
            conn.execute("CREATE INDEX units_embedding_hnsw ON units USING hnsw (embedding vector_ip_ops) "
                         "WITH (m = 24, ef_construction = 80)")
        with BulkLoader(pg.store) as load:  # type: ignore[arg-type]
            load.units(units[:3])
        assert "m='24'" in (_index(pg_url) or "")
        died = BulkLoader(pg.store)
        died.__enter__()
        died.units(units[3:])
    with Memory(url=pg_url, embedder="fake"):  # resumed with the same parameters
        assert "ef_construction='80'" in (_index(pg_url) or "")


def test_a_read_only_store_cannot_bulk_load(pg_url: str) -> None:
    with Memory(url=pg_url, embedder="fake"):
        pass
    with Memory(url=pg_url, read_only=True) as ro, pytest.raises(StoreError, match="read-only"):
        BulkLoader(ro.store)


def test_document_frequencies_follow_every_write_and_delete(pg_url: str) -> None:
    with Memory(url=pg_url, embedder="fake") as m:
        ids = [m.add(text, user_id=user, session_id=session).id for user, session, text in DIALOGUE]
        _df_matches_postings(pg_url)
        m.delete(ids[1] or "", user_id="ann")  # re-indexes the next turn of its session too
        _df_matches_postings(pg_url)
        m.update(ids[3] or "", text="Bob sold the bicycle", user_id="bob")
        _df_matches_postings(pg_url)
        m.forget(user_id="bob")
        _df_matches_postings(pg_url)
    with psycopg.connect(pg_url) as conn:  # no word of forgotten text stays in the statistics
        assert conn.execute("SELECT COUNT(*) FROM term_df WHERE term IN ('bicycl', 'marathon', 'bee')"
                            ).fetchone()[0] == 0


def test_migration_5_counts_the_document_frequencies_of_existing_postings(postgres: PostgresServer) -> None:
    url = postgres.fresh(migrated=False)
    with psycopg.connect(url) as conn:
        migrate(conn, target=4)
        conn.execute("INSERT INTO terms (tenant, rid, term, tf) VALUES ('ann', 1, 'kayak', 2), ('ann', 2, 'kayak', 1),"
                     " ('bob', 3, 'kayak', 1), ('bob', 3, 'lake', 1)")
        conn.commit()
        migrate(conn)
        assert dict(conn.execute("SELECT term, df FROM term_df").fetchall()) == {"kayak": 3, "lake": 1}
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
    postgres.drop(url)


def test_pg_load_copies_an_embedded_store_into_an_empty_database(pg_url: str, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from typer.testing import CliRunner

    from omnimem.cli.commands import app

    monkeypatch.setenv("OMNIMEM_EMBEDDER", "fake")
    with Memory(tmp_path / "mem", embedder="fake") as lite:
        for user, session, text in DIALOGUE:
            lite.add(text, user_id=user, session_id=session)
        old = lite.add("Ann's gate is green", user_id="ann").id or ""
        lite.update(old, text="Ann's gate is blue now", user_id="ann")  # a superseded version comes along
    runner = CliRunner()
    res = runner.invoke(app, ["pg-load", str(tmp_path / "mem"), "--url", pg_url, "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["units"] == len(DIALOGUE) + 2
    with Memory(url=pg_url, read_only=True) as pg:
        assert pg.search("gate blue", user_id="ann").hits[0].unit.summary == "Ann's gate is blue now"
        assert pg.get(old, user_id="ann").superseded_by is not None
    again = runner.invoke(app, ["pg-load", str(tmp_path / "mem"), "--url", pg_url])
    assert again.exit_code == 2 and again.output.count("\n") == 1 and "already holds units" in again.output
    missing = runner.invoke(app, ["pg-load", str(tmp_path / "nothing"), "--url", pg_url])
    assert missing.exit_code != 0 and missing.output.count("\n") == 1


def test_text_search_reads_covering_indexes_and_a_bulk_load_leaves_them_usable(pg_url: str, tmp_path: Path) -> None:
    """Migrations 6 and 8: postings with their units' lengths, and the best candidates' filter columns, come
    from indexes alone (index-only scans), which needs the visibility map a bulk load's closing ``VACUUM ANALYZE``
    sets, and the planner statistics it gathers."""
    units = _embedded(tmp_path / "mem")
    with Memory(url=pg_url, embedder="fake") as pg:
        with BulkLoader(pg.store, maintenance_work_mem="64MB") as load:  # type: ignore[arg-type]
            load.units(units)
        found = pg.search("kayak lake", user_id="ann").hits
        assert found and "kayak" in found[0].unit.summary
    with psycopg.connect(pg_url) as conn:
        defs = dict(conn.execute("SELECT indexname, indexdef FROM pg_indexes WHERE indexname IN "
                                 "('terms_term', 'units_rid')").fetchall())
        assert "INCLUDE (tenant, rid, tf, doc_len)" in defs["terms_term"]
        assert "UNIQUE" in defs["units_rid"] and "INCLUDE (tenant, doc_len, superseded_by)" in defs["units_rid"]
        settled = dict(conn.execute("SELECT relname, last_vacuum IS NOT NULL AND last_analyze IS NOT NULL "
                                    "FROM pg_stat_user_tables WHERE relname IN ('units', 'terms')").fetchall())
        assert settled == {"units": True, "terms": True}
        conn.execute("SET enable_seqscan = off")  # a few rows: without these the planner reads the tables whole
        conn.execute("SET enable_bitmapscan = off")
        plan = "\n".join(r[0] for r in conn.execute(
            "EXPLAIN SELECT t.rid, t.tf, t.doc_len, u.superseded_by FROM terms t JOIN units u ON u.rid = t.rid "
            "WHERE t.term = 'kayak' AND u.superseded_by IS NULL").fetchall())
        assert "Index Only Scan using terms_term" in plan and "Index Only Scan using units_rid" in plan


def test_migration_8_gives_existing_postings_their_units_lengths(pg_url: str) -> None:
    """A store written before postings carried lengths (schema 7) searches the same once migrated."""
    with Memory(url=pg_url, embedder="fake") as pg:
        for user, session, text in DIALOGUE:
            pg.add(text, user_id=user, session_id=session)
        before = [pg.engine.state.search.within(SearchFilter(Scope(u))).text("kayak lake marathon", 10)
                  for u in (None, "ann")]
    with psycopg.connect(pg_url) as conn:  # back to schema 7: postings without lengths, its covering index
        conn.execute("DROP INDEX terms_term")
        conn.execute("ALTER TABLE terms DROP COLUMN doc_len")
        conn.execute("CREATE INDEX terms_term ON terms (term) INCLUDE (tenant, rid, tf)")
        conn.execute("UPDATE meta SET value = '7' WHERE key = 'schema_version'")
        conn.commit()
        assert migrate(conn)[0] == (8, MIGRATION_8)  # then 9, provenance (tests/postgres/test_pg_provenance.py)
        mismatched = conn.execute("SELECT COUNT(*) FROM terms t JOIN units u ON u.rid = t.rid "
                                  "WHERE t.doc_len <> u.doc_len OR t.doc_len = 0").fetchone()[0]
        assert mismatched == 0
    with Memory(url=pg_url, embedder="fake") as pg:
        after = [pg.engine.state.search.within(SearchFilter(Scope(u))).text("kayak lake marathon", 10)
                 for u in (None, "ann")]
    assert after == before and before[0]
