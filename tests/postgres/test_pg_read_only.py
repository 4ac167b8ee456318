"""``Memory(url=..., read_only=True)`` on PostgreSQL: reads work, writes raise what they raise on SQLite, nothing changes.

The CLI's ``search`` and ``ask`` open stores read-only, so this is how they use a shared database.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from omnimem import Memory
from omnimem.errors import ReadOnlyStoreError, StoreError
from omnimem.store.postgres.migrate import migrate
from omnimem.store.postgres.schema import SCHEMA_VERSION
from tests.postgres_server import PostgresServer

_TABLES = ("units", "terms", "term_df", "audit_log", "audit_units", "blobs", "counters", "meta", "tombstones_keyed",
           "filter_stats", "jobs")


def _snapshot(url: str) -> dict[str, Any]:
    """Every row of the tables a write could touch, as text."""
    with psycopg.connect(url) as conn:
        return {t: sorted(r[0] for r in conn.execute(f"SELECT t::text FROM {t} t")) for t in _TABLES}


def _writes(m: Memory, unit_id: str) -> list[Callable[[], object]]:
    return [
        lambda: m.add("a new note about kayaks", user_id="ann"),
        lambda: m.add_dialogue([{"speaker": "ann", "text": "hello"}], user_id="ann", session_id="s9"),
        lambda: m.update(unit_id, text="changed"),
        lambda: m.delete(unit_id),
        lambda: m.forget(user_id="ann"),
        lambda: m.import_records([]),
    ]


def test_a_read_only_memory_searches_gets_and_lists_history_and_refuses_every_write(pg_url: str) -> None:
    with Memory(url=pg_url, embedder="fake") as m:
        first = m.add("Ann planned a kayak trip on the lake", user_id="ann", session_id="s1")
        m.add("Bob repaired his old bicycle", user_id="bob")
    before = _snapshot(pg_url)
    assert first.id is not None
    with Memory(url=pg_url, read_only=True) as m:  # the embedder comes from the store
        assert m.read_only
        assert [h.unit.id for h in m.search("kayak lake", user_id="ann").hits][:1] == [first.id]
        assert m.search("bicycle").hits  # global search too
        assert m.get(first.id).summary.startswith("Ann planned")
        assert [r.action for r in m.history(first.id)] == ["add"]
        assert m.stats()["units"] == 2
        assert len([r for r in m.export(all=True) if r.get("kind") == "unit"]) == 2
        for write in _writes(m, first.id):
            with pytest.raises(ReadOnlyStoreError):
                write()
    assert _snapshot(pg_url) == before


def test_the_connections_of_a_read_only_store_cannot_write_in_the_server(pg_url: str) -> None:
    """Defence in depth: even SQL that skips the store's checks is refused by PostgreSQL, as a typed error."""
    with Memory(url=pg_url, embedder="fake") as m:
        m.add("Ann likes jazz", user_id="ann")
    with Memory(url=pg_url, read_only=True) as m:
        store: Any = m.store
        with pytest.raises(ReadOnlyStoreError), store._read() as conn:
            conn.execute("UPDATE counters SET seq = seq + 1")
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT seq FROM counters").fetchone()[0] >= 1


def test_a_read_only_open_of_a_database_without_a_store_is_a_store_error(postgres: PostgresServer) -> None:
    empty = postgres.fresh(migrated=False)
    with pytest.raises(StoreError, match="holds no omnimem store"):
        Memory(url=empty, read_only=True)
    with psycopg.connect(empty) as conn:  # nothing was created
        assert conn.execute("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'public'"
                            ).fetchone()[0] == 0
    postgres.drop(empty)


def test_a_read_only_open_of_a_migrated_database_without_memories_says_to_open_it_writable(pg_url: str) -> None:
    with pytest.raises(ReadOnlyStoreError, match="open it writable once"):
        Memory(url=pg_url, read_only=True)


def test_a_read_only_open_of_an_older_schema_asks_for_omnimem_migrate(postgres: PostgresServer) -> None:
    url = postgres.fresh(migrated=False)
    with psycopg.connect(url) as conn:
        migrate(conn, target=SCHEMA_VERSION - 1)
    with pytest.raises(ReadOnlyStoreError, match="omnimem migrate --url"):
        Memory(url=url, read_only=True)
    postgres.drop(url)


def test_the_cli_searches_a_postgresql_store_read_only(pg_url: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from omnimem.cli.commands import app

    with Memory(url=pg_url, embedder="fake") as m:
        m.add("Ann planned a kayak trip on the lake", user_id="ann")
    before = _snapshot(pg_url)
    monkeypatch.setenv("OMNIMEM_EMBEDDER", "fake")
    res = CliRunner().invoke(app, ["--url", pg_url, "search", "kayak", "--user-id", "ann"])
    assert res.exit_code == 0, res.output
    assert "kayak" in res.output
    assert _snapshot(pg_url) == before
