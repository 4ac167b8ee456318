"""A ranking learnt from the signals: a small linear model re-orders the fused head.

The hand-set ranking adds each signal's ranked list to the fusion at a fixed
weight (:mod:`omnimem.engine.retrieval.signals`). With ``ranking="learnt"``
the same facts become features of each of the first ``depth`` fused
candidates (each retriever's score and rank, the fused score, the speaker,
time, session, recency, statement and reply signals, the neighbours' fused
scores, the unit's length), and a logistic model scores them; the head is
re-ordered by that score and the rest keeps its fused order.

The model is a JSON file (feature names, their means and scales, weights):
the packaged one (``ranker.json`` beside this module) is trained on the dev
splits only by ``python -m benchmarks ranker-train``; a search applies it
with numpy, without the training library. ``ranking`` may also name another
such file.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, cast

import numpy as np

from omnimem.config import Settings
from omnimem.errors import ConfigError
from omnimem.engine.retrieval.signals import FactCache, RowFacts, signals
from omnimem.timeparse import query_window

FEATURES = (
    "in_dense", "cosine", "cosine_gap", "dense_rr", "in_sparse", "bm25_rel", "sparse_rr", "in_both",
    "fused_rel", "position_rr", "speaker_in", "speaker_out", "session_rel", "session_rr", "time_in", "time_out",
    "recency_rel", "stated", "asks", "reply", "neighbour_rel", "cosine_x_bm25",
)
PACKAGED = "ranker.json"
SINK_DEPTH = 100  # the head a ranker's training reads (:func:`watch`) under the rules ranking


@dataclass(frozen=True)
class LinearRanker:
    """A logistic model over :data:`FEATURES` (standardised by ``mean`` and ``scale``)."""

    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    bias: float
    depth: int  # how many of the fused candidates it re-orders

    @classmethod
    def from_dict(cls, data: Mapping[str, object], where: str) -> LinearRanker:
        try:
            names: Any = data["features"]
            features = tuple(str(f) for f in names)
            arrays = [np.asarray(data[k], dtype=np.float64) for k in ("mean", "scale", "weights")]
            bias, depth = float(cast(Any, data["bias"])), int(cast(Any, data["depth"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"ranking model {where} is not a ranker file: {exc}") from exc
        if features != FEATURES:
            raise ConfigError(f"ranking model {where} has features {list(features)}, this version reads "
                              f"{list(FEATURES)}: train it again (python -m benchmarks ranker-train)")
        if any(a.shape != (len(FEATURES),) or not np.isfinite(a).all() for a in arrays) or depth < 1 \
                or not math.isfinite(bias) or (arrays[1] <= 0).any():
            raise ConfigError(f"ranking model {where} has malformed weights")
        return cls(features, arrays[0], arrays[1], arrays[2], bias, depth)

    def to_dict(self) -> dict[str, object]:
        return {"features": list(self.features), "mean": self.mean.tolist(), "scale": self.scale.tolist(),
                "weights": self.weights.tolist(), "bias": self.bias, "depth": self.depth}

    def scores(self, x: np.ndarray) -> np.ndarray:
        """The model's log-odds of each row of ``x`` (its order is all a search uses)."""
        out: np.ndarray = ((x - self.mean) / self.scale) @ self.weights + self.bias
        return out


def load_ranker(name: str) -> LinearRanker:
    """The model ``ranking`` names: ``"learnt"`` (the packaged one) or a JSON file's path."""
    if name == "learnt":
        return _packaged()
    return _from_file(name)


@cache
def _packaged() -> LinearRanker:
    text = resources.files("omnimem.engine.retrieval").joinpath(PACKAGED).read_text(encoding="utf-8")
    return LinearRanker.from_dict(json.loads(text), PACKAGED)


def _from_file(path: str) -> LinearRanker:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"ranking model {path} cannot be read: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"ranking model {path} is not a ranker file")
    return LinearRanker.from_dict(data, path)


def features(query: str, head: Sequence[int], rows: Mapping[int, RowFacts], dense: Sequence[tuple[int, float]],
             sparse: Sequence[tuple[int, float]], settings: Settings, now: datetime, named: set[str]) -> np.ndarray:
    """One row of :data:`FEATURES` per unit of ``head`` (the fused order's first units), in that order.

    ``rows`` are the head's facts with stated words, ids and questions read (a unit missing from them, gone
    meanwhile, gets the signals' zeros); ``named`` the speakers the query names.
    """
    n = len(head)
    x = np.zeros((n, len(FEATURES)), dtype=np.float64)
    if not n:
        return x
    col = {name: i for i, name in enumerate(FEATURES)}
    dense_rank: dict[int, int] = {}
    cosine: dict[int, float] = {}
    for rank, (rid, score) in enumerate(dense):
        if rid not in dense_rank:
            dense_rank[rid], cosine[rid] = rank, score
    sparse_rank: dict[int, int] = {}
    bm25: dict[int, float] = {}
    for rank, (rid, score) in enumerate(sparse):
        if rid not in sparse_rank:
            sparse_rank[rid], bm25[rid] = rank, score
    top_cos = max(cosine.values(), default=0.0)
    low_cos = min(cosine.values(), default=0.0)  # what a unit dense did not reach scores at most
    top_bm25 = max(bm25.values(), default=0.0) or 1.0
    k, sw = settings.rrf_k, settings.sparse_weight
    fused = {rid: (1.0 / (k + 1 + dense_rank[rid]) if rid in dense_rank else 0.0)
             + (sw / (k + 1 + sparse_rank[rid]) if rid in sparse_rank else 0.0) for rid in head}
    top_fused = max(fused.values()) or 1.0
    lists = {s.name: s.rids for s in signals(query, head, rows, fused, _listed(settings), now, named)}
    speaker = set(lists.get("speaker", ()))
    window = query_window(query, now) is not None
    inside = set(lists.get("time", ()))
    replies = set(lists.get("reply", ()))
    recency = {rid: i for i, rid in enumerate(lists.get("recency", ()))}
    mass: dict[object, float] = {}
    for rid in head:
        if rid in rows:
            mass[rows[rid].scope] = mass.get(rows[rid].scope, 0.0) + fused[rid]
    top_mass = max(mass.values(), default=0.0) or 1.0
    session_rank = {s: i for i, s in enumerate(sorted(mass, key=lambda s: -mass[s]))}
    by_id = {f.unit_id: rid for rid, f in rows.items() if f.unit_id}
    next_of = {f.prev_id: rid for rid, f in rows.items() if f.prev_id}
    for i, rid in enumerate(head):
        row = x[i]
        cos = cosine.get(rid)
        row[col["in_dense"]] = cos is not None
        row[col["cosine"]] = cos if cos is not None else low_cos
        row[col["cosine_gap"]] = top_cos - row[col["cosine"]]
        row[col["dense_rr"]] = 1.0 / (1 + dense_rank[rid]) if rid in dense_rank else 0.0
        row[col["in_sparse"]] = rid in bm25
        row[col["bm25_rel"]] = bm25.get(rid, 0.0) / top_bm25
        row[col["sparse_rr"]] = 1.0 / (1 + sparse_rank[rid]) if rid in sparse_rank else 0.0
        row[col["in_both"]] = row[col["in_dense"]] * row[col["in_sparse"]]
        row[col["fused_rel"]] = fused[rid] / top_fused
        row[col["position_rr"]] = 1.0 / (1 + i)
        row[col["speaker_in"]] = rid in speaker
        row[col["speaker_out"]] = bool(named) and rid not in speaker
        row[col["time_in"]] = rid in inside
        row[col["time_out"]] = window and rid not in inside
        row[col["reply"]] = rid in replies
        row[col["cosine_x_bm25"]] = row[col["cosine"]] * row[col["bm25_rel"]]
        facts = rows.get(rid)
        if facts is None:
            continue
        row[col["session_rel"]] = mass[facts.scope] / top_mass
        row[col["session_rr"]] = 1.0 / (1 + session_rank[facts.scope])
        row[col["recency_rel"]] = 1.0 - recency[rid] / len(recency) if rid in recency else 0.0
        row[col["stated"]] = math.log1p(facts.stated)
        row[col["asks"]] = facts.asks
        around = [by_id.get(facts.prev_id or ""), next_of.get(facts.unit_id)]
        row[col["neighbour_rel"]] = max((fused[r] / top_fused for r in around if r is not None and r in fused),
                                        default=0.0)
    return x


@cache
def _listed(settings: Settings) -> Settings:
    """``settings`` with the signals whose lists the features read on, whatever their weights (made once per
    settings: a search's features reuse it). The session mass and stated words are read from the facts
    directly, so those two lists are not made."""
    return replace(settings, speaker_weight=1.0, session_weight=0.0, time_weight=1.0, recency_weight=1.0,
                   statement_weight=0.0, reply_weight=1.0)


def learnt_order(order: Sequence[int], ranker: LinearRanker, x: np.ndarray) -> list[int]:
    """``order`` with its first ``len(x)`` units re-ordered by the model's score (ties keep the fused order)."""
    n = len(x)
    if n < 2:
        return list(order)
    score = ranker.scores(x)
    best = np.lexsort((np.arange(n), -score))
    head = [order[i] for i in best.tolist()]
    return head + list(order[n:])


def watch(memory: Any, sink: Callable[[str, list[int], np.ndarray, Mapping[int, RowFacts]], None]) -> None:
    """Hand every search's head to ``sink`` as (query, row ids, :func:`features`, facts): what a ranker is
    trained on (``python -m benchmarks ranker-train``). ``memory`` is a local ``Memory``; its searches read
    every signal's facts from now on, and rank as its ``ranking`` says."""
    retriever = memory.engine.retriever
    retriever.signals.facts = FactCache(statements=True, replies=True)
    retriever.signals.sink = sink
