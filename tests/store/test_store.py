"""The embedded store on real SQLite files."""

import json
import sqlite3
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

from omnimem.errors import NotAStoreError, SchemaVersionError
from omnimem.mau import MAU, Links, Modality, Scope
from omnimem.store.sqlite.store import DB_NAME, SQLiteStore

NOW = datetime(2024, 1, 1, tzinfo=timezone.utc)


def unit(uid: str, scope: Scope, ref: str | None = None) -> MAU:
    return MAU(uid, f"summary {uid}", Modality.TEXT, NOW, NOW, scope, "hash" + uid,
               speaker="Ann", raw_ref=ref, links=Links(source_ids=("D1:" + uid,)),
               embedding=np.array([1.0, 0.0], dtype=np.float32))


def test_units_round_trip_with_session_links(store_path: Path):
    store = SQLiteStore(store_path)
    store.init_meta("fake", 2)
    s = Scope("u1", None, "s1")
    store.insert([unit("a", s), unit("b", s), unit("c", Scope("u1"))], {})
    a, b, c = store.get(["a", "b", "c"])
    assert (a.links.prev_id, a.links.next_id) == (None, "b")
    assert (b.links.prev_id, b.links.next_id) == ("a", None)
    assert c.links.prev_id is None  # no session, no chain
    assert b.source_ids == ("D1:b",) and b.embedding is not None and b.embedding.tolist() == [1.0, 0.0]
    store.close()

    reopened = SQLiteStore(store_path)
    assert reopened.meta() is not None and reopened.meta().embedder == "fake"
    assert [u.id for u in reopened.get(["c", "a"])] == ["c", "a"]
    reopened.close()


def test_delete_relinks_the_chain_and_removes_unshared_cold_files(store_path: Path):
    store = SQLiteStore(store_path)
    store.init_meta("fake", 2)
    ref = store.cold.put(b"full text one")
    shared = store.cold.put(b"shared text")
    s = Scope("u", None, "s")
    store.insert([unit("a", s, ref), unit("b", s, shared), unit("c", s, shared)], {})
    store.delete(["b"])
    assert store.get(["c"])[0].links.prev_id == "a"
    assert store.cold.exists(shared)  # still referenced by c
    store.delete(["a", "c"])
    assert not store.cold.exists(ref) and not store.cold.exists(shared)
    store.close()


def test_insert_is_atomic(store_path: Path):
    store = SQLiteStore(store_path)
    store.init_meta("fake", 2)
    store.insert([unit("a", Scope("u"))], {})
    with pytest.raises(Exception):
        # the same id with other content fails the batch (the same unit again would be skipped as itself)
        store.insert([unit("b", Scope("u")), replace(unit("a", Scope("u")), content_hash="other")], {})
    assert [u.id for u in store.get(["a", "b"])] == ["a"]
    store.close()


def test_change_counter_moves_with_every_write(store_path: Path):
    store = SQLiteStore(store_path)
    before = store.seq()
    store.insert([unit("a", Scope("u"))], {})
    assert store.seq() == before + 1 == store.last_write_seq
    store.delete(["a"])
    assert store.seq() == before + 2
    store.close()


def test_a_folder_with_other_files_is_not_a_store(tmp_path: Path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(NotAStoreError):
        SQLiteStore(tmp_path)


def test_a_file_is_not_a_store(tmp_path: Path):
    path = tmp_path / "file"
    path.write_text("x")
    with pytest.raises(NotAStoreError):
        SQLiteStore(path)


def test_a_foreign_sqlite_file_is_not_a_store(tmp_path: Path):
    conn = sqlite3.connect(tmp_path / DB_NAME)
    conn.execute("CREATE TABLE other (x)")
    conn.commit()
    conn.close()
    with pytest.raises(NotAStoreError):
        SQLiteStore(tmp_path)


def test_garbage_db_file_is_not_a_store(tmp_path: Path):
    (tmp_path / DB_NAME).write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(NotAStoreError):
        SQLiteStore(tmp_path)


def test_a_newer_schema_is_refused(store_path: Path):
    SQLiteStore(store_path).close()
    conn = sqlite3.connect(store_path / DB_NAME)
    conn.execute("UPDATE meta SET value='999' WHERE key='schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(SchemaVersionError):
        SQLiteStore(store_path)


def test_wal_mode_and_secure_delete_are_on(store_path: Path):
    store = SQLiteStore(store_path)
    assert store._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store._conn.execute("PRAGMA secure_delete").fetchone()[0] == 1
    assert store._conn.execute("PRAGMA busy_timeout").fetchone()[0] > 0
    store.close()


@pytest.mark.parametrize("ids", [(), ("D1:3",), ("a", "b", "c"), ("a, b", "c"), ('say "hi"',), ("back\\slash",),
                                 ("é", "ü"), ("", ""), ('a", "b',)])
def test_source_ids_read_back_exactly(store_path: Path, ids: tuple[str, ...]):
    store = SQLiteStore(store_path)
    store.init_meta("fake", 2)
    store.insert([replace(unit("a", Scope("u1")), links=Links(source_ids=ids))], {})
    assert store.get(["a"])[0].source_ids == ids
    # a list written another way than json.dumps's (no spaces, spaces around the comma) is parsed as JSON
    for text in (json.dumps(list(ids), separators=(",", ":")), json.dumps(list(ids), separators=(" , ", ":"))):
        store._conn.execute("UPDATE units SET source_ids = ? WHERE id = 'a'", (text,))
        assert store.get(["a"])[0].source_ids == ids
    store.close()
