"""Several processes ingesting the same conversation into one store store each turn once.

Each child opens the store, then waits for a start file, so all of them check
for duplicates and insert at the same moment. The duplicate check and the
insert are one step inside the store's write transaction, so whoever comes
second finds the turns stored and reports them as duplicates.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import pytest

from omnimem import Memory
from omnimem.mau import Scope
from tests.reliability.conftest import child_env

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "examples" / "sample_conversation.jsonl"
TURNS = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()]
SCOPE = Scope(TURNS[0]["user_id"])

WAIT = """
start = Path(sys.argv[1])
Path(f"{start}.ready.{os.getpid()}").touch()
while not start.exists():
    time.sleep(0.001)
"""

# the CLI in a child: the command is imported before the start file appears
CLI_CHILD = """
import os, sys, time
from pathlib import Path
from omnimem.cli import main
{wait}
sys.argv = ["omnimem", "ingest", "jsonl", sys.argv[2], "--store", sys.argv[3], "--embedder", "fake", "--json"]
main()
"""

# the Python API in a child: the store is open before the start file appears
API_CHILD = """
import json, os, sys, time
from pathlib import Path
from omnimem import Memory
turns = [json.loads(line) for line in open(sys.argv[2], encoding="utf-8") if line.strip()]
where = sys.argv[3]
memory = Memory(url=where, embedder="fake") if where.startswith("postgresql") else Memory(where, embedder="fake")
{wait}
results = memory.add_dialogue([{{k: t[k] for k in ("text", "speaker", "time", "id")}} for t in turns],
                              user_id=turns[0]["user_id"], session_id=turns[0]["session_id"],
                              restate=sys.argv[4] == "restate")
memory.close()
print(json.dumps([[r.accepted, r.reason] for r in results]))
"""


def _run_together(script: str, args: list[str], processes: int, tmp_path: Path) -> list[str]:
    """Start ``processes`` children of ``script``, release them at once, and return their outputs."""
    start = tmp_path / "start"
    code = textwrap.dedent(script).format(wait=WAIT)
    children = [subprocess.Popen([sys.executable, "-c", code, str(start), *args], cwd=tmp_path, env=child_env(),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for _ in range(processes)]
    deadline = time.monotonic() + 120
    while len(list(tmp_path.glob("start.ready.*"))) < processes:  # every child has imported and is waiting
        assert time.monotonic() < deadline and all(c.poll() is None for c in children), "a child did not start"
        time.sleep(0.01)
    start.touch()
    outputs = []
    for child in children:
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
        outputs.append(out)
    return outputs


def _source_ids(memory: Memory) -> Counter[str]:
    """How many stored units carry each turn id."""
    return Counter(s for u in memory.store.get(memory.store.ids_in_scope(SCOPE)) for s in u.source_ids)


def _long_conversation(path: Path, turns: int) -> list[dict[str, str]]:
    """A JSONL file of ``turns`` turns in the sample's scope: long enough that the processes' writes overlap."""
    rows = [{"user_id": SCOPE.user_id or "", "session_id": f"session-{n // 100}", "speaker": ("Ann", "Bob")[n % 2],
             "time": f"2024-03-{1 + n // 100:02d}T10:{(n // 60) % 60:02d}:{n % 60:02d}+00:00", "id": f"L{n}",
             "text": f"turn {n}: {TURNS[n % len(TURNS)]['text']}"} for n in range(turns)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return rows


@pytest.mark.parametrize(("processes", "turns"), [(2, 0), (4, 0), (3, 1200)])
def test_processes_ingesting_one_file_through_the_cli_store_each_turn_once(tmp_path: Path, processes: int,
                                                                           turns: int) -> None:
    source, rows = (SAMPLE, TURNS) if not turns else (tmp_path / "long.jsonl", [])
    rows = rows or _long_conversation(source, turns)
    store = tmp_path / "store"
    Memory(store, embedder="fake").close()  # the store exists before the crowd arrives
    reports = [json.loads(out) for out in _run_together(CLI_CHILD, [str(source), str(store)], processes, tmp_path)]
    assert sum(r["stored"] for r in reports) == len(rows)  # one process stored each turn; the others skipped it
    assert [r["stored"] + r["skipped"] for r in reports] == [len(rows)] * processes
    with Memory(store, embedder="fake") as memory:
        assert _source_ids(memory) == Counter(t["id"] for t in rows)
        assert memory.stats()["units"] == len(rows)


@pytest.mark.parametrize("restate", ["plain", "restate"])
@pytest.mark.parametrize("backend", ["path", "postgresql"])
def test_processes_adding_one_dialogue_through_the_api_store_each_turn_once(
        tmp_path: Path, backend: str, restate: str, request: pytest.FixtureRequest) -> None:
    where = request.getfixturevalue("pg_url") if backend == "postgresql" else str(tmp_path / "store")
    open_it = (lambda: Memory(url=where, embedder="fake")) if backend == "postgresql" else (
        lambda: Memory(where, embedder="fake"))
    open_it().close()
    outputs = _run_together(API_CHILD, [str(SAMPLE), where, restate], 3, tmp_path)
    results = [tuple(r) for out in outputs for r in json.loads(out)]
    with open_it() as memory:
        assert _source_ids(memory) == Counter(t["id"] for t in TURNS)  # no turn stored twice, none lost
        stored = memory.stats()["units"]
    assert results.count((True, "stored")) == stored
    assert all(r == (False, "duplicate") for r in results if r != (True, "stored"))
