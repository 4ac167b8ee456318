"""A folder whose ``omnimem.db`` is another program's SQLite file is refused by every command, and the file is
left exactly as it was: its bytes, its journal mode, and the folder's listing (no -wal, no -shm, no cold/ or
index/). The schema is read read-only first; nothing opens the file for writing unless it is an omnimem store.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnimem.cli import app
from omnimem.errors import NotAStoreError
from omnimem.store.sqlite.store import SQLiteStore

ROOT = Path(__file__).resolve().parents[2]


def invoices(folder: Path, *, wal: bool = False, meta: bool = False) -> Path:
    """A bookkeeping program's database, saved as ``folder/omnimem.db`` (``meta``: with a key/value table
    of its own called ``meta``, the name omnimem's own table has)."""
    folder.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(folder / "omnimem.db")
    if wal:
        conn.execute("PRAGMA journal_mode=WAL")
    if meta:
        conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        conn.execute("INSERT INTO meta VALUES ('app', 'ledger')")
    conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, customer TEXT, total REAL)")
    conn.execute("INSERT INTO invoices(customer, total) VALUES ('Ana', 12.5), ('Bob', 80)")
    conn.commit()
    conn.close()
    return folder


def state(folder: Path) -> dict[str, str]:
    """Every file and folder under ``folder``, each file by the hash of its bytes."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(folder.rglob("*"))}


def journal_mode(folder: Path) -> str:
    """The file's journal mode, asked of a copy (asking the file itself would leave -wal and -shm beside it)."""
    copy = folder.parent / f"{folder.name}-copy.db"
    shutil.copyfile(folder / "omnimem.db", copy)
    conn = sqlite3.connect(copy)
    try:
        return str(conn.execute("PRAGMA journal_mode").fetchone()[0])
    finally:
        conn.close()


def test_keys_create_init_refuses_it_and_leaves_it_byte_for_byte(tmp_path: Path) -> None:
    folder = invoices(tmp_path / "ledger")
    before = state(folder)
    assert journal_mode(folder) == "delete" and list(before) == ["omnimem.db"]

    done = subprocess.run([sys.executable, "-m", "omnimem.cli", "keys", "create", "--init", "--name", "ops",
                           "--role", "admin", "--store", str(folder)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "OMNIMEM_EMBEDDER": "fake"}, timeout=120)

    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        f"error: {folder} holds a SQLite file that is not an omnimem store (omnimem.db was left unchanged); "
        "choose another folder"]
    assert state(folder) == before and journal_mode(folder) == "delete"


COMMANDS = {
    "keys create --init": ["keys", "create", "--init", "--name", "ops", "--role", "admin"],
    "keys create": ["keys", "create", "--name", "ops", "--role", "admin"],
    "keys list": ["keys", "list"],
    "add": ["add", "remember the milk"],
    "ingest": ["ingest", "jsonl", "{turns}"],
    "import": ["import", "{dump}"],
    "serve --init": ["serve", "--init", "--port", "1"],
    "serve": ["serve", "--port", "1"],
    "mcp --init": ["mcp", "--init"],
    "mcp": ["mcp"],
    "stats": ["stats"],
    "list": ["list"],
}


@pytest.mark.parametrize("wal", [False, True], ids=["rollback-journal", "wal"])
@pytest.mark.parametrize("meta", [False, True], ids=["own-tables", "own-meta-table"])
def test_no_command_changes_another_programs_sqlite_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         wal: bool, meta: bool) -> None:
    monkeypatch.setenv("OMNIMEM_EMBEDDER", "fake")
    turns = tmp_path / "turns.jsonl"
    turns.write_text(json.dumps({"speaker": "ana", "text": "I moved to Lisbon."}) + "\n")
    dump = tmp_path / "dump.jsonl"
    real = tmp_path / "real"  # a real store's dump, for import
    assert CliRunner().invoke(app, ["add", "a note", "--store", str(real)]).exit_code == 0
    exported = CliRunner().invoke(app, ["export", "--all", "--store", str(real)])
    assert exported.exit_code == 0
    dump.write_text(exported.stdout)
    for name, args in COMMANDS.items():
        folder = invoices(tmp_path / name.replace(" ", "_"), wal=wal, meta=meta)
        before, mode = state(folder), journal_mode(folder)
        argv = [a.format(turns=turns, dump=dump) for a in args] + ["--store", str(folder)]

        result = CliRunner().invoke(app, argv)

        assert result.exit_code == 2, (name, result.output)
        assert "holds a SQLite file that is not an omnimem store" in result.output, name
        assert state(folder) == before, name
        assert journal_mode(folder) == mode == ("wal" if wal else "delete"), name


def test_the_library_refuses_it_too_and_still_opens_real_stores(tmp_path: Path) -> None:
    folder = invoices(tmp_path / "ledger", meta=True)
    before = state(folder)
    for read_only in (False, True):
        with pytest.raises(NotAStoreError, match="not an omnimem store"):
            SQLiteStore(folder, read_only=read_only)
    assert state(folder) == before

    store = SQLiteStore(tmp_path / "mine")  # a new store, and the same store opened again
    store.close()
    SQLiteStore(tmp_path / "mine").close()
    SQLiteStore(tmp_path / "mine", read_only=True).close()
