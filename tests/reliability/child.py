"""The other process of the reliability tests: ``python child.py '<json config>'``.

Roles (``config["role"]``):

- ``ingest``: the crash harness's victim. Adds units, dialogues (some long
  enough for the cold tier), updates, forgets users and closes/reopens the
  store, in a seeded random order, until it is killed. Every operation that
  returned is appended to ``log`` (one JSON object a line, flushed), so the
  parent knows what was committed. With ``die_at = [point, n]`` the child
  SIGKILLs itself the n-th time it reaches that point (a real crash at an exact
  place: inside a write transaction, between two index files, ...); without
  it the parent kills it after a seeded delay.
- ``writer`` / ``reader``: the concurrency test's workers, until ``until``
  (a ``time.time()`` value); they report what they wrote, saw and raised.
- ``second``: opens a store another process is using, writes and reads.
- ``forget``: forgets one user (with ``die_at``, dies part way).
- ``orphan``: adds one long text and dies inside its write transaction.

Text carries a unique token per unit (``k<seed>x<n>``) and a tag naming its
user (``owner<user>``), so the parent can search for exactly one unit and
readers can tell whose text a hit really is.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any

WORDS = (
    "kayak garden piano recipe hiking violin museum coffee winter beach library bicycle "
    "painting tomato harbor lantern meadow orbit puzzle quartz river saddle thunder "
    "umbrella velvet walnut yogurt zephyr anchor biscuit canyon dolphin ember falcon"
).split()


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def unit_text(rng: random.Random, token: str, user: str, *, long: bool = False) -> str:
    body = sentence(rng, rng.randint(4, 9))
    if long:  # past summary_words (150): the full text goes to the cold tier
        body += " " + " ".join(f"{sentence(rng, 8)} {token}" for _ in range(20))
    return f"owner{user} {token} {body}"


class Log:
    """Append-only JSON lines, flushed at every record (a SIGKILL loses nothing written)."""

    def __init__(self, path: str) -> None:
        self._fh = open(path, "a", encoding="utf-8")  # noqa: SIM115 - lives as long as the process

    def write(self, **record: Any) -> None:
        self._fh.write(json.dumps(record) + "\n")
        self._fh.flush()


# -- crash points ---------------------------------------------------------------------------


def arm(point: str, n: int) -> None:
    """SIGKILL this process the ``n``-th time it reaches ``point``."""
    from omnimem.embed.fake import FakeEmbedder
    from omnimem.index.dense import DenseIndex
    from omnimem.index.sparse import SparseIndex
    from omnimem.store.cold import FileColdStore
    from omnimem.store.sqlite.store import SQLiteStore

    hits = [0]

    def hit() -> None:
        hits[0] += 1
        if hits[0] >= n:
            os.kill(os.getpid(), signal.SIGKILL)

    def before(cls: Any, name: str) -> None:
        original = getattr(cls, name)

        def wrapped(self: Any, *args: Any, **kwargs: Any) -> Any:
            hit()
            return original(self, *args, **kwargs)

        setattr(cls, name, wrapped)

    def after(cls: Any, name: str) -> None:
        original = getattr(cls, name)

        def wrapped(self: Any, *args: Any, **kwargs: Any) -> Any:
            out = original(self, *args, **kwargs)
            hit()
            return out

        setattr(cls, name, wrapped)

    places = {
        "embed": lambda: before(FakeEmbedder, "embed"),  # model-free embedding, nothing written yet
        "cold_put": lambda: after(FileColdStore, "put"),  # cold file written, its row not yet
        "in_tx": lambda: after(SQLiteStore, "_bump"),  # inside a write transaction, before COMMIT
        "after_commit": lambda: after(SQLiteStore, "insert"),  # committed, indexes not told, id not returned
        "dense_save": lambda: after(DenseIndex, "save"),  # dense.faiss replaced, bm25 and state.json not
        "sparse_save": lambda: after(SparseIndex, "save"),  # both index files replaced, state.json not
        "cold_delete": lambda: before(FileColdStore, "delete"),  # forget committed, cold file not yet removed
        "scrub": lambda: before(SQLiteStore, "scrub"),  # forget committed and indexes saved, WAL not checkpointed
    }
    places[point]()


# -- roles --------------------------------------------------------------------------------------


def ingest(cfg: dict[str, Any]) -> None:
    from omnimem import Memory

    rng = random.Random(cfg["seed"])
    log = Log(cfg["log"])
    if cfg.get("die_at"):
        arm(*cfg["die_at"])
    users = cfg.get("users", ["u0", "u1", "u2", "u3"])
    mem = Memory(cfg["path"], embedder="fake")
    log.write(op="ready")
    counter = 0
    short: dict[str, list[str]] = {u: [] for u in users}  # this run's updatable (short, active) units
    for _ in range(cfg.get("max_ops", 400)):
        roll = rng.random()
        user = rng.choice(users)
        if roll < 0.45:
            counter += 1
            token = f"k{cfg['seed']}x{counter}"
            long = rng.random() < 0.3
            res = mem.add(unit_text(rng, token, user, long=long), user_id=user, speaker="Ann")
            if res.accepted and long:
                log.write(op="add", id=res.id, user=user, token=token)
            elif res.accepted:
                log.write(op="add", id=res.id, user=user, token=token)
                short[user].append(res.id)
        elif roll < 0.70:
            turns, tokens = [], []
            for _ in range(rng.randint(2, 6)):
                counter += 1
                tokens.append(f"k{cfg['seed']}x{counter}")
                turns.append({"speaker": rng.choice(["Ann", "Bob"]), "time": "2024-03-0%d" % rng.randint(1, 9),
                              "text": unit_text(rng, tokens[-1], user, long=rng.random() < 0.2)})
            session = f"s{rng.randint(0, 3)}"
            for res, token in zip(mem.add_dialogue(turns, user_id=user, session_id=session), tokens):
                if res.accepted:
                    log.write(op="add", id=res.id, user=user, token=token)
        elif roll < 0.80:
            if short[user]:
                old = short[user].pop(rng.randrange(len(short[user])))
                counter += 1
                token = f"k{cfg['seed']}x{counter}"
                res = mem.update(old, text=unit_text(rng, token, user))
                if res.accepted:
                    log.write(op="update", old=old, id=res.id, user=user, token=token)
                short[user].append(str(res.id) if res.accepted else old)
        elif roll < 0.88:
            log.write(op="forget-begin", user=user)
            n = mem.forget(user_id=user)
            log.write(op="forget-done", user=user, n=n)
            short[user].clear()
        else:
            mem.close()
            log.write(op="closed")
            mem = Memory(cfg["path"])
            log.write(op="reopened")
    mem.close()
    log.write(op="end")


def _sleep_until(when: float) -> None:
    while time.time() < when:
        time.sleep(0.01)


def writer(cfg: dict[str, Any]) -> dict[str, Any]:
    from omnimem import Memory

    rng = random.Random(cfg["seed"])
    log = Log(cfg["log"])
    out: dict[str, Any] = {"ids": [], "forgotten": 0, "errors": []}
    _sleep_until(cfg["start"])
    mem = Memory(cfg["path"], embedder="fake")
    n = 0
    # until the end of the window, and on past it until this writer has written something: on a loaded machine
    # opening the store can take most of a short window (a minute more at most)
    while time.time() < cfg["until"] or (not out["ids"] and time.time() < cfg["until"] + 60):
        user = rng.choice(cfg["users"])
        try:
            n += 1
            roll = rng.random()
            if roll >= cfg.get("forget_share", 0.0) and roll < 0.6:
                res = mem.add(unit_text(rng, f"w{cfg['seed']}x{n}", user), user_id=user)
                ids = [res.id] if res.accepted else []
            elif roll >= cfg.get("forget_share", 0.0):
                turns = [{"speaker": "Ann", "text": unit_text(rng, f"w{cfg['seed']}x{n}t{i}", user)} for i in range(3)]
                ids = [r.id for r in mem.add_dialogue(turns, user_id=user, session_id="s1") if r.accepted]
            else:  # a throwaway session, forgotten at once: forget (and its WAL scrub) under load
                turns = [{"speaker": "Ann", "text": unit_text(rng, f"w{cfg['seed']}x{n}t{i}", user)} for i in range(2)]
                stored = [r.id for r in mem.add_dialogue(turns, user_id=user, session_id=f"tmp{n}") if r.accepted]
                if mem.forget(user_id=user, session_id=f"tmp{n}") != len(stored):
                    out["errors"].append(f"forget of tmp{n} removed a different number than {len(stored)}")
                out["forgotten"] += len(stored)
                ids = []
            for uid in ids:
                log.write(op="add", id=uid, user=user)
            out["ids"].extend(ids)
        except Exception as exc:  # any error reaching the user is a failure; keep going to count them
            out["errors"].append(f"{type(exc).__name__}: {exc}")
    _sleep_until(cfg["close_at"])
    try:
        mem.close()
    except Exception as exc:
        out["errors"].append(f"close: {type(exc).__name__}: {exc}")
    return out


def reader(cfg: dict[str, Any]) -> dict[str, Any]:
    from omnimem import Memory

    rng = random.Random(cfg["seed"])
    out: dict[str, Any] = {"searches": 0, "hits": 0, "leaks": [], "errors": []}
    _sleep_until(cfg["start"])
    mem = Memory(cfg["path"], embedder="fake")
    while time.time() < cfg["until"] or (not out["searches"] and time.time() < cfg["until"] + 60):  # as a writer
        user = rng.choice(cfg["users"])
        try:
            ctx = mem.search(sentence(rng, rng.randint(1, 3)), user_id=user)
            out["searches"] += 1
            out["hits"] += len(ctx.hits)
            for hit in ctx.hits:
                if hit.unit.user_id != user or not hit.unit.summary.startswith(f"owner{user} "):
                    out["leaks"].append([user, hit.unit.user_id, hit.unit.summary[:40]])
        except Exception as exc:
            out["errors"].append(f"{type(exc).__name__}: {exc}")
    _sleep_until(cfg["close_at"])
    try:
        mem.close()
    except Exception as exc:
        out["errors"].append(f"close: {type(exc).__name__}: {exc}")
    return out


def second(cfg: dict[str, Any]) -> dict[str, Any]:
    """Open a store that another process holds open; write, then read both processes' units."""
    from omnimem import Memory

    with Memory(cfg["path"]) as mem:
        added = mem.add(f"owner{cfg['user']} {cfg['token']} written by the second process", user_id=cfg["user"])
        seen = [h.unit.id for h in mem.search(cfg["query"], user_id=cfg["query_user"]).hits]
        return {"id": added.id, "seen": seen, "units": mem.stats()["units"]}


def main() -> None:
    cfg = json.loads(sys.argv[1])
    role = cfg["role"]
    if role == "ingest":
        ingest(cfg)
        return
    if role == "orphan":  # one long text, killed inside its write transaction: its cold file has no unit
        from omnimem import Memory

        arm("in_tx", 1)
        Memory(cfg["path"]).add(cfg["text"], user_id=cfg["user"])
        return
    if role == "forget":  # one forget, usually killed part way (die_at)
        from omnimem import Memory

        if cfg.get("die_at"):
            arm(*cfg["die_at"])
        Memory(cfg["path"]).forget(user_id=cfg["user"])
        return
    try:
        result = {"writer": writer, "reader": reader, "second": second}[role](cfg)
    except Exception:
        result = {"fatal": traceback.format_exc()}
    Path(cfg["result"]).write_text(json.dumps(result), encoding="utf-8")


if __name__ == "__main__":
    main()
