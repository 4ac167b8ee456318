"""A large dialogue is written in batches, and other writers' adds are written between them.

The dialogue's progress callback runs after each batch is committed; there the
test starts another user's add and waits for it. It completes before the
dialogue's next batch is written (its row lies between the dialogue's rows),
where it used to wait for the whole dialogue. What a reader sees mid-dialogue
(the committed batches) and what a crash leaves (whole batches, and a re-run
stores the rest) is what docs/http-api.md says.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from omnimem import Memory
from omnimem.engine.ingest.pipeline import BATCH
from omnimem.mau import Scope
from tests.conftest import open_memory
from tests.postgres_server import PostgresServer

TURNS = 3 * BATCH + 10


def _turns(n: int, tag: str = "") -> list[dict[str, Any]]:
    return [{"text": f"{tag}line {i} about the harbour lantern number {i}", "speaker": ("Ann", "Bob")[i % 2],
             "id": f"t{i}"} for i in range(n)]


@pytest.fixture(params=["path", "postgresql"])
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    server: PostgresServer | None = request.getfixturevalue("postgres") if request.param == "postgresql" else None
    m = open_memory(request.param, tmp_path, server)
    yield m
    m.close()


def test_another_users_add_is_written_between_two_batches_of_a_large_dialogue(memory: Memory) -> None:
    seen: list[int] = []  # units of the dialogue a reader sees at each batch's progress call
    reported: list[int] = []  # turns the progress calls reported by then
    other: list[str] = []

    def progress(done: int) -> None:
        reported.append((reported[-1] if reported else 0) + done)
        seen.append(len(memory.store.ids_in_scope(Scope("ann"))))
        if len(seen) == 1:  # after the first batch: bob adds, and the dialogue waits for his add to return
            add = threading.Thread(target=lambda: other.append(
                memory.add("bob keeps his bicycle in the shed", user_id="bob").id or ""))
            add.start()
            add.join(timeout=20)
            assert other, "bob's add did not complete while ann's dialogue was being written"

    results = memory.add_dialogue(_turns(TURNS), user_id="ann", session_id="s1", progress=progress)
    assert sum(r.accepted for r in results) == TURNS
    assert seen == reported  # a reader sees each batch once it is committed
    assert seen[0] == BATCH and seen[-1] == TURNS
    ann = sorted(rid for rid, _ in memory.store.get_with_rids(memory.store.ids_in_scope(Scope("ann"))))
    [(bob, _)] = memory.store.get_with_rids(other)
    assert ann[BATCH - 1] < bob < ann[BATCH]  # written after the first batch, before the second
    assert memory.search("bicycle shed", user_id="bob").hits[0].unit.id == other[0]


def test_a_large_dialogue_keeps_its_decisions_across_batches(memory: Memory) -> None:
    turns = _turns(TURNS)
    turns[BATCH + 3] = dict(turns[2])  # turn 2 again, in the second batch: a duplicate of it
    results = memory.add_dialogue(turns, user_id="ann", session_id="s1")
    assert [r.reason for r in results].count("duplicate") == 1
    assert results[BATCH + 3].duplicate_of == results[2].id
    again = memory.add_dialogue(turns, user_id="ann", session_id="s1")  # idempotent: nothing stored twice
    assert not any(r.accepted for r in again)
    assert memory.stats()["units"] == TURNS - 1


CRASHING_CHILD = """
import json, os, signal, sys
from omnimem import Memory
memory = Memory(sys.argv[1], embedder="fake")
turns = json.loads(open(sys.argv[2], encoding="utf-8").read())
batches = []
def progress(done):
    batches.append(done)
    if len(batches) == 2:  # two batches are committed: die before the third is written
        os.kill(os.getpid(), signal.SIGKILL)
memory.add_dialogue(turns, user_id="ann", session_id="s1", progress=progress)
"""


def test_a_crash_mid_dialogue_leaves_whole_batches_and_a_rerun_stores_the_rest(tmp_path: Path) -> None:
    store, source = tmp_path / "store", tmp_path / "turns.json"
    turns = _turns(TURNS)
    source.write_text(json.dumps(turns), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMNIMEM_")} | {"OMNIMEM_CONFIG": os.devnull}
    child = subprocess.run([sys.executable, "-c", textwrap.dedent(CRASHING_CHILD), str(store), str(source)],
                           env=env, capture_output=True, text=True, timeout=120)
    assert child.returncode == -signal.SIGKILL, child.stderr
    with Memory(store, embedder="fake") as memory:
        assert memory.stats()["units"] == 2 * BATCH  # each batch is atomic: two whole ones, nothing of the third
        rerun = memory.add_dialogue(turns, user_id="ann", session_id="s1")
        assert [r.reason for r in rerun].count("duplicate") == 2 * BATCH
        assert sum(r.accepted for r in rerun) == TURNS - 2 * BATCH
        assert sorted(s for u in memory.store.get(memory.store.ids_in_scope(Scope("ann"))) for s in u.source_ids) \
            == sorted(t["id"] for t in turns)
