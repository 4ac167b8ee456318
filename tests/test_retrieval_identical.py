"""The fast retrieval path returns exactly what the previous one did.

``tests/data/retrieval_golden.json`` was recorded by running this scenario on
the code before the incremental indexes, the lock-free search path and the
cached line costs (commit c60123d): same corpus, same deletes, same queries.
Every hit (unit, rank, level, sources, score), the token count and the
rendered context must be the same, with today's default retrieval and with
the paper's.

To record it again on other code: ``PYTHONPATH=<that checkout> python tests/test_retrieval_identical.py``.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

GOLDEN = Path(__file__).parent / "data" / "retrieval_golden.json"
SETUPS: dict[str, dict[str, Any]] = {
    "default": {},
    "paper": {"fusion": "union", "packing": "line", "neighbours": 0},
    "small-budget": {"budget": 700},
}


def scenario(path: Path) -> dict[str, Any]:
    from benchmarks.synthetic import queries, sessions
    from omnimem import Memory

    out: dict[str, Any] = {}
    for name, options in SETUPS.items():
        store = path / name
        with Memory(store, embedder="fake", **options) as m:
            stored: list[str] = []
            for user, session, turns in sessions(1500, seed=3):
                stored += [r.id for r in m.add_dialogue(turns, user_id=user, session_id=session) if r.id]
            for uid in stored[5:400:37]:  # a few deletes, so the indexes have holes
                m.delete(uid)
        with Memory(store) as m:  # reopened: loaded from the saved files
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


def test_results_identical_to_the_recorded_ones(tmp_path: Path) -> None:
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    got = scenario(tmp_path)
    for name in SETUPS:
        for want, have in zip(golden[name], got[name], strict=True):
            assert have["hits"] == want["hits"], (name, want["query"], want["user"])
            assert have["render"] == want["render"] and have["tokens"] == want["tokens"]
            assert have["candidates"] == want["candidates"]


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        GOLDEN.write_text(json.dumps(scenario(Path(tmp)), indent=0), encoding="utf-8")
    print(f"wrote {GOLDEN}", file=sys.stderr)
