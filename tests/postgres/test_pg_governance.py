"""Governance on PostgreSQL: forget leaves no residue, migrations upgrade data, tenancy is in the schema."""

from __future__ import annotations

import re
from pathlib import Path

import psycopg
import pytest

from omnimem import Memory
from omnimem.errors import StoreError
from omnimem.store.postgres.migrate import migrate
from omnimem.store.postgres.schema import MIGRATIONS, REFERENCE_TABLES, SCHEMA_VERSION, TENANT_TABLES
from tests.postgres_server import PostgresServer

SECRET = "Quixotrellis"  # a word no other text holds


def _tables(conn: psycopg.Connection) -> list[str]:
    return [r[0] for r in conn.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1")]


def test_forget_is_atomic_and_leaves_nothing_after_vacuum(pg_url: str) -> None:
    image = _png_with(SECRET)  # raw bytes in the blobs table
    with Memory(url=pg_url, embedder="fake", graph=True) as m:
        for text in (f"Anna met {SECRET} Smith in Paris.", f"{SECRET} Smith gave Anna a book about Lisbon.",
                     f"Anna says {SECRET} likes jazz."):
            m.add(text, user_id="anna", session_id="s1")
        m.add_image(image, "a photo of the party", user_id="anna", session_id="s1")
        m.add("Bob went sailing in Lisbon.", user_id="bob")
        assert m.flush(timeout=120)  # graph extraction is queued enrichment: let it land first
        with psycopg.connect(pg_url) as conn:  # the graph and blobs hold the secret before
            assert conn.execute("SELECT COUNT(*) FROM entities WHERE name ILIKE %s", (f"%{SECRET}%",)).fetchone()[0]
            assert conn.execute("SELECT COUNT(*) FROM blobs").fetchone()[0] == 1
        assert m.forget(user_id="anna") == 4
        assert m.stats()["units"] == 1
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("VACUUM")
        needles = [SECRET.lower(), "quixotrelli", SECRET.encode().hex()]  # text, its stem, the blob's bytes
        for table in _tables(conn):
            rows = conn.execute(f"SELECT t::text FROM {table} t").fetchall()
            text = "\n".join(r[0] for r in rows).lower()
            assert not any(n in text for n in needles), table
        assert conn.execute("SELECT COUNT(*) FROM units WHERE user_id = 'anna'").fetchone()[0] == 0
        assert conn.execute("SELECT COUNT(*) FROM terms WHERE tenant = 'anna'").fetchone()[0] == 0
        assert conn.execute("SELECT action FROM audit_log ORDER BY seq DESC LIMIT 1").fetchone()[0] == "forget"


def _png_with(text: str) -> bytes:
    """A small PNG whose bytes carry ``text`` (in a tEXt chunk)."""
    import io

    from PIL import Image, PngImagePlugin

    info = PngImagePlugin.PngInfo()
    info.add_text("Comment", text)
    out = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 30, 30)).save(out, format="PNG", pnginfo=info)
    return out.getvalue()


def test_the_audit_log_is_append_only_in_the_database(pg_url: str) -> None:
    with Memory(url=pg_url, embedder="fake") as m:
        m.add("a note", user_id="u")
    with psycopg.connect(pg_url) as conn:
        for sql in ("UPDATE audit_log SET actor = 'x'", "DELETE FROM audit_log", "TRUNCATE audit_log",
                    "DELETE FROM audit_units"):
            with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
                conn.execute(sql)
            conn.rollback()


def test_a_database_at_the_previous_schema_is_upgraded_with_its_data(postgres: PostgresServer) -> None:
    url = postgres.fresh(migrated=False)
    with psycopg.connect(url) as conn:
        assert migrate(conn, target=SCHEMA_VERSION - 1) == [(n, name) for n, name, _ in MIGRATIONS[:-1]]
        conn.execute("INSERT INTO meta(key, value) VALUES ('embedder', 'fake'), ('dim', '384'), "
                     "('sparse_context', '1')")
        conn.execute("ALTER TABLE units ALTER COLUMN embedding TYPE vector(384)")
        conn.execute(
            "INSERT INTO units (tenant, id, summary, modality, record_time, user_id, content_hash, embedding, "
            "record_ts, doc_len) VALUES ('ann', 'u1', 'Ann keeps bees on the roof', 'text', "
            "'2024-01-01T00:00:00+00:00', 'ann', 'h1', %s::vector, 1704067200, 0)", (str([0.05] * 384),))
        conn.commit()
    with Memory(url=url, embedder="fake") as m:  # opening migrates the rest
        assert m.store.meta() is not None and m.store.meta().schema_version == SCHEMA_VERSION  # type: ignore[union-attr]
        assert m.get("u1", user_id="ann").summary == "Ann keeps bees on the roof"
        m.add("Ann sells honey at the market", user_id="ann")
        assert len(m.search("honey bees", user_id="ann").hits) == 2
    with psycopg.connect(url) as conn:
        policies = {r[0] for r in conn.execute("SELECT tablename FROM pg_policies")}
        assert policies == set(TENANT_TABLES)
    postgres.drop(url)


def test_every_table_a_query_joins_carries_the_tenant_column(pg_url: str) -> None:
    """Citus co-locates tables distributed by the tenant; a join between them must include it."""
    sources = "\n".join(p.read_text() for p in (Path(__file__).parents[2] / "omnimem/store/postgres").glob("*.py"))
    joined: set[str] = set()
    for query in re.findall(r'"""(.*?)"""|f?"((?:[^"\\]|\\.)*JOIN(?:[^"\\]|\\.)*)"', sources, flags=re.S):
        text = " ".join(part for part in query if part)
        if " JOIN " not in text:
            continue
        joined.update(re.findall(r"\b(?:FROM|JOIN)\s+([a-z_]+)\b", text))
    ctes = {"q", "idf", "c", "scored", "best", "walk", "unnest", "nodes", "edges"}
    joined -= ctes | set(REFERENCE_TABLES)  # reference tables are copied to every node
    assert {"units", "terms", "clip_vectors", "entities", "entity_aliases", "relations"} <= joined
    with psycopg.connect(pg_url) as conn:
        for table in sorted(joined):
            columns = {r[0] for r in conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = %s", (table,))}
            assert "tenant" in columns, table
            key = conn.execute(
                "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
                "AND a.attnum = i.indkey[0] WHERE i.indrelid = %s::regclass AND i.indisprimary", (table,)).fetchone()
            assert key is not None and key[0] in ("tenant", "seq"), table  # the tenant leads the primary key


def test_a_connection_bound_to_one_user_sees_and_writes_only_that_user(pg_url: str, postgres: PostgresServer
                                                                       ) -> None:
    with Memory(url=pg_url, embedder="fake") as admin:
        admin.add("Ann plants tulips", user_id="ann")
        bob = admin.add("Bob plants roses", user_id="bob").id
    # row-level security binds ordinary roles (a superuser bypasses it): the application's own login
    postgres.admin("DO $$ BEGIN CREATE ROLE omnimem_app LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$")
    with psycopg.connect(pg_url, autocommit=True) as conn:
        for grant in ("GRANT ALL ON ALL TABLES IN SCHEMA public TO omnimem_app",
                      "GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO omnimem_app"):
            conn.execute(grant)
    app_url = pg_url.replace("postgresql://postgres:@", "postgresql://omnimem_app@")
    with Memory(url=app_url + "&omnimem_user=ann", embedder="fake") as ann:
        assert [h.unit.summary for h in ann.search("plants").hits] == ["Ann plants tulips"]
        assert ann.store.get([bob]) == []  # not even by id
        with pytest.raises(StoreError, match="bound to one user"):
            ann.add("Ann writes into Bob's memory", user_id="bob")
        assert ann.stats()["units"] == 1
    with Memory(url=pg_url, embedder="fake") as admin:
        assert admin.stats()["units"] == 2
