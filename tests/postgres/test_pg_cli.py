"""The CLI on PostgreSQL: ``omnimem migrate --url``, the global ``--url``, and moving a memory between backends."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from PIL import Image
from typer.testing import CliRunner

from omnimem import Memory
from omnimem.cli.commands import app
from omnimem.mau import Scope
from omnimem.store.postgres.schema import MIGRATIONS
from tests.postgres_server import PostgresServer


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("OMNIMEM_EMBEDDER", "fake")
    runner = CliRunner()
    return lambda *args: runner.invoke(app, [str(a) for a in args])


def test_migrate_brings_an_empty_database_to_the_current_schema(run, postgres: PostgresServer) -> None:  # type: ignore[no-untyped-def]
    url = postgres.fresh(migrated=False)
    res = run("migrate", "--url", url, "--json")
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert [step["number"] for step in report["applied"]] == [n for n, _, _ in MIGRATIONS] and report["from"] == 0
    again = run("migrate", "--url", url)
    assert again.exit_code == 0 and "already up to date" in again.stdout
    postgres.drop(url)


def test_migrate_without_a_database_is_one_line(run) -> None:  # type: ignore[no-untyped-def]
    res = run("migrate")
    assert res.exit_code == 2 and res.output.count("\n") == 1 and "--url" in res.output


def _png(color: tuple[int, int, int]) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (16, 16), color).save(out, format="PNG")
    return out.getvalue()


def test_export_from_sqlite_and_import_into_postgresql_and_back(run, pg_url: str, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                               postgres: PostgresServer) -> None:
    lite = tmp_path / "lite"
    with Memory(lite, embedder="fake") as m:
        m.add_dialogue([{"speaker": "Ann", "text": "We planted tulips by the gate.", "time": "2024-04-01T10:00"},
                        {"speaker": "Bob", "text": "The tulips came up red in May.", "time": "2024-05-01T10:00"}],
                       user_id="ann", session_id="garden")
        m.add_image(_png((200, 20, 20)), "red tulips by the gate", user_id="ann", session_id="garden")
        old = m.add("Ann's gate is green", user_id="ann").id
        assert old is not None
        m.update(old, text="Ann's gate is blue now", user_id="ann")
    dump = tmp_path / "ann.jsonl"
    res = run("export", "--user-id", "ann", "--store", lite)
    assert res.exit_code == 0, res.output
    dump.write_text(res.stdout, encoding="utf-8")
    res = run("--url", pg_url, "import", dump, "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["stored"] == 5
    res = run("--url", pg_url, "search", "tulips gate", "--user-id", "ann", "--json")
    assert res.exit_code == 0 and "tulips" in res.stdout
    back = postgres.fresh()
    res = run("--url", pg_url, "export", "--user-id", "ann")
    assert res.exit_code == 0, res.output
    (tmp_path / "again.jsonl").write_text(res.stdout, encoding="utf-8")
    assert run("--url", back, "import", tmp_path / "again.jsonl").exit_code == 0
    units = [_units(dump), _units(tmp_path / "again.jsonl")]
    marked = {(r["source"], r["trust"], r["surface"]) for r in map(json.loads, res.stdout.splitlines())
              if r.get("kind") == "unit"}
    assert marked == {("import", "untrusted", "import")}  # an import is marked as one, whatever its file said
    assert units[0] == units[1] and len(units[0]) == 5  # every unit, its text, raw bytes and versions
    with Memory(url=back, embedder="fake") as m:
        image = next(u for u in m.store.get(m.store.ids_in_scope(Scope("ann"))) if u.raw_ref)
        assert m.store.read_raw(image.raw_ref or "") == _png((200, 20, 20))  # the blob came along
        carried = [e.action for e in m.history(old, user_id="ann") if "imported_from" in e.details]
        assert {"add", "update", "import", "supersede"} <= set(carried)  # SQLite's events and PostgreSQL's own
    postgres.drop(back)


def _units(path: Path) -> dict[str, dict[str, object]]:
    """The unit records of a dump, without what each store assigns itself."""
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record.get("kind") == "unit":
            kept = {k: v for k, v in record.items() if k not in ("record_time", "embedding", "superseded_at",
                                                                 "source", "trust", "surface", "actor", "origin")}
            out[str(record["id"])] = kept
    return out
