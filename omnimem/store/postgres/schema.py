"""Named, ordered migrations of the PostgreSQL schema: the one place for its DDL.

Every table a tenant's query touches carries ``tenant`` (the unit's
``user_id``, or ``''`` for units without one) and leads its composite
indexes with it, so the schema can be distributed by user with Citus
(``docs/postgres.md``) and bound to one user by row-level security
(migration 2). The embedding column gets its dimension, and the HNSW index,
when the store records its embedder (:func:`vector_index_ddl`).
"""

from __future__ import annotations

import time
from typing import Any

from omnimem.store.jobs import ADD_EXPIRIES
from omnimem.store.postgres.jobs import SCHEMA as JOB_SCHEMA
from omnimem.store.postgres.keys import SCHEMA as KEY_SCHEMA

SCHEMA_VERSION = 9

TENANT_TABLES = (  # tables holding one tenant's rows: RLS policies and Citus distribution apply to these
    "units", "terms", "clip_vectors", "entities", "entity_aliases", "entity_units", "relations", "relation_units",
    "scope_keys", "tombstones_keyed", "forgotten_scopes", "audit_log", "audit_units",
)

REFERENCE_TABLES = ("meta", "counters", "term_df", "filter_stats", "api_keys", "api_sessions", "jobs")  # small global tables: Citus reference tables
"""Tables every node may hold whole; joining one is local on any shard (see docs/postgres.md)."""

_APPEND_ONLY = """CREATE OR REPLACE FUNCTION omnimem_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'the audit log is append-only'; END $$"""

INITIAL: list[str] = [
    "CREATE EXTENSION IF NOT EXISTS vector",
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "INSERT INTO meta(key, value) VALUES ('format', 'omnimem') ON CONFLICT DO NOTHING",
    # the change counter and the BM25 collection statistics, moved in every write's transaction
    """CREATE TABLE IF NOT EXISTS counters (
        one BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one),
        seq BIGINT NOT NULL DEFAULT 0, docs BIGINT NOT NULL DEFAULT 0, doc_len BIGINT NOT NULL DEFAULT 0)""",
    "INSERT INTO counters(one) VALUES (TRUE) ON CONFLICT DO NOTHING",
    """CREATE TABLE IF NOT EXISTS units (
        rid BIGSERIAL,
        tenant TEXT NOT NULL,
        id TEXT NOT NULL,
        summary TEXT NOT NULL,
        modality TEXT NOT NULL,
        speaker TEXT,
        event_time TEXT,
        record_time TEXT NOT NULL,
        user_id TEXT,
        agent_id TEXT,
        session_id TEXT,
        prev_id TEXT,
        source_ids TEXT NOT NULL DEFAULT '[]',
        raw_ref TEXT,
        content_hash TEXT NOT NULL,
        metadata TEXT NOT NULL DEFAULT '{}',
        embedding vector NOT NULL,
        record_ts DOUBLE PRECISION NOT NULL,
        superseded_by TEXT,
        superseded_at TEXT,
        superseded_ts DOUBLE PRECISION,
        doc_len INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (tenant, rid),
        UNIQUE (tenant, id)
    )""",
    "CREATE UNIQUE INDEX IF NOT EXISTS units_rid ON units (rid)",
    "CREATE UNIQUE INDEX IF NOT EXISTS units_id ON units (id)",
    "CREATE INDEX IF NOT EXISTS units_scope ON units (tenant, user_id, agent_id, session_id, rid)",
    "CREATE INDEX IF NOT EXISTS units_hash ON units (tenant, content_hash)",
    "CREATE INDEX IF NOT EXISTS units_hash_any ON units (content_hash)",
    "CREATE INDEX IF NOT EXISTS units_prev ON units (prev_id)",  # looked up by id alone: no tenant in front
    "CREATE INDEX IF NOT EXISTS units_superseded ON units (superseded_by)",
    "CREATE INDEX IF NOT EXISTS units_raw ON units (raw_ref)",
    # BM25 postings: the stemmed terms of each unit's search text, with their counts
    """CREATE TABLE IF NOT EXISTS terms (
        tenant TEXT NOT NULL, rid BIGINT NOT NULL, term TEXT NOT NULL, tf INTEGER NOT NULL,
        PRIMARY KEY (tenant, term, rid))""",
    "CREATE INDEX IF NOT EXISTS terms_term ON terms (term)",
    "CREATE INDEX IF NOT EXISTS terms_rid ON terms (tenant, rid)",
    # the cold tier: content-addressed raw bytes (shared by content, so keyed by the hash alone)
    "CREATE TABLE IF NOT EXISTS blobs (ref TEXT PRIMARY KEY, data BYTEA NOT NULL)",
    """CREATE TABLE IF NOT EXISTS clip_vectors (
        tenant TEXT NOT NULL, unit_id TEXT NOT NULL, model TEXT NOT NULL, vector vector NOT NULL,
        PRIMARY KEY (tenant, unit_id))""",
    "CREATE TABLE IF NOT EXISTS filter_stats (name TEXT PRIMARY KEY, value DOUBLE PRECISION NOT NULL DEFAULT 0)",
    # the knowledge graph
    """CREATE TABLE IF NOT EXISTS entities (
        tenant TEXT NOT NULL, id TEXT NOT NULL, user_id TEXT, agent_id TEXT, session_id TEXT,
        name TEXT NOT NULL, type TEXT NOT NULL, confidence DOUBLE PRECISION NOT NULL, embedding BYTEA,
        PRIMARY KEY (tenant, id))""",
    "CREATE UNIQUE INDEX IF NOT EXISTS entities_id ON entities (id)",
    "CREATE INDEX IF NOT EXISTS entities_scope ON entities (tenant, user_id, agent_id, session_id)",
    """CREATE TABLE IF NOT EXISTS entity_aliases (
        tenant TEXT NOT NULL, entity_id TEXT NOT NULL, alias_key TEXT NOT NULL, alias TEXT NOT NULL,
        pos BIGSERIAL, PRIMARY KEY (tenant, entity_id, alias_key))""",
    "CREATE INDEX IF NOT EXISTS entity_aliases_key ON entity_aliases (tenant, alias_key)",
    "CREATE INDEX IF NOT EXISTS entity_aliases_entity ON entity_aliases (entity_id)",
    """CREATE TABLE IF NOT EXISTS relations (
        tenant TEXT NOT NULL, id TEXT NOT NULL, source_entity TEXT NOT NULL, target_entity TEXT NOT NULL,
        label TEXT NOT NULL, confidence DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (tenant, id), UNIQUE (tenant, source_entity, target_entity, label))""",
    "CREATE INDEX IF NOT EXISTS relations_source ON relations (source_entity)",
    "CREATE INDEX IF NOT EXISTS relations_target ON relations (target_entity)",
    """CREATE TABLE IF NOT EXISTS relation_units (
        tenant TEXT NOT NULL, relation_id TEXT NOT NULL, unit_id TEXT NOT NULL,
        confidence DOUBLE PRECISION NOT NULL, PRIMARY KEY (tenant, relation_id, unit_id))""",
    "CREATE INDEX IF NOT EXISTS relation_units_unit ON relation_units (unit_id)",
    "CREATE INDEX IF NOT EXISTS relation_units_relation ON relation_units (relation_id)",
    """CREATE TABLE IF NOT EXISTS entity_units (
        tenant TEXT NOT NULL, entity_id TEXT NOT NULL, unit_id TEXT NOT NULL,
        confidence DOUBLE PRECISION NOT NULL, PRIMARY KEY (tenant, entity_id, unit_id))""",
    "CREATE INDEX IF NOT EXISTS entity_units_unit ON entity_units (unit_id)",
    "CREATE INDEX IF NOT EXISTS entity_units_entity ON entity_units (entity_id, confidence DESC)",
    "CREATE INDEX IF NOT EXISTS clip_vectors_unit ON clip_vectors (unit_id)",
    # governance: audit log (append-only, enforced by triggers), keyed tombstones
    """CREATE TABLE IF NOT EXISTS audit_log (
        seq BIGSERIAL PRIMARY KEY, tenant TEXT NOT NULL, time TEXT NOT NULL, actor TEXT NOT NULL,
        action TEXT NOT NULL, unit_ids TEXT NOT NULL, scope TEXT NOT NULL, reason TEXT,
        details TEXT NOT NULL DEFAULT '{}')""",
    "CREATE INDEX IF NOT EXISTS audit_log_tenant ON audit_log (tenant, seq)",
    "CREATE TABLE IF NOT EXISTS audit_units (tenant TEXT NOT NULL, seq BIGINT NOT NULL, unit_id TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS audit_units_unit ON audit_units (tenant, unit_id)",
    "CREATE INDEX IF NOT EXISTS audit_units_unit_any ON audit_units (unit_id)",
    _APPEND_ONLY,
    *[f"""CREATE OR REPLACE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table}
          FOR EACH ROW EXECUTE FUNCTION omnimem_append_only()""" for table in ("audit_log", "audit_units")],
    *[f"""CREATE OR REPLACE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table}
          FOR EACH STATEMENT EXECUTE FUNCTION omnimem_append_only()""" for table in ("audit_log", "audit_units")],
    """CREATE TABLE IF NOT EXISTS scope_keys (
        tenant TEXT NOT NULL, user_id TEXT NOT NULL, agent_id TEXT NOT NULL, key BYTEA NOT NULL,
        PRIMARY KEY (tenant, user_id, agent_id))""",
    """CREATE TABLE IF NOT EXISTS forgotten_scopes (
        tenant TEXT NOT NULL, user_id TEXT, agent_id TEXT, forgotten_at TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS tombstones_keyed (
        tenant TEXT NOT NULL, mark TEXT NOT NULL, unit_id TEXT NOT NULL, user_id TEXT, agent_id TEXT,
        session_id TEXT, forgotten_at TEXT NOT NULL, PRIMARY KEY (tenant, mark))""",
    "CREATE INDEX IF NOT EXISTS tombstones_keyed_unit ON tombstones_keyed (unit_id)",
    "CREATE TABLE IF NOT EXISTS pending_cold (ref TEXT PRIMARY KEY)",
]

# Each term's document frequency over all tenants (what BM25's idf needs), so a query reads one row per
# term instead of counting every posting of it. Statement triggers with transition tables keep it in the
# transaction that writes or deletes postings (INSERT, COPY, DELETE: every path). Rows are locked in term
# order, so two writers never wait on each other in a cycle.
TERM_DF = (
    "CREATE TABLE IF NOT EXISTS term_df (term TEXT PRIMARY KEY, df BIGINT NOT NULL)",
    """CREATE OR REPLACE FUNCTION omnimem_term_df_add() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO term_df (term, df) SELECT term, COUNT(*) FROM added GROUP BY term ORDER BY term
        ON CONFLICT (term) DO UPDATE SET df = term_df.df + excluded.df;
        RETURN NULL;
    END $$""",
    """CREATE OR REPLACE FUNCTION omnimem_term_df_remove() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM 1 FROM term_df WHERE term IN (SELECT term FROM removed) ORDER BY term FOR UPDATE;
        UPDATE term_df d SET df = d.df - r.n FROM (SELECT term, COUNT(*) AS n FROM removed GROUP BY term) r
        WHERE d.term = r.term;
        DELETE FROM term_df WHERE df <= 0 AND term IN (SELECT term FROM removed);  -- no word of deleted text stays
        RETURN NULL;
    END $$""",
    """CREATE OR REPLACE TRIGGER terms_df_add AFTER INSERT ON terms REFERENCING NEW TABLE AS added
       FOR EACH STATEMENT EXECUTE FUNCTION omnimem_term_df_add()""",
    """CREATE OR REPLACE TRIGGER terms_df_remove AFTER DELETE ON terms REFERENCING OLD TABLE AS removed
       FOR EACH STATEMENT EXECUTE FUNCTION omnimem_term_df_remove()""",
    "DELETE FROM term_df",
    "INSERT INTO term_df (term, df) SELECT term, COUNT(*) FROM terms GROUP BY term",
)

TENANT_SETTING = "omnimem.tenant"  # a connection bound to one user sets this (row-level-security mode)


def _policy(table: str) -> list[str]:
    """Rows of ``table`` visible and writable only for the bound tenant; unbound connections see all."""
    bound = f"NULLIF(current_setting('{TENANT_SETTING}', true), '')"
    rule = f"({bound} IS NULL OR tenant = {bound})"
    return [
        f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY",
        f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY",  # the owner too: the application usually owns the tables
        f"DROP POLICY IF EXISTS {table}_tenant ON {table}",
        f"CREATE POLICY {table}_tenant ON {table} USING {rule} WITH CHECK {rule}",
    ]


# A text search reads every posting of its terms (tenant, row id, count) and, for each, its unit's length and
# supersession: served from the indexes alone, such a search touches no table page (where autovacuum has
# marked the pages all-visible). pg-scale at 100k units: global search p50 346 -> 115 ms (docs/postgres.md).
COVERING = (
    "DROP INDEX IF EXISTS terms_term",
    "CREATE INDEX terms_term ON terms (term) INCLUDE (tenant, rid, tf)",
    "DROP INDEX IF EXISTS units_rid",
    "CREATE UNIQUE INDEX units_rid ON units (rid) INCLUDE (tenant, doc_len, superseded_by)",
)

# Each posting carries its unit's length, so a text search sums scores from the postings alone and reads unit rows
# only for the best candidates' filters (omnimem/store/postgres/search.py). A unit's length changes only where its
# postings are rewritten (TermIndexer.apply), so the two never differ. pg-scale at 100k units: docs/postgres.md.
POSTING_LENGTHS = (
    "ALTER TABLE terms ADD COLUMN IF NOT EXISTS doc_len INTEGER NOT NULL DEFAULT 0",
    "UPDATE terms t SET doc_len = u.doc_len FROM units u WHERE u.rid = t.rid",
    "DROP INDEX IF EXISTS terms_term",
    "CREATE INDEX terms_term ON terms (term) INCLUDE (tenant, rid, tf, doc_len)",
)

PROVENANCE = (
    "ALTER TABLE units ADD COLUMN IF NOT EXISTS source TEXT NOT NULL DEFAULT 'user'",
    "ALTER TABLE units ADD COLUMN IF NOT EXISTS trust TEXT NOT NULL DEFAULT 'trusted'",
    "ALTER TABLE units ADD COLUMN IF NOT EXISTS surface TEXT",
    "ALTER TABLE units ADD COLUMN IF NOT EXISTS actor TEXT",
    "ALTER TABLE units ADD COLUMN IF NOT EXISTS origin TEXT",
    "ALTER TABLE api_keys ADD COLUMN IF NOT EXISTS max_trust TEXT NOT NULL DEFAULT 'trusted'",
)

MIGRATIONS: list[tuple[int, str, list[str]]] = [
    (1, "initial: units, BM25 postings, blobs, graph, audit log, tombstones", INITIAL),
    (2, "row-level security: a connection bound to one user sees and writes only its rows",
     [step for table in TENANT_TABLES for step in _policy(table)]),
    (3, "api keys and console sessions of a server (hashed, never the secret)", list(KEY_SCHEMA)),
    (4, "job queue: enrichment waiting for a worker (claimed with FOR UPDATE SKIP LOCKED)", list(JOB_SCHEMA)),
    (5, "BM25 document frequencies kept in term_df by triggers on the postings", list(TERM_DF)),
    (6, "BM25 reads postings and unit lengths from covering indexes (index-only scans, no table row per posting)",
     list(COVERING)),
    (7, "job lease expiries counted apart from attempts", [ADD_EXPIRIES]),
    (8, "BM25 postings carry their unit's length (a text search reads no unit row per posting)",
     list(POSTING_LENGTHS)),
    (9, "provenance and trust of every unit (units from before: a user's words, trusted); a key's highest trust",
     list(PROVENANCE)),
]


def vector_index_ddl(dim: int) -> list[str]:
    """Fix the embedding dimension and build the HNSW index (inner product on normalised vectors)."""
    return [
        "DROP INDEX IF EXISTS units_embedding_hnsw",
        f"ALTER TABLE units ALTER COLUMN embedding TYPE vector({int(dim)})",
        "CREATE INDEX units_embedding_hnsw ON units USING hnsw (embedding vector_ip_ops)",
    ]


INDEX = "units_embedding_hnsw"
INDEX_SQL = f"CREATE INDEX IF NOT EXISTS {INDEX} ON units USING hnsw (embedding vector_ip_ops)"
VECTOR_INDEX_MARK = "vector_index"  # meta key: the index's definition while a bulk load has it dropped


def build_vector_index(conn: Any, *, maintenance_work_mem: str = "1GB", parallel_workers: int | None = None,
                       definition: str = INDEX_SQL) -> float:
    """Build the HNSW index over every unit (inside the caller's transaction); returns the seconds it took.

    ``definition`` is the ``CREATE INDEX`` statement: the store's own, so an index built with other graph
    parameters (``WITH (m = 32, ef_construction = 128)``, see docs/postgres.md) keeps them.

    ``maintenance_work_mem`` should hold the whole graph (about 2 GiB per million 384-d units, see
    docs/postgres.md); a smaller one still builds, more slowly, once the graph spills to disk.
    ``parallel_workers`` sets ``max_parallel_maintenance_workers`` (pgvector 0.6+ builds in parallel).
    """
    conn.execute("SELECT set_config('maintenance_work_mem', %s, true)", (maintenance_work_mem,))
    if parallel_workers is not None:
        conn.execute("SELECT set_config('max_parallel_maintenance_workers', %s, true)", (str(int(parallel_workers)),))
    start = time.perf_counter()
    conn.execute(definition)
    return time.perf_counter() - start
