"""Search returns exactly the recorded results, on any machine.

``tests/data/retrieval_golden.json`` holds, for a fixed synthetic corpus
(1,500 turns, a few deletes, the indexes saved and reopened) and 24 queries
(12 unscoped, 12 scoped to a user), every hit (unit, rank, level, sources,
score, tokens), the token count, the candidate count and a hash of the
rendered context, under these settings: today's default retrieval (the learnt
ranking), the rules ranking (``ranking="rules"``, the default before it; every setup below is
a variation of it), the paper's (union fusion, line packing), a small budget, ``stamp_gap=1`` (a
time of day wherever the minute changes: recorded equal to the default before
the setting) and ``elide_speakers=False`` (every line names its speaker:
recorded equal to the default before ``"auto"``, which leaves out the names
of this corpus's lines that go on from their speaker a minute later) and ``signal_margin=0``
(a signal may lift a unit over one both retrievers clearly prefer: recorded equal to the default
before the margin). A change that moves any hit, or changes what is packed, fails it.
Under ``small-store`` it holds a new user's six memories in two sessions, searched under the
default, the rules and ``signal_margin=0``: "what did I buy?" finds its clear dense best first by default.

Why it gives the same results on every CPU (issue 23; measured by
``python -m benchmarks retrieval-kernels``):

- the corpus is embedded by ``fake-exact``, whose vectors lie on a 1/256
  grid: every inner product is exact in float32, so FAISS, BLAS and numpy
  kernels (AVX2, AVX-512, NEON, any thread count or summation order) give
  the same dense scores. The plain ``fake`` embedder's scores differ by a
  float32 ulp between FAISS's AVX2 and generic kernels, enough to swap
  near-tied candidates and change what a budget packs;
- BM25 scores are sums over the query's terms in query order, document by
  document: the same float operations everywhere;
- equal scores are ordered by row id (ingest order) in both indexes, also
  across the top-k cut. Before, BM25 kept whichever tied documents numpy's
  ``argpartition`` kernel picked (another subset with AVX2 than without), and
  a common query word ties hundreds of documents.

Scores are compared to 1e-6 (they are rounded to 6 places when recorded);
everything else exactly.

To record it again after a deliberate change of results (run from the root
of the checkout whose results are wanted)::

    PYTHONPATH=. python tests/engine/retrieval/test_retrieval_identical.py
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from pathlib import Path
from typing import Any

GOLDEN = Path(__file__).parents[2] / "data" / "retrieval_golden.json"
EMBEDDER = "fake-exact"
RULES = {"ranking": "rules"}  # the signals at their hand-set weights: the default before the learnt ranking
SETUPS: dict[str, dict[str, Any]] = {
    "default": {},  # the learnt ranking
    "rules": RULES,
    "paper": {"fusion": "union", "packing": "line", "neighbours": 0, **RULES},
    "small-budget": {"budget": 700, **RULES},
    "stamp-gap-1": {"stamp_gap": 1, **RULES},  # a time of day wherever the minute changes: the default before
    "names-kept": {"elide_speakers": False, **RULES},  # every line names its speaker: the default before "auto"
    "signals-unbounded": {"signal_margin": 0, **RULES},  # a signal may bury the retrievers' clear best
}
SMALL = "small-store"  # the golden file's key for a new user's first memories (searched under SMALL_SETUPS)
SMALL_STORE = {  # six memories in two sessions; the session signal favours the session of four
    "trip": ["I bought a red kayak", "We paddled across the lake on Sunday"],
    "family": ["My sister Beth recommended a waterproof camera", "Beth is moving to Denver in June",
               "The pottery teacher is very patient", "Our flight to Lisbon leaves at noon"],
}
SMALL_QUERIES = ["what did I buy?", "Where is Beth moving?", "what did we do on the lake?", "camera"]
SMALL_SETUPS = {name: SETUPS[name] for name in ("default", "rules", "signals-unbounded")}
SCORE_TOLERANCE = 1e-6


def scenario(path: Path, setups: dict[str, dict[str, Any]] = SETUPS, embedder: str = EMBEDDER) -> dict[str, Any]:
    """Every search result of the scenario, by setup name, in a form JSON keeps exactly."""
    from benchmarks.harness.synthetic import queries, sessions
    from omnimem import Memory

    out: dict[str, Any] = {}
    for name, options in setups.items():
        store = path / name
        with Memory(store, embedder=embedder, **options) as m:
            stored: list[str] = []
            for user, session, turns in sessions(1500, seed=3):
                stored += [r.id for r in m.add_dialogue(turns, user_id=user, session_id=session) if r.id]
            for uid in stored[5:400:37]:  # a few deletes, so the indexes have holes
                m.delete(uid)
        with Memory(store, **options) as m:  # reopened: loaded from the saved files, searched with the setup
            names = {u: i for i, u in enumerate(stored)}
            results = []
            for text, user in queries(12, 1500, seed=4):
                for scope in (None, user):
                    ctx = m.search(text, user_id=scope)
                    results.append({
                        "query": text, "user": scope, "tokens": ctx.tokens,
                        "render": hashlib.sha256(ctx.render().encode("utf-8")).hexdigest(),
                        "candidates": ctx.candidates,
                        "hits": [[names[h.unit.id], h.rank, h.level, sorted(h.sources), round(h.score, 6), h.tokens]
                                 for h in ctx.hits],
                    })
            out[name] = results
            again = m.search(queries(1, 1500, seed=4)[0][0])  # every line now remembered: the same again
            assert again.render() == m.search(queries(1, 1500, seed=4)[0][0]).render()
            assert hashlib.sha256(again.render().encode("utf-8")).hexdigest() == results[0]["render"]
    return out


def small_store(setups: dict[str, dict[str, Any]] = SMALL_SETUPS, embedder: str = EMBEDDER) -> dict[str, Any]:
    """Every search of :data:`SMALL_QUERIES` on the six memories of :data:`SMALL_STORE`, by setup name."""
    from omnimem import Memory

    out: dict[str, Any] = {}
    for name, options in setups.items():
        with Memory(embedder=embedder, **options) as m:
            stored = [m.add(text, user_id="u", session_id=session).id
                      for session, texts in SMALL_STORE.items() for text in texts]
            names = {u: i for i, u in enumerate(stored)}
            out[name] = []
            for text in SMALL_QUERIES:
                ctx = m.search(text, user_id="u")
                out[name].append({
                    "query": text, "user": "u", "tokens": ctx.tokens,
                    "render": hashlib.sha256(ctx.render().encode("utf-8")).hexdigest(),
                    "candidates": ctx.candidates,
                    "hits": [[names[h.unit.id], h.rank, h.level, sorted(h.sources), round(h.score, 6), h.tokens]
                             for h in ctx.hits],
                })
    return out


def differences(want: list[dict[str, Any]], have: list[dict[str, Any]]) -> list[str]:
    """One line per search whose results differ from the recorded ones (scores to ``SCORE_TOLERANCE``)."""
    out = []
    for w, h in zip(want, have, strict=True):
        assert (w["query"], w["user"]) == (h["query"], h["user"]), "the scenario's queries changed: record again"
        where = f"{w['query']!r} user={w['user']}"
        if len(w["hits"]) != len(h["hits"]):
            out.append(f"{where}: {len(h['hits'])} hits, recorded {len(w['hits'])}")
            continue
        for a, b in zip(w["hits"], h["hits"]):
            if a[:4] + a[5:] != b[:4] + b[5:] or not math.isclose(a[4], b[4], rel_tol=0, abs_tol=SCORE_TOLERANCE):
                out.append(f"{where}: hit {b} where {a} was recorded")
                break
        else:
            for field in ("tokens", "candidates", "render"):
                if w[field] != h[field]:
                    out.append(f"{where}: {field} {h[field]!r}, recorded {w[field]!r}")
                    break
    return out


def test_results_identical_to_the_recorded_ones(tmp_path: Path) -> None:
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    got = scenario(tmp_path)
    assert sorted([*got, SMALL]) == sorted(golden)
    for name in SETUPS:
        diff = differences(golden[name], got[name])
        assert not diff, f"{name}: {len(diff)} of {len(golden[name])} searches differ:\n" + "\n".join(diff[:5])


def test_a_small_store_ranks_as_recorded_and_its_clear_best_match_first() -> None:
    """Six memories: the session signal may re-order near ties, not bury what both retrievers clearly prefer."""
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))[SMALL]
    got = small_store()
    assert sorted(got) == sorted(golden)
    for name in SMALL_SETUPS:
        diff = differences(golden[name], got[name])
        assert not diff, f"{SMALL} {name}: {len(diff)} of {len(golden[name])} searches differ:\n" + "\n".join(diff)
    # "I bought a red kayak" (memory 0) is the question's dense best by far, and BM25 finds no memory for "buy";
    # unbounded, the session signal put "Our flight to Lisbon leaves at noon" (memory 5) first
    bought = {name: results[SMALL_QUERIES.index("what did I buy?")]["hits"] for name, results in got.items()}
    assert {name: min(hits, key=lambda h: h[1])[0] for name, hits in bought.items()} == {
        "default": 0, "rules": 0, "signals-unbounded": 5}


def test_the_setups_search_differently() -> None:
    """Each setup's options reach its searches (a setup that searched with the defaults would test nothing)."""
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert differences(golden["default"], golden["rules"])  # the learnt ranking moves hits
    assert differences(golden["rules"], golden["paper"])
    assert differences(golden["rules"], golden["small-budget"])
    assert differences(golden["rules"], golden["signals-unbounded"])  # one scoped search: a hit 0.16 closer kept


def test_a_small_change_of_ranking_is_caught(tmp_path: Path) -> None:
    """The comparison is sharp: reciprocal rank fusion's k one more than the default (60: 61) already differs."""
    from dataclasses import fields

    from omnimem.config import Settings

    default_k = next(f.default for f in fields(Settings) if f.name == "rrf_k")
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    got = scenario(tmp_path, {"default": {"fusion": "rrf", "rrf_k": default_k + 1}})
    assert differences(golden["default"], got["default"])


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        GOLDEN.write_text(json.dumps({**scenario(Path(tmp)), SMALL: small_store()}, indent=0), encoding="utf-8")
    print(f"wrote {GOLDEN}", file=sys.stderr)
