"""The indexes grow and shrink with the store without rebuilding, and never return a removed unit.

Random mixes of adds (dialogues and single units), deletes, updates,
forgets, reopens and writes through a second handle (another engine on the
same folder: its writes reach this one through the change counter, as
another process's would). After every step:

- no deleted or forgotten unit is found by any search path, by its own
  unique word, also not through the BM25 text of the unit after it in its
  session (``sparse_context`` 1, the default, puts its words there);
- the incremental indexes answer exactly like indexes rebuilt from scratch
  from the same store (BM25 results and scores, dense ids);
- nothing was rebuilt after the first open.
"""

from __future__ import annotations

import random
import tempfile
import threading
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from omnimem import Memory
from omnimem.index.manager import IndexSet

WORDS = "kayak garden piano recipe hiking violin museum coffee winter beach library bicycle".split()


def check(m: Memory, gone: set[str], tokens: dict[str, str], probes: list[str]) -> None:
    m.indexes.sync()  # what every search does first: catch up with the other handle's writes
    fresh = IndexSet(m.store, m.embedder.dim, None, sparse_context=m.settings.sparse_context)
    live = set(m.store.all_rids().tolist())
    assert set(m.indexes.sparse.rids().tolist()) == live
    assert {int(i) for i in m.indexes.dense._all_vectors()[0]} == live if live else len(m.indexes.dense) == 0
    for probe in probes:
        assert m.indexes.search_sparse(probe, 40, None) == fresh.search_sparse(probe, 40, None), probe
    for uid in gone:
        word = tokens[uid]
        for found in (m.search(word, budget=400), m.search(word, budget=400, user_id="u1")):
            assert uid not in {h.unit.id for h in found.hits}
            assert not any(word in h.text for h in found.hits)
        assert fresh.search_sparse(word, 5, None) == []
        assert m.indexes.search_sparse(word, 5, None) == []  # not even through a neighbour's context


def run(path: Path, seed: int, steps: int) -> None:
    rng = random.Random(seed)
    tokens: dict[str, str] = {}
    gone: set[str] = set()
    counter = [0]

    def text() -> tuple[str, str]:
        counter[0] += 1
        word = f"zq{seed}w{counter[0]}x"  # no word is a prefix of another
        return word, f"{word} " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 7)))

    m = Memory(path, embedder="fake")
    other: Memory | None = None
    rebuilds = m.indexes.rebuilds
    try:
        for _ in range(steps):
            op = rng.choice(["dialogue", "dialogue", "add", "delete", "delete", "update", "forget", "reopen", "other"])
            alive = [u for u in tokens if u not in gone]
            if op == "dialogue":
                turns = []
                for i in range(rng.randint(2, 6)):
                    word, body = text()
                    turns.append({"text": body, "speaker": rng.choice(["Ann", "Bo"])})
                    turns[-1]["word"] = word
                session = f"s{rng.randint(0, 3)}"
                results = m.add_dialogue([{k: v for k, v in t.items() if k != "word"} for t in turns],
                                         user_id=rng.choice(["u1", "u2"]), session_id=session)
                for t, r in zip(turns, results):
                    if r.id:
                        tokens[r.id] = t["word"]
            elif op == "add":
                word, body = text()
                r = m.add(body, user_id=rng.choice(["u1", "u2"]), session_id=f"s{rng.randint(0, 3)}")
                if r.id:
                    tokens[r.id] = word
            elif op == "delete" and alive:
                uid = rng.choice(alive)
                m.delete(uid)
                gone.add(uid)
            elif op == "update" and alive:
                uid = rng.choice(alive)
                word, body = text()
                if m.get(uid).superseded_by is None:  # only a current unit can be updated
                    new = m.update(uid, text=body)
                    if new.id:
                        tokens[new.id] = word
            elif op == "forget" and alive:
                uid = rng.choice(alive)
                session = m.get(uid).session_id
                user = m.get(uid).user_id
                before = set(m.store.ids_in_scope(m.get(uid).scope))
                m.forget(user_id=user, session_id=session)
                gone |= before & set(tokens)
            elif op == "reopen":
                m.close()
                m = Memory(path)
                rebuilds = m.indexes.rebuilds  # loaded from the files it saved, no rebuild expected
                assert rebuilds == 0
            elif op == "other" and alive:
                other = other or Memory(path)
                word, body = text()
                r = other.add(body, user_id="u1", session_id="s1")
                if r.id:
                    tokens[r.id] = word
                victim = rng.choice(alive)
                other.delete(victim)
                gone.add(victim)
            probes = [tokens[u] for u in rng.sample(sorted(tokens), min(3, len(tokens)))] + ["kayak garden", "violin"]
            check(m, gone, tokens, probes)
            assert m.indexes.rebuilds == rebuilds
    finally:
        m.close()
        if other is not None:
            other.close()


@settings(max_examples=6, deadline=None)
@given(st.integers(0, 10_000))
def test_random_mixes_never_return_removed_units_and_match_a_rebuild(seed: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        run(Path(tmp) / "store", seed, steps=25)


def test_first_search_after_a_write_does_not_rebuild(store_path: Path) -> None:
    with Memory(store_path, embedder="fake") as m:
        m.add_dialogue([{"text": f"turn {i} about the {w}", "speaker": "Ann"} for i, w in enumerate(WORDS)],
                       user_id="u", session_id="s")
        segments_before = m.indexes.sparse.segments
        r = m.add("a new memory about a yellow submarine", user_id="u", session_id="s")
        assert m.search("yellow submarine").hits[0].unit.id == r.id
        assert m.indexes.rebuilds == 1 and m.indexes.catchups == 0  # the one at creation
        assert m.indexes.sparse.segments <= segments_before + 1


def test_catch_up_with_another_handle_is_incremental(store_path: Path) -> None:
    with Memory(store_path, embedder="fake") as a, Memory(store_path) as b:
        opened = b.indexes.rebuilds  # a new store has no index files yet: built once at open
        uid = a.add("a memory about a blue bicycle", user_id="u").id
        assert b.search("blue bicycle").hits[0].unit.id == uid
        a.delete(uid)
        assert b.search("blue bicycle").hits == ()
        assert b.indexes.rebuilds == opened and b.indexes.catchups >= 2


def test_searches_run_beside_a_writer_and_never_see_removed_units(store_path: Path) -> None:
    with Memory(store_path, embedder="fake") as m:
        keep = [r.id for r in m.add_dialogue([{"text": f"steady fact {i} about gardens", "speaker": "Ann"}
                                              for i in range(20)], user_id="u", session_id="s")]
        errors: list[BaseException] = []
        stop = threading.Event()
        removed: set[str] = set()

        def reader() -> None:
            try:
                while not stop.is_set():
                    gone_before = set(removed)  # deleted before this search began: must never be returned
                    ids = {h.unit.id for h in m.search("gardens ephemeral", budget=2000).hits}
                    assert not ids & gone_before
                    assert set(keep) <= ids
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=reader) for _ in range(3)]
        for t in threads:
            t.start()
        for i in range(15):
            uid = m.add(f"ephemeral note {i} about gardens", user_id="u", session_id="s").id
            assert uid is not None
            m.delete(uid)
            removed.add(uid)
        stop.set()
        for t in threads:
            t.join()
        assert not errors, errors[0]
        assert np.all(np.isin(m.indexes.sparse.rids(), m.store.all_rids()))
