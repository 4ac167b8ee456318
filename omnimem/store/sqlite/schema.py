"""Named, ordered schema migrations for the SQLite store."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from omnimem.store.sqlite.graph import GRAPH_SCHEMA
from omnimem.store import jobs, keys, tombstones
from omnimem.store.audit import AUDIT_SCHEMA

SCHEMA_VERSION = 11

Step = str | Callable[[sqlite3.Connection], None]  # an SQL statement, or Python for what SQL cannot say

MIGRATIONS: list[tuple[int, str, list[Step]]] = [
    (
        1,
        "initial units and meta",
        [
            "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
            "INSERT OR IGNORE INTO meta(key, value) VALUES ('format', 'omnimem')",
            "INSERT OR IGNORE INTO meta(key, value) VALUES ('seq', '0')",
            """CREATE TABLE IF NOT EXISTS units (
                rid INTEGER PRIMARY KEY,
                id TEXT NOT NULL UNIQUE,
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
                embedding BLOB NOT NULL
            )""",
            "CREATE INDEX IF NOT EXISTS units_scope ON units(user_id, agent_id, session_id)",
            "CREATE INDEX IF NOT EXISTS units_agent ON units(agent_id)",
            "CREATE INDEX IF NOT EXISTS units_session ON units(session_id)",
            "CREATE INDEX IF NOT EXISTS units_hash ON units(content_hash)",
            "CREATE INDEX IF NOT EXISTS units_prev ON units(prev_id)",
            "CREATE INDEX IF NOT EXISTS units_raw ON units(raw_ref)",
        ],
    ),
    (
        2,
        "novelty filter statistics",
        [
            "CREATE TABLE IF NOT EXISTS filter_stats (name TEXT PRIMARY KEY, value REAL NOT NULL DEFAULT 0)",
        ],
    ),
    (3, "knowledge graph: entities, aliases, relations and their evidence links", list(GRAPH_SCHEMA)),
    (
        4,
        "supersession, record timestamps, audit log and tombstones",
        [
            "ALTER TABLE units ADD COLUMN record_ts REAL",
            "ALTER TABLE units ADD COLUMN superseded_by TEXT",
            "ALTER TABLE units ADD COLUMN superseded_at TEXT",
            "ALTER TABLE units ADD COLUMN superseded_ts REAL",
            "UPDATE units SET record_ts = (julianday(record_time) - 2440587.5) * 86400.0",
            "CREATE INDEX IF NOT EXISTS units_superseded ON units(superseded_by)",
            *AUDIT_SCHEMA,
        ],
    ),
    (
        5,
        "CLIP image vectors for text-to-image search",
        ["CREATE TABLE IF NOT EXISTS clip_vectors (unit_id TEXT PRIMARY KEY, model TEXT NOT NULL, vector BLOB NOT NULL)"],
    ),
    (
        6,
        "cold-tier files awaiting deletion (finished after a crash)",
        ["CREATE TABLE IF NOT EXISTS pending_cold (ref TEXT PRIMARY KEY)"],
    ),
    (
        7,
        "keyed tombstones (per user/agent key, destroyed with the scope); no content hashes in the audit log",
        [*tombstones.SCHEMA, tombstones.migrate_plain_hashes],
    ),
    (8, "api keys", list(keys.SCHEMA)),
    (9, "job queue", list(jobs.SCHEMA)),
    (10, "job lease expiries counted apart from attempts", [jobs.ADD_EXPIRIES]),
    (
        11,
        "provenance and trust of every unit (units from before: a user's words, trusted); a key's highest trust",
        [
            "ALTER TABLE units ADD COLUMN source TEXT NOT NULL DEFAULT 'user'",
            "ALTER TABLE units ADD COLUMN trust TEXT NOT NULL DEFAULT 'trusted'",
            "ALTER TABLE units ADD COLUMN surface TEXT",
            "ALTER TABLE units ADD COLUMN actor TEXT",
            "ALTER TABLE units ADD COLUMN origin TEXT",
            "CREATE INDEX IF NOT EXISTS units_trust ON units(trust)",
            keys.ADD_MAX_TRUST,
        ],
    ),
]
