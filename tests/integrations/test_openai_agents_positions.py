"""Several writers on one conversation: two ``OmnimemSession`` objects on the same (user, session), threads,
and two processes adding at once. Every item keeps its own position: positions are unique and gap-free per
session, ``get_items()`` returns every item once, and each writer's items come back in the order it added them.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from omnimem import Memory
from omnimem.integrations.openai_agents import META, OmnimemSession
from tests.postgres_server import PostgresServer

ROOT = Path(__file__).resolve().parents[2]
EACH = 40  # items per writer


def item(writer: str, n: int) -> dict[str, Any]:
    return {"role": "user", "content": f"{writer} says {n}"}


def check_the_conversation(memory: Memory, writers: list[str], user: str = "ana", session: str = "chat") -> None:
    """Every writer's items are there once, in its own order, at unique positions 0..N-1."""
    items = asyncio.run(OmnimemSession(memory, session_id=session, user_id=user).get_items())
    assert sorted(i["content"] for i in items) == sorted(item(w, n)["content"] for w in writers for n in range(EACH))
    for writer in writers:
        assert [i["content"] for i in items if i["content"].startswith(f"{writer} ")] == \
            [item(writer, n)["content"] for n in range(EACH)]
    positions = sorted(u.metadata[META]["seq"] for u in memory.units(user_id=user, session_id=session, limit=1000))
    assert positions == list(range(len(writers) * EACH))  # no position twice, none skipped


@pytest.mark.parametrize("engine", ["memory", "path", "postgresql"])
def test_two_sessions_on_one_conversation_in_threads(make_memory: Callable[..., Memory]) -> None:
    memory = make_memory()
    sessions = [OmnimemSession(memory, session_id="chat", user_id="ana") for _ in range(2)]
    writers = ["a0", "a1", "b0", "b1"]  # two threads on each session
    start = threading.Barrier(len(writers))
    failures: list[BaseException] = []

    def write(name: str) -> None:
        session = sessions[0 if name.startswith("a") else 1]
        start.wait()
        try:
            for n in range(0, EACH, 4):  # one item, then three at once
                asyncio.run(session.add_items([item(name, n)]))
                asyncio.run(session.add_items([item(name, n + k) for k in (1, 2, 3)]))
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    threads = [threading.Thread(target=write, args=(name,)) for name in writers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert failures == []
    check_the_conversation(memory, writers)
    last = asyncio.run(sessions[0].get_items())[-1]
    assert asyncio.run(sessions[1].pop_item()) == last  # either session pops the conversation's last item
    assert len(asyncio.run(sessions[0].get_items())) == len(writers) * EACH - 1


WRITER = """
import asyncio, sys
from omnimem import Memory
from omnimem.integrations.openai_agents import OmnimemSession
where, name, each = sys.argv[1], sys.argv[2], int(sys.argv[3])
with (Memory(url=where, embedder="fake") if "://" in where else Memory(where, embedder="fake")) as memory:
    session = OmnimemSession(memory, session_id="chat", user_id="ana")
    print("ready", flush=True)
    sys.stdin.readline()  # both processes start adding at once
    for n in range(each):
        asyncio.run(session.add_items([{"role": "user", "content": f"{name} says {n}"}]))
"""


@pytest.mark.parametrize("backend", ["path", "postgresql"])
def test_two_processes_adding_at_once(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    if backend == "postgresql":
        server: PostgresServer = request.getfixturevalue("postgres")
        where = server.fresh()
    else:
        where = str(tmp_path / "store")
        Memory(where, embedder="fake").close()  # created once, before the processes open it
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMNIMEM_EMBEDDER": "fake"}
    writers = ["p0", "p1"]
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, where, name, str(EACH)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for name in writers]
    try:
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        outcomes = [proc.communicate(timeout=300) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    assert [proc.returncode for proc in procs] == [0, 0], json.dumps([err[-2000:] for _, err in outcomes])
    with (Memory(url=where, embedder="fake") if backend == "postgresql" else Memory(where, embedder="fake")) as mem:
        check_the_conversation(mem, writers)


def test_two_sessions_popping_at_once_pop_each_item_once(tmp_path: Path) -> None:
    with Memory(tmp_path / "m", embedder="fake") as memory:
        asyncio.run(OmnimemSession(memory, session_id="chat", user_id="ana").add_items(
            [item("a", n) for n in range(EACH)]))
        sessions = [OmnimemSession(memory, session_id="chat", user_id="ana") for _ in range(2)]
        start = threading.Barrier(2)
        popped: list[list[Any]] = [[], []]

        def pop(k: int) -> None:
            start.wait()
            popped[k] += [asyncio.run(sessions[k].pop_item()) for _ in range(EACH // 2)]

        threads = [threading.Thread(target=pop, args=(k,)) for k in (0, 1)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

        for mine in popped:  # each session popped newest first
            assert [i["content"] for i in mine] == sorted((i["content"] for i in mine),
                                                          key=lambda c: -int(c.split()[-1]))
        assert sorted(i["content"] for i in popped[0] + popped[1]) == sorted(item("a", n)["content"]
                                                                             for n in range(EACH))
        assert asyncio.run(sessions[0].get_items()) == []
