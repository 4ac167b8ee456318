"""Reliability suite: sizes, the child-process runner and the store checks it shares.

``OMNIMEM_RELIABILITY=nightly`` selects the nightly sizes (>= 50 kills, longer
concurrency, more hypothesis examples); anything else runs the CI sizes, which
keep the whole folder to a few tens of seconds on two cores.
``OMNIMEM_RELIABILITY_REPORT=<file>`` makes the tests write their numbers there
as JSON (``benchmarks/reliability/reliability.py`` uses it).

Both are read at import: the suite's autouse fixture removes ``OMNIMEM_*``
variables while each test runs.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import faiss
import numpy as np
import pytest

from omnimem import Memory

MODE = "nightly" if os.environ.get("OMNIMEM_RELIABILITY") == "nightly" else "ci"
REPORT = os.environ.get("OMNIMEM_RELIABILITY_REPORT")
CHILD = Path(__file__).with_name("child.py")


@dataclass(frozen=True)
class Sizes:
    kills: int  # crash iterations (each a child process killed with SIGKILL)
    concurrency_s: float  # how long the two writers and two readers run
    examples: int  # hypothesis state machine runs
    steps: int  # steps per run
    corpus: int  # units in the negative-eval corpus
    queries: int  # random queries per search path
    graph_corpus: int  # units in the (slower, spaCy) graph corpus
    graph_queries: int
    forget_rounds: int  # add-then-forget rounds while searches read the same units' full text


SIZES = {
    "ci": Sizes(kills=5, concurrency_s=4.0, examples=12, steps=25, corpus=120, queries=25, graph_corpus=12,
                graph_queries=8, forget_rounds=60),
    "nightly": Sizes(kills=63, concurrency_s=30.0, examples=200, steps=50, corpus=600, queries=150, graph_corpus=60,
                     graph_queries=100, forget_rounds=400),
}[MODE]


@pytest.fixture(scope="session")
def sizes() -> Sizes:
    return SIZES


@pytest.fixture(scope="session")
def reliability_report() -> Iterator[dict[str, Any]]:
    """Numbers the tests record; written to $OMNIMEM_RELIABILITY_REPORT at the end of the session."""
    report: dict[str, Any] = {"mode": MODE, "sizes": SIZES.__dict__}
    yield report
    if REPORT:
        Path(REPORT).write_text(json.dumps(report, indent=2, sort_keys=True), encoding="utf-8")


def child_env() -> dict[str, str]:
    """The child's environment: this interpreter's, without the caller's OMNIMEM_* settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMNIMEM_")}
    env["OMNIMEM_CONFIG"] = os.environ.get("OMNIMEM_CONFIG", os.devnull)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def start_child(config: dict[str, Any]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, str(CHILD), json.dumps(config)], env=child_env(),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )


def read_log(path: Path) -> list[dict[str, Any]]:
    """The child's log; a torn last line (killed mid-write) is ignored."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


# -- checks -------------------------------------------------------------------------------------


def on_disk_problems(path: Path) -> list[str]:
    """Checks made on the files, before any Memory opens them (and repairs what it can).

    SQLite is consistent; every row has a whole vector; every cold reference
    names a file whose bytes hash to it; and index files whose state.json
    claims the store's current counter really hold exactly the store's rows.
    """
    problems: list[str] = []
    conn = sqlite3.connect(path / "omnimem.db")
    try:
        check = conn.execute("PRAGMA integrity_check").fetchall()
        if check != [("ok",)]:
            problems.append(f"integrity_check: {check[:3]}")
        dim = int(conn.execute("SELECT value FROM meta WHERE key='dim'").fetchone()[0])
        seq_row = conn.execute("SELECT value FROM meta WHERE key='seq'").fetchone()
        seq = int(seq_row[0]) if seq_row else 0
        rows = conn.execute("SELECT rid, id, length(embedding), raw_ref FROM units").fetchall()
    finally:
        conn.close()
    for rid, uid, size, ref in rows:
        if size != dim * 4:
            problems.append(f"unit {uid}: embedding of {size} bytes, expected {dim * 4}")
        if ref:
            cold = path / "cold" / ref[:2] / ref
            if not cold.exists():
                problems.append(f"unit {uid}: cold file {ref} missing")
            elif hashlib.sha256(cold.read_bytes()).hexdigest() != ref:
                problems.append(f"unit {uid}: cold file {ref} does not hash to its name")
    rids = {int(r[0]) for r in rows}
    state_file = path / "index" / "state.json"
    if state_file.exists():
        state = json.loads(state_file.read_text(encoding="utf-8"))
        if state.get("seq") == seq:  # the next open will trust these files: they must be exact
            dense_ids = _faiss_ids(faiss.read_index(str(path / "index" / "dense.faiss")))
            if dense_ids != rids:
                problems.append(f"dense.faiss claims seq {seq} but holds {len(dense_ids)} ids for {len(rids)} rows "
                                f"({len(dense_ids - rids)} without a row, {len(rids - dense_ids)} missing)")
            bm25_ids = path / "index" / "bm25" / "omnimem_ids.json"
            if bm25_ids.exists() and set(json.loads(bm25_ids.read_text(encoding="utf-8"))) != rids:
                problems.append(f"bm25 claims seq {seq} but its ids differ from the rows")
    return problems


def _faiss_ids(index: Any) -> set[int]:
    if isinstance(index, faiss.IndexIVF):
        inv = index.invlists
        return {int(i) for lst in range(inv.nlist)
                for i in faiss.rev_swig_ptr(inv.get_ids(lst), inv.list_size(lst))}
    return {int(i) for i in faiss.vector_to_array(index.id_map)}


def index_problems(mem: Memory, *, sample: int = 200, seed: int = 0) -> list[str]:
    """The open Memory's indexes agree with the hot tier, and vectors find their own units."""
    problems: list[str] = []
    rows = mem.store._conn.execute("SELECT rid, embedding FROM units").fetchall()
    units = mem.stats()["units"]
    if units != len(rows) or mem.indexes.sizes() != {"dense": units, "sparse": units}:
        problems.append(f"index sizes {mem.indexes.sizes()} for {units} units")
    dense_ids = {int(i) for i in mem.indexes.dense._all_vectors()[0]} if len(mem.indexes.dense) else set()
    rids = {int(r[0]) for r in rows}
    if dense_ids != rids:
        problems.append(f"dense index: {len(dense_ids - rids)} vectors without a row, {len(rids - dense_ids)} rows "
                        "without a vector")
    for rid, blob in random.Random(seed).sample(rows, min(sample, len(rows))):
        vec = np.frombuffer(blob, dtype=np.float32)
        found = mem.indexes.search_dense(vec, 3, None)
        if rid not in [r for r, _ in found]:
            problems.append(f"dense search for unit row {rid}'s own vector returned {found}")
    return problems


def hit_ids(mem: Memory, query: str, **kwargs: Any) -> list[str]:
    return [h.unit.id for h in mem.search(query, **kwargs).hits]


def residue(path: Path, tokens: list[str]) -> list[tuple[str, str]]:
    """(token, file) for every file under the store that still holds a forgotten unit's token."""
    if not tokens:
        return []
    files = [(p, p.read_bytes()) for p in path.rglob("*") if p.is_file()]
    found = []
    for token in tokens:
        needles = (f" {token} ".encode(), f'"{token}"'.encode(), f" {token}\x00".encode())
        for p, data in files:
            if any(n in data for n in needles) or data.endswith(f" {token}".encode()):
                found.append((token, str(p.relative_to(path))))
    return found


def cold_orphans(path: Path) -> list[str]:
    """Cold-tier files (and temp files) that no unit references; run with no Memory open."""
    cold = path / "cold"
    if not cold.is_dir():
        return []
    conn = sqlite3.connect(f"file:{path / 'omnimem.db'}?mode=ro", uri=True)
    try:
        refs = {r[0] for r in conn.execute("SELECT raw_ref FROM units WHERE raw_ref IS NOT NULL")}
    finally:
        conn.close()
    return sorted(str(p.relative_to(path)) for p in cold.rglob("*")
                  if p.is_file() and p.parent.name != ".writing" and p.name not in refs)


def grep_store(path: Path, needle: bytes) -> list[str]:
    """Every file under the store whose bytes hold ``needle``."""
    return sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file() and needle in p.read_bytes())


@pytest.fixture(scope="session")
def rel() -> Any:
    """The helpers above, for the test modules (conftest modules are not imported by name)."""
    import types

    return types.SimpleNamespace(
        start_child=start_child, read_log=read_log, on_disk_problems=on_disk_problems,
        index_problems=index_problems, hit_ids=hit_ids, residue=residue, mode=MODE, cold_orphans=cold_orphans,
        grep_store=grep_store,
    )
