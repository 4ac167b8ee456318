"""Negative evals: forgotten units are never returned, and no scope ever sees another's units.

A seeded random corpus over users, agents and sessions (some units long, so
their text is in the cold tier; some updated, so superseded versions exist) is
forgotten in part by every kind of selection (user, user + session, agent,
event-time range, unit ids, delete). Then random queries drawn from the
corpus's words (and the forgotten units' own unique tokens) go through every
search path: dense only, BM25 only, hybrid, the knowledge graph, ``as_of``
before the forget, ``include_superseded``, and ``export``.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from omnimem import Memory, NotFoundError

WORDS = ("kayak garden piano recipe hiking violin museum coffee winter beach library bicycle painting tomato "
         "harbor lantern meadow orbit puzzle quartz river saddle thunder umbrella velvet walnut").split()
USERS = ("ann", "bob", "cy", "dee")
AGENTS = (None, "ag1", "ag2")
SESSIONS = (None, "s1", "s2", "s3")
NAMES = ("Alice", "Bruno", "Chen", "Dana", "Elif", "Farid")
PLACES = ("Paris", "Berlin", "Tokyo", "Lima", "Oslo", "Cairo")


@dataclass
class Unit:
    user: str
    agent: str | None
    session: str | None
    token: str
    day: int


def _build(path: Path, n: int, seed: int, *, graph: bool = False) -> dict[str, Unit]:
    """A seeded corpus; returns id -> what was stored (the test's own record, not the store's)."""
    rng = random.Random(seed)
    units: dict[str, Unit] = {}
    with Memory(path, embedder="fake", graph=graph) as mem:
        for i in range(n):
            user, agent, session = rng.choice(USERS), rng.choice(AGENTS), rng.choice(SESSIONS)
            token, day = f"zq{seed}n{i}", rng.randint(1, 28)
            words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 9)))
            if graph:
                text = f"{rng.choice(NAMES)} met {rng.choice(NAMES)} in {rng.choice(PLACES)} about {words} {token}"
            else:
                text = f"{token} {words}" + (f" {token} " + words * 8 if rng.random() < 0.15 else "")
            res = mem.add(text, user_id=user, agent_id=agent, session_id=session, time=f"2024-02-{day:02d}",
                          speaker=rng.choice(NAMES))
            if res.accepted:
                units[str(res.id)] = Unit(user, agent, session, token, day)
        for uid in rng.sample(sorted(units), len(units) // 10):  # corrections: the old versions are superseded
            old = units[uid]
            token = old.token + "u"
            new = mem.update(uid, text=f"{token} corrected " + " ".join(rng.choice(WORDS) for _ in range(5)))
            if new.accepted:
                units[str(new.id)] = Unit(old.user, old.agent, old.session, token, old.day)
    return units


def _forget_some(mem: Memory, units: dict[str, Unit], seed: int) -> set[str]:
    """Forget by every kind of selection; returns what should be gone (computed from our records)."""
    rng = random.Random(seed)
    users = rng.sample(USERS, 4)
    agent = rng.choice(AGENTS[1:])
    gone: set[str] = set()

    def drop(pred: Any, removed: int) -> None:
        chosen = {uid for uid, u in units.items() if uid not in gone and pred(u)}
        assert removed == len(chosen), f"forget removed {removed}, expected {len(chosen)}"
        gone.update(chosen)

    drop(lambda u: u.user == users[0], mem.forget(user_id=users[0]))
    drop(lambda u: u.user == users[1] and u.session == "s1", mem.forget(user_id=users[1], session_id="s1"))
    drop(lambda u: u.agent == agent and u.user == users[2], mem.forget(user_id=users[2], agent_id=agent))
    drop(lambda u: u.user == users[3] and 10 <= u.day < 20,
         mem.forget(user_id=users[3], since="2024-02-10", until="2024-02-20"))
    left = sorted(set(units) - gone)
    picked = set(rng.sample(left, min(5, len(left))))
    gone.update(uid for uid in picked if mem.forget(unit_ids=[uid]) == 1)
    for uid in rng.sample(sorted(set(units) - gone), 2):
        mem.delete(uid)
        gone.add(uid)
    return gone


def _scope_of(u: Unit) -> tuple[str | None, ...]:
    return (u.user, u.agent, u.session)


def _random_scope(rng: random.Random) -> dict[str, str]:
    scope = {"user_id": rng.choice((None, *USERS)), "agent_id": rng.choice(AGENTS), "session_id": rng.choice(SESSIONS)}
    return {k: v for k, v in scope.items() if v is not None}


def _in_scope(u: Unit, scope: dict[str, str]) -> bool:
    want = (scope.get("user_id"), scope.get("agent_id"), scope.get("session_id"))
    return all(w is None or w == h for w, h in zip(want, _scope_of(u)))


def _queries(units: dict[str, Unit], gone: set[str], n: int, rng: random.Random) -> list[str]:
    gone_tokens = [units[g].token for g in sorted(gone)]
    out = []
    for i in range(n):
        words = rng.sample(WORDS + list(NAMES + PLACES), rng.randint(1, 3))
        if gone_tokens and i % 2 == 0:  # aim straight at a forgotten unit's unique token
            words.append(rng.choice(gone_tokens))
        out.append(" ".join(words))
    return out


def _probe(paths: dict[str, Memory], units: dict[str, Unit], gone: set[str], before: datetime, queries: list[str],
           rng: random.Random) -> dict[str, Any]:
    searches = forgotten = leaks = unknown = 0
    examples: list[str] = []
    for name, mem in paths.items():
        for query in queries:
            scope = _random_scope(rng)
            for variant in ({}, {"include_superseded": True}, {"as_of": before},
                            {"as_of": before, "include_superseded": True}, {"top_k": 60}):
                for where in ({}, scope):
                    searches += 1
                    for hit in mem.search(query, **where, **variant).hits:  # type: ignore[arg-type]
                        uid = hit.unit.id
                        if uid in gone:
                            forgotten += 1
                            examples.append(f"{name} {variant} returned forgotten {uid} for {query!r}")
                        elif uid not in units:
                            unknown += 1
                            examples.append(f"{name} returned a unit nobody stored: {uid}")
                        elif not _in_scope(units[uid], where):
                            leaks += 1
                            examples.append(f"{name} {where} returned {uid} of scope {_scope_of(units[uid])}")
    return {"searches": searches, "forgotten_returned": forgotten, "leaks_across_scopes": leaks,
            "unknown_units": unknown, "examples": examples[:10]}


def _export_problems(mem: Memory, units: dict[str, Unit], gone: set[str]) -> list[str]:
    problems = []
    dumps = [list(mem.export(all=True))] + [list(mem.export(user_id=u)) for u in USERS]
    for dump in dumps:
        text = json.dumps(dump)
        scope = {k: dump[0][k] for k in ("user_id", "agent_id", "session_id") if dump[0].get(k)}
        for record in dump:
            if record["kind"] == "unit" and record["id"] in gone:
                problems.append(f"export {scope} holds forgotten unit {record['id']}")
            if record["kind"] == "unit" and record["id"] in units and not _in_scope(units[record["id"]], scope):
                problems.append(f"export {scope} holds unit {record['id']} of another scope")
        problems += [f"export {scope} holds forgotten text {units[g].token}" for g in gone
                     if f"{units[g].token} " in text or f"{units[g].token}\"" in text]
    for uid in sorted(gone)[:20]:
        with pytest.raises(NotFoundError):
            mem.get(uid)
    return problems


def test_forgotten_units_are_never_returned_and_scopes_never_leak(
    tmp_path: Path, sizes: Any, rel: Any, reliability_report: dict[str, Any]
) -> None:
    path = tmp_path / "mem"
    units = _build(path, sizes.corpus, seed=7)
    time.sleep(0.01)
    before = datetime.now(timezone.utc)  # as_of this instant the forgotten units were still held
    with Memory(path) as mem:
        gone = _forget_some(mem, units, seed=7)
        assert mem.stats()["units"] == len(units) - len(gone)
    assert gone and len(gone) < len(units)
    rng = random.Random(7)
    queries = _queries(units, gone, sizes.queries, rng)
    paths = {"hybrid": Memory(path), "dense": Memory(path, sparse=False), "sparse": Memory(path, dense=False)}
    try:
        found = _probe(paths, units, gone, before, queries, rng)
        found["export_problems"] = _export_problems(paths["hybrid"], units, gone)
        found["index_problems"] = rel.index_problems(paths["hybrid"])
    finally:
        for mem in paths.values():
            mem.close()
    reliability_report["negative"] = {"units": len(units), "forgotten": len(gone), **found}
    assert found["forgotten_returned"] == 0 and found["leaks_across_scopes"] == 0 and found["unknown_units"] == 0, (
        found["examples"])
    assert found["export_problems"] == [] and found["index_problems"] == []
    assert rel.residue(path, [units[g].token for g in gone]) == []


def test_graph_search_never_returns_forgotten_units_or_other_scopes(
    tmp_path: Path, sizes: Any, reliability_report: dict[str, Any]
) -> None:
    pytest.importorskip("spacy")
    path = tmp_path / "mem"
    units = _build(path, sizes.graph_corpus, seed=11, graph=True)
    before = datetime.now(timezone.utc)
    with Memory(path, graph=True) as mem:
        gone = _forget_some(mem, units, seed=11)
        rng = random.Random(11)
        queries = _queries(units, gone, sizes.graph_queries, rng)
        queries += [f"Where did {a} meet {b}?" for a, b in zip(NAMES, PLACES)]
        found = _probe({"graph": mem}, units, gone, before, queries, rng)
        entity_units = {u for e in mem.entities() for u in mem.graph.details(e)["units"]}  # type: ignore[union-attr]
    reliability_report["negative_graph"] = {"units": len(units), "forgotten": len(gone), **found}
    assert found["forgotten_returned"] == 0 and found["leaks_across_scopes"] == 0 and found["unknown_units"] == 0, (
        found["examples"])
    assert entity_units.isdisjoint(gone)


def test_graph_search_honours_supersession_and_as_of(tmp_path: Path) -> None:
    pytest.importorskip("spacy")
    with Memory(tmp_path / "mem", embedder="fake", graph=True) as mem:
        old = mem.add("Alice moved to Paris with her dog Rex", user_id="u").id
        new = mem.update(old, text="Alice moved to Berlin with her dog Rex").id
        hits = [h.unit.id for h in mem.search("Where does Alice live? Paris", user_id="u").hits]
        assert old not in hits and new in hits
        long_ago = datetime(2000, 1, 1, tzinfo=timezone.utc)
        assert mem.search("Where does Alice live? Paris", user_id="u", as_of=long_ago).hits == ()
