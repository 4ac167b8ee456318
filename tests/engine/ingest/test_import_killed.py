"""An import killed part-way keeps the batches it committed, and running it again completes it: a real process
importing a mem0 export is killed (SIGKILL) once its first batch is stored; the store then holds that batch
whole, and the same ``omnimem import`` run again stores exactly the rest, each memory once. The CLI's help and
docs/mem0.md say so. On SQLite and on PostgreSQL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from omnimem import Memory
from tests.postgres_server import PostgresServer

ROOT = Path(__file__).resolve().parents[3]
N = 600  # three batches of the writer's 256
CHILD = """
import json, sys, time
from omnimem import Memory
target, export = sys.argv[1], sys.argv[2]
mem = Memory(url=target, embedder="fake") if "://" in target else Memory(target, embedder="fake")

def progress(n):
    print(f"stored {n}", flush=True)
    time.sleep(600)  # the first batch is committed: wait here to be killed

mem.import_mem0(json.load(open(export)), progress=progress)
"""


@pytest.fixture(params=["sqlite", "postgresql"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[list[str]]:
    """Where the import goes, as the CLI's option and its value (``--url`` is a global option)."""
    if request.param == "sqlite":
        yield ["--store", str(tmp_path / "store")]
        return
    postgres: PostgresServer = request.getfixturevalue("postgres")
    url = postgres.fresh()
    yield ["--url", url]
    postgres.drop(url)


def opened(target: list[str]) -> Memory:
    option, value = target
    return Memory(url=value, embedder="fake") if option == "--url" else Memory(value, embedder="fake")


def test_a_killed_import_is_completed_by_running_it_again(tmp_path: Path, target: list[str]) -> None:
    export = tmp_path / "mem0_export.json"
    export.write_text(json.dumps({"results": [
        {"id": f"{n:08x}-0000-4000-8000-000000000000", "memory": f"Memory number {n} about topic {n % 17}",
         "user_id": "dana", "created_at": "2025-01-02T03:04:05+00:00"} for n in range(N)]}))
    env = {**os.environ, "OMNIMEM_EMBEDDER": "fake", "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([sys.executable, "-c", CHILD, target[1], str(export)], stdout=subprocess.PIPE,
                             text=True, env=env)
    try:
        first = child.stdout.readline() if child.stdout else ""
        assert first.startswith("stored "), first
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL
    with opened(target) as mem:
        kept = mem.count_units(user_id="dana")
    assert kept == int(first.split()[1]) and 0 < kept < N  # the committed batch, whole; not the rest

    where = {"--url": (target, []), "--store": ([], target)}[target[0]]  # before and after the command
    rerun = subprocess.run([sys.executable, "-m", "omnimem.cli", *where[0], "import", "--format", "mem0",
                            str(export), *where[1], "--json"], capture_output=True, text=True, env=env, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert json.loads(rerun.stdout) == {"units": N, "stored": N - kept, "skipped": kept, "forgotten": 0,
                                        "events": 0}
    with opened(target) as mem:
        units = [u for page in range(0, N, 200) for u in mem.units(user_id="dana", limit=200, offset=page)]
    assert sorted(u.source_ids[0] for u in units) == sorted(f"{n:08x}-0000-4000-8000-000000000000"
                                                             for n in range(N))


def test_the_cli_and_the_docs_say_a_rerun_completes_an_import() -> None:
    shown = subprocess.run([sys.executable, "-m", "omnimem.cli", "import", "--help"], capture_output=True,
                           text=True, env={**os.environ, "COLUMNS": "200"}, timeout=120)
    assert "run the same import again to complete it" in " ".join(shown.stdout.split())
    page = " ".join((ROOT / "docs" / "mem0.md").read_text().split()).lower()
    assert "run the same import again to complete it" in page
