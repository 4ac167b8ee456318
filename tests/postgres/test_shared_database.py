"""Stateless processes: one database shared by many processes, with no lock errors."""

from __future__ import annotations

import multiprocessing as mp
from typing import Any

from omnimem import Memory
from omnimem.mau import Scope


def _add(url: str, text: str, user: str) -> str:
    with Memory(url=url, embedder="fake") as m:
        result = m.add(text, user_id=user)
        assert result.id is not None
        return result.id


def _writer(url: str, n: int, errors: Any) -> None:
    try:
        with Memory(url=url, embedder="fake", novelty=False) as m:
            for i in range(10):
                m.add(f"writer {n} note {i} about topic {i % 3}", user_id=f"w{n}", session_id="shared")
                m.add(f"team note {n}-{i}", user_id="team", session_id="standup")  # one session, four writers
    except Exception as exc:  # reported to the parent: any lock or serialisation error fails the test
        errors.put(f"writer {n}: {type(exc).__name__}: {exc}")


def _reader(url: str, n: int, errors: Any) -> None:
    try:
        with Memory(url=url, embedder="fake") as m:
            for i in range(15):
                m.search(f"note about topic {i % 3}", user_id=f"w{i % 4}")
                m.search("team note")
    except Exception as exc:
        errors.put(f"reader {n}: {type(exc).__name__}: {exc}")


def test_a_write_by_one_process_is_seen_by_the_next_search_of_another(pg_url: str) -> None:
    ctx = mp.get_context("spawn")
    with Memory(url=pg_url, embedder="fake") as here:
        assert here.search("kayak", user_id="ann").hits == ()
        with ctx.Pool(1) as pool:
            theirs = pool.apply(_add, (pg_url, "Ann bought a red kayak", "ann"))
        assert [h.unit.id for h in here.search("red kayak", user_id="ann").hits] == [theirs]
        mine = here.add("Ann sold the red kayak again", user_id="ann").id
        with ctx.Pool(1) as pool:
            seen = pool.apply(_search_ids, (pg_url, "sold kayak", "ann"))
        assert mine in seen and theirs in seen


def _search_ids(url: str, query: str, user: str) -> list[str]:
    with Memory(url=url, embedder="fake") as m:
        return [h.unit.id for h in m.search(query, user_id=user).hits]


def test_four_writers_and_four_readers_share_one_database(pg_url: str) -> None:
    Memory(url=pg_url, embedder="fake").close()  # the embedder is recorded once, before the crowd arrives
    ctx = mp.get_context("spawn")
    errors = ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(pg_url, n, errors)) for n in range(4)]
    procs += [ctx.Process(target=_reader, args=(pg_url, n, errors)) for n in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(300)
    found = [errors.get() for _ in range(errors.qsize())] if not errors.empty() else []
    assert found == [] and [p.exitcode for p in procs] == [0] * 8
    with Memory(url=pg_url, embedder="fake") as m:
        assert m.stats()["units"] == 80
        chain = m.store.get(m.store.ids_in_scope(Scope("team", None, "standup")))
        assert len(chain) == 40
        assert sum(u.links.prev_id is None for u in chain) == 1  # one chain through the shared session
        assert len({u.links.prev_id for u in chain}) == 40
