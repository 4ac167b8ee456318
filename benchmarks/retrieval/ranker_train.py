"""Train the learnt ranking (``ranking="learnt"``) on the dev splits only, and say how it validates.

``python -m benchmarks ranker-train``: every dev question of LoCoMo, Mem-Gallery and LongMemEval is
searched with the defaults (within 1,000 and 6,000 tokens, as the retrieval runs search); the first
:data:`omnimem.engine.retrieval.learnt.SINK_DEPTH` fused candidates of each search give one row of
features each (:func:`omnimem.engine.retrieval.learnt.features`), labelled 1 where the unit holds a gold
turn. A pairwise logistic regression (scikit-learn, the ``bench`` extra: each gold unit against up to 30
other units of its head) is fitted on all three, each data set weighted alike;
validation holds out whole conversations (LongMemEval: whole questions, each its own haystack), five
folds per data set, and compares the gold turns among the first 10 / 20 / 30 of the head as fused
(the rules) and as re-ordered. The model is written as JSON (default: the packaged
``omnimem/engine/retrieval/ranker.json``), with the figures beside it in ``--out``.
The features are kept in ``--features`` (an .npz) so a second fit does not search again.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness.retrieval import (BUDGETS, BenchDataset, CachedEmbedder, MemoryPool, locomo_dataset,
                                          memgallery_dataset, split)
from benchmarks.harness.paths import data_dir, default_cache
from omnimem import NotFoundError
from omnimem.embed import create_embedder
from omnimem.engine.retrieval.learnt import FEATURES, SINK_DEPTH, LinearRanker, watch

PACKAGED = Path(__file__).resolve().parents[2] / "omnimem" / "engine" / "retrieval" / "ranker.json"
TOPS = (10, 20, 30)
DEPTH = 30  # the shipped model's depth (--depth)
NEGATIVES = 30  # other units paired with each gold unit of a head (sampled, seeded)


def datasets(folder: Path, names: Sequence[str]) -> list[BenchDataset]:
    out = []
    for name in names:
        if name == "locomo":
            out.append(split(locomo_dataset(folder / "locomo" / "locomo10.json"), "dev"))
        elif name == "memgallery":
            out.append(split(memgallery_dataset(folder / "memgallery"), "dev"))
        elif name == "longmemeval":
            from benchmarks.retrieval.longmemeval import longmemeval_dataset

            out.append(longmemeval_dataset(folder / "longmemeval", "dev"))
        else:
            raise SystemExit(f"unknown data set {name!r}: locomo, memgallery, longmemeval")
    return out


def collect(dataset: BenchDataset, embedder: CachedEmbedder) -> dict[str, np.ndarray]:
    """Features, labels, query ids and conversation groups of every dev search of ``dataset``."""
    xs: list[np.ndarray] = []
    ys: list[np.ndarray] = []
    qids: list[np.ndarray] = []
    groups: list[np.ndarray] = []
    qid = 0
    for g, conv in enumerate(dataset.conversations):
        pool = MemoryPool(conv, embedder)
        try:
            mem = pool.get({})
            sources: dict[str, tuple[str, ...]] = {}
            seen: list[tuple[list[int], np.ndarray, dict[int, Any]]] = []
            watch(mem, lambda _q, head, x, facts: seen.append((head, x, dict(facts))))
            for q in conv.questions:
                gold = set(q.gold)
                for budget in BUDGETS:
                    seen.clear()
                    mem.search(q.query, budget=budget, user_id=conv.sample_id, now=q.now)
                    head, x, facts = seen[0]  # the first ranking (a deeper one repeats its head)
                    labels = np.zeros(len(head))
                    for i, rid in enumerate(head):
                        unit_id = facts[rid].unit_id if rid in facts else ""
                        if unit_id and unit_id not in sources:
                            try:
                                sources[unit_id] = mem.get(unit_id, user_id=conv.sample_id).source_ids
                            except NotFoundError:
                                sources[unit_id] = ()
                        labels[i] = any(s in gold for s in sources.get(unit_id, ()))
                    xs.append(x)
                    ys.append(labels)
                    qids.append(np.full(len(head), qid))
                    groups.append(np.full(len(head), g))
                    qid += 1
        finally:
            pool.close()
        embedder.forget()
    return {"x": np.concatenate(xs), "y": np.concatenate(ys), "qid": np.concatenate(qids),
            "group": np.concatenate(groups)}


def pairs(x: np.ndarray, y: np.ndarray, qid: np.ndarray, rng: np.random.Generator, negatives: int = NEGATIVES
          ) -> tuple[np.ndarray, np.ndarray]:
    """Pairwise rows: each gold unit's features minus those of up to ``negatives`` other units of its head
    (labelled 1), and the reverse (labelled 0): a model of these orders units within one search."""
    xs: list[np.ndarray] = []
    ys: list[np.ndarray] = []
    for q in np.unique(qid):
        rows = np.flatnonzero(qid == q)
        gold, other = rows[y[rows] == 1], rows[y[rows] == 0]
        if not len(gold) or not len(other):
            continue
        for g in gold:
            picked = other if len(other) <= negatives else rng.choice(other, negatives, replace=False)
            diff = x[g] - x[picked]
            xs += [diff, -diff]
            ys += [np.ones(len(picked)), np.zeros(len(picked))]
    return np.concatenate(xs), np.concatenate(ys)


def fit(parts: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]], c: float) -> LinearRanker:
    """A pairwise logistic model over (features, labels, query ids) of several data sets, each weighted
    alike whatever its size (a large set would otherwise decide the order of the others)."""
    from sklearn.linear_model import LogisticRegression

    every = np.concatenate([p[0] for p in parts])
    mean, scale = every.mean(axis=0), every.std(axis=0)
    scale[scale == 0] = 1.0
    rng = np.random.default_rng(0)
    xs, ys, ws = [], [], []
    for x, y, qid in parts:
        px, py = pairs((x - mean) / scale, y, qid, rng)
        xs.append(px)
        ys.append(py)
        ws.append(np.full(len(py), 1.0 / len(py)))
    weight = np.concatenate(ws)
    model = LogisticRegression(C=c, max_iter=3000, fit_intercept=False)
    model.fit(np.concatenate(xs), np.concatenate(ys), sample_weight=weight * len(weight) / weight.sum())
    return LinearRanker(FEATURES, mean, scale, model.coef_[0].astype(np.float64), 0.0, SINK_DEPTH)


def found(order_scores: np.ndarray, y: np.ndarray, qid: np.ndarray) -> dict[int, float]:
    """Gold units among the first n of each head, ordered by ``order_scores`` (higher first), per gold unit."""
    hits = {n: 0.0 for n in TOPS}
    total = 0.0
    for q in np.unique(qid):
        rows = np.flatnonzero(qid == q)
        order = rows[np.lexsort((rows, -order_scores[rows]))]
        total += y[rows].sum()
        for n in TOPS:
            hits[n] += y[order[:n]].sum()
    return {n: round(hits[n] / total, 4) if total else 0.0 for n in TOPS}


def validate(data: dict[str, np.ndarray], others: list[dict[str, np.ndarray]], c: float, folds: int = 5
             ) -> dict[str, Any]:
    """Held-out conversations of one data set, the model fitted on the rest of it and all of ``others``."""
    groups = data["group"]
    unique = np.unique(groups)
    fused = -np.arange(len(groups), dtype=np.float64)  # the head's own order (rows are stored in it)
    learnt = np.zeros(len(groups))
    for k in range(folds):
        held = np.isin(groups, unique[k::folds])
        parts = [(data["x"][~held], data["y"][~held], data["qid"][~held]), *((o["x"], o["y"], o["qid"]) for o in others)]
        learnt[held] = fit(parts, c).scores(data["x"][held])
    return {"rules": found(fused, data["y"], data["qid"]), "learnt": found(learnt, data["y"], data["qid"])}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks ranker-train", description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--sets", default="locomo,memgallery,longmemeval")
    parser.add_argument("--features", type=Path, default=Path("/tmp/omnimem-ranker-features"),
                        help="a folder of the collected features, one .npz per data set: read when present, "
                        "else searched for and written")
    parser.add_argument("--model", type=Path, default=PACKAGED)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--c", type=float, default=1.0, help="inverse regularisation strength")
    parser.add_argument("--depth", type=int, default=DEPTH, help="how many fused candidates the shipped model "
                        "re-orders (30: chosen on the dev splits' recall within 1,000 tokens among 30, 40 and 100)")
    args = parser.parse_args(argv)
    names = [n for n in args.sets.split(",") if n]
    started = time.perf_counter()
    data: dict[str, dict[str, np.ndarray]] = {}
    args.features.mkdir(parents=True, exist_ok=True)
    embedder: CachedEmbedder | None = None
    for name in names:
        file = args.features / f"{name}.npz"
        if not file.exists():
            embedder = embedder or CachedEmbedder(create_embedder("all-MiniLM-L6-v2"), default_cache())
            dataset = datasets(data_dir(args.data_dir), [name])[0]
            print(f"{name}: {len(dataset.conversations)} conversations, {dataset.questions()} questions",
                  file=sys.stderr)
            np.savez(file, **collect(dataset, embedder))
        with np.load(file) as saved:
            data[name] = {k: saved[k] for k in ("x", "y", "qid", "group")}
    if embedder is not None:
        embedder.save()
    checks = {n: validate(d, [o for m, o in data.items() if m != n], args.c) for n, d in data.items()}
    model = replace(fit([(d["x"], d["y"], d["qid"]) for d in data.values()], args.c), depth=args.depth)
    args.model.write_text(json.dumps(model.to_dict(), indent=1) + "\n", encoding="utf-8")
    report = {
        "benchmark": "ranker-train",
        "command": "python -m benchmarks ranker-train" + (f" --c {args.c}" if args.c != 1.0 else "")
        + (f" --depth {args.depth}" if args.depth != DEPTH else ""),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "sets": names, "rows": {n: int(len(d["y"])) for n, d in data.items()},
        "gold_rows": {n: int(d["y"].sum()) for n, d in data.items()}, "features_depth": SINK_DEPTH,
        "depth": args.depth, "c": args.c,
        "validation": checks, "weights": dict(zip(FEATURES, np.round(model.weights, 4).tolist())),
        "seconds": round(time.perf_counter() - started, 1),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "ranker-train.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    lines = ["# The learnt ranking: validation on the dev splits", "",
             f"`{report['command']}` ({report['date']}): a pairwise logistic model over {len(FEATURES)} features of the "
             f"first {SINK_DEPTH} fused candidates; five folds of held-out conversations per data set "
             "(LongMemEval: held-out questions). Share of the gold units of each head that rank in its first n. "
             f"The shipped model re-orders the first {args.depth}.",
             "", "| data set | rows | n | rules | learnt |", "|---|---:|---:|---:|---:|"]
    for n, check in checks.items():
        for top in TOPS:
            lines.append(f"| {n} | {report['rows'][n]} | {top} | {check['rules'][top]:.4f} | "
                         f"{check['learnt'][top]:.4f} |")
    (args.out / "ranker-train.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(json.dumps(checks, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
