"""PostgreSQL for a newcomer: ``omnimem pg-start`` / ``postgresql+pgserver://FOLDER``, and ``search --url``.

``pg-start`` runs a local PostgreSQL + pgvector (pgserver) and prints its URL;
``--url postgresql+pgserver://FOLDER`` starts or reuses the same server. A
search on a database of the default model embeds its query with the ONNX model
(no torch), as on a folder; the output names the database, never "None".
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnimem import ConfigError, Memory
from omnimem.cli import app
from omnimem.store.postgres import local_server
from tests.cli.test_cli_cold_start import TURNS, StandInForTorchMiniLM, cli_in_fresh_process

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample_conversation.jsonl"


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("OMNIMEM_EMBEDDER", "fake")
    runner = CliRunner()
    return lambda *args: runner.invoke(app, [str(a) for a in args])


@pytest.fixture
def reachable() -> Iterator[Path]:
    """A folder pgserver's system user can enter (it runs PostgreSQL as 'pgserver' under root); afterwards the
    server started in its ``pgdata`` is stopped, whatever the test did, and the folder removed."""
    import shutil
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="omnimem-pgstart-"))
    root.chmod(0o755)
    yield root
    if (root / "pgdata" / "postmaster.pid").exists():
        local_server.stop(root / "pgdata")
    shutil.rmtree(root, ignore_errors=True)


def test_pg_start_prints_a_url_every_command_takes_and_pg_stop_ends_it(run, reachable: Path) -> None:  # type: ignore[no-untyped-def]
    folder = reachable / "pgdata"
    started = run("pg-start", folder, "--json")
    assert started.exit_code == 0, started.output
    info = json.loads(started.stdout)
    assert info["url"].startswith("postgresql://") and info["omnimem_url"] == f"postgresql+pgserver://{folder}"
    try:
        local = info["omnimem_url"]
        added = run("--url", local, "add", "Ann moved to Lisbon", "--user-id", "ann")
        assert added.exit_code == 0, added.output
        with Memory(url=info["url"], embedder="fake") as mem:  # the printed URL is the same database
            assert mem.stats()["units"] == 1
        found = run("search", "--url", local, "Lisbon", "--user-id", "ann", "--json")
        assert found.exit_code == 0, found.output
        assert json.loads(found.stdout)["hits"][0]["unit"]["summary"] == "Ann moved to Lisbon"
        again = run("pg-start", folder)  # already running: reused, same URL
        assert again.exit_code == 0 and again.stdout.strip() == info["url"]
    finally:
        stopped = run("pg-stop", folder)
    assert stopped.exit_code == 0, stopped.output
    assert run("pg-stop", folder).exit_code == 2  # nothing runs there any more: one line, exit 2
    with Memory(url=f"postgresql+pgserver://{folder}", embedder="fake") as mem:  # restarts it, data kept
        assert mem.stats()["units"] == 1


def test_a_server_that_cannot_start_is_one_line(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    res = run("pg-start", blocked / "pgdata")
    assert res.exit_code != 0 and res.output.count("\n") == 1 and res.output.startswith("error:")


def test_a_pgserver_url_without_a_folder_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="names no folder"):
        Memory(url="postgresql+pgserver://", embedder="fake")


def test_search_url_on_a_minilm_database_imports_no_torch(pg_url: str) -> None:
    with Memory(url=pg_url, embedder=StandInForTorchMiniLM()) as mem:  # records all-MiniLM-L6-v2, no torch here
        mem.add_dialogue(TURNS, user_id="u1", session_id="s1")
    out, report = cli_in_fresh_process("search", "--url", pg_url, "Where is Alex flying?", "--user-id", "u1",
                                       "--json")
    assert report == {"heavy": [], "code": 0}
    assert "Lisbon" in out["hits"][0]["unit"]["summary"]  # type: ignore[index]
    added, report = cli_in_fresh_process("--url", pg_url, "add", "Alex packed a blue suitcase.", "--user-id", "u1",
                                         "--json")
    assert report == {"heavy": [], "code": 0} and added["accepted"] is True  # numpy MiniLM: no torch either


def test_search_takes_either_store_or_url(run, pg_url: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    res = run("search", "x", "--url", pg_url, "--store", tmp_path / "mem")
    assert res.exit_code == 2 and res.output.count("\n") == 1 and "either --store or --url" in res.output


def test_output_names_the_database_without_its_password(run, pg_url: str) -> None:  # type: ignore[no-untyped-def]
    url = pg_url.replace("postgres:@", "postgres:secret@") if "postgres:@" in pg_url else pg_url
    res = run("--url", url, "ingest", "jsonl", SAMPLE, "--json")
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["store"].startswith("postgresql://") and "None" not in summary["store"]
    assert "secret" not in summary["store"]
    text = run("--url", url, "ingest", "jsonl", SAMPLE)
    line = " ".join(text.stdout.split())  # rich wraps at the terminal width
    assert text.exit_code == 0 and "-> None" not in line and "-> postgresql://" in line
