"""Processes ingesting the same file into one embedded store at once: duplicated turns (the target is 0).

Each run starts 2-4 processes over one fresh store (fake embedder). Every
process imports omnimem (and, for the Python API, opens the store), says it
is ready and waits for a start file; the probe creates it when all are
ready, so their duplicate checks and inserts meet. Interfaces: the CLI
(``omnimem ingest jsonl|locomo``, run in the child after the start file) and
the Python API (``Memory.add_dialogue``). Files: ``examples/sample_conversation.jsonl``
and, when the data is present (``--data-dir``, default ``../shared/data``),
LoCoMo's ``conv-26``. Counted from the store's rows: units, distinct turns
(source ids per session) and duplicated ones.

    python -m benchmarks ingest-race

Writes ``results/ingest-race.json`` and its section of ``results/RELIABILITY.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from benchmarks.harness.paths import RESULTS, ROOT
from benchmarks.harness.server import cli_env
from benchmarks.reliability import writers_md
from omnimem import Memory, __version__

SAMPLE = ROOT / "examples" / "sample_conversation.jsonl"

READY = """
import os, sys, time
from pathlib import Path
start = Path(sys.argv[1])
def wait():
    Path(f"{start}.ready.{os.getpid()}").touch()
    while not start.exists():
        time.sleep(0.001)
"""
CLI = READY + """
from omnimem.cli import main
wait()
sys.argv = ["omnimem", "ingest", *sys.argv[2:]]
main()
"""
API = READY + """
import json
from omnimem import Memory
memory = Memory(sys.argv[3], embedder="fake")
turns = [json.loads(line) for line in open(sys.argv[2], encoding="utf-8") if line.strip()]
wait()
memory.add_dialogue([{k: t[k] for k in ("text", "speaker", "time", "id")} for t in turns],
                    user_id=turns[0]["user_id"], session_id=turns[0]["session_id"])
memory.close()
"""


def _race(folder: Path, script: str, args: list[str], processes: int) -> None:
    start = folder / "start"
    children = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(script), str(start), *args], env=cli_env(),
                                 cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                for _ in range(processes)]
    deadline = time.monotonic() + 300
    while len(list(folder.glob("start.ready.*"))) < processes:
        if time.monotonic() > deadline or any(c.poll() is not None for c in children):
            raise RuntimeError("a child did not start: " + "".join(
                c.stderr.read().decode()[-1000:] for c in children if c.poll() is not None and c.stderr))
        time.sleep(0.01)
    start.touch()
    for child in children:
        _, err = child.communicate(timeout=600)
        if child.returncode != 0:
            raise RuntimeError(f"a child failed: {err.decode()[-2000:]}")


def _count(store: Path) -> dict[str, int]:
    with sqlite3.connect(store / "omnimem.db") as conn:
        units = conn.execute("SELECT COUNT(*) FROM units").fetchone()[0]
        turns = conn.execute("SELECT COUNT(*) FROM (SELECT DISTINCT user_id, session_id, source_ids FROM units)"
                             ).fetchone()[0]
    return {"units": int(units), "turns": int(turns), "duplicated_source_ids": int(units - turns)}


def run(data_dir: Path) -> dict[str, Any]:
    plans: list[tuple[str, str, int, str, list[str]]] = [  # file, interface, processes, script, arguments
        ("sample_conversation.jsonl", "cli", 2, CLI, ["jsonl", str(SAMPLE)]),
        ("sample_conversation.jsonl", "cli", 4, CLI, ["jsonl", str(SAMPLE)]),
        ("sample_conversation.jsonl", "python", 4, API, [str(SAMPLE)]),
    ]
    locomo = (data_dir / "locomo" / "locomo10.json").resolve()
    if locomo.exists():
        plans += [("locomo10.json conv-26", "cli", n, CLI, ["locomo", str(locomo), "--conversation", "conv-26"])
                  for n in (2, 4)]
    runs: list[dict[str, Any]] = []
    for file, interface, processes, script, args in plans:
        folder = Path(tempfile.mkdtemp(prefix="omnimem-ingest-race-"))
        try:
            store = folder / "store"
            Memory(store, embedder="fake").close()
            tail = [store.as_posix()] if interface == "python" else ["--store", str(store), "--embedder", "fake"]
            _race(folder, script, [*args, *tail], processes)
            runs.append({"file": file, "interface": interface, "processes": processes, **_count(store)})
            print(json.dumps(runs[-1]))
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    return {"benchmark": "ingest-race", "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "omnimem": __version__, "python": platform.python_version(), "cpus": os.cpu_count(),
            "sqlite": sqlite3.sqlite_version, "runs": runs,
            "duplicates": sum(r["duplicated_source_ids"] for r in runs)}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks ingest-race", description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=Path(os.environ.get("OMNIMEM_DATA_DIR", "../shared/data")))
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    data = run(args.data_dir)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "ingest-race.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    writers_md.update(args.out)
    print(f"duplicates: {data['duplicates']}")


if __name__ == "__main__":
    main()
