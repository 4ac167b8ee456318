"""Named, ordered schema migrations for the SQLite store."""

from __future__ import annotations

from omnimem.graph.store import GRAPH_SCHEMA

SCHEMA_VERSION = 3

MIGRATIONS: list[tuple[int, str, list[str]]] = [
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
]
