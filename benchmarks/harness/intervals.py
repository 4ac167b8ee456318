"""How far a benchmark's figure can move by which questions happened to be asked: bootstrap intervals.

A recall over 95 questions moves by about 0.01 per question, so a target missed by 0.014 may be
one question's luck, or a real gap. Each retrieval run keeps every system's per-question recall
within each budget and reports, for each system, a 95% percentile bootstrap interval of its mean
and, for each system against the naive dense baseline, of the paired difference (the same
questions resampled for both). The resampling uses a fixed seed, so a file's intervals are
reproducible from its per-question figures (``scipy.stats.bootstrap``).

Questions are resampled one by one. That is right for LongMemEval (each question has its own
haystack) and optimistic for LoCoMo, whose questions share a few conversations: read its
intervals as a lower bound on the spread.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

RESAMPLES = 9999
CONFIDENCE = 0.95
SEED = 0
BASELINE = "naive-dense"


def _bootstrap(samples: tuple[np.ndarray, ...], statistic: Any) -> tuple[float, float]:
    """The percentile interval of ``statistic`` over paired resamples of ``samples`` (all one length)."""
    try:
        from scipy.stats import bootstrap
    except ImportError as exc:  # pragma: no cover - scipy comes with sentence-transformers
        raise RuntimeError("bootstrap intervals need scipy: pip install 'omnimem[bench]'") from exc
    if len(samples[0]) < 2 or all(np.ptp(s) == 0 for s in samples):  # nothing to resample: the interval is a point
        value = float(statistic(*samples, axis=-1))
        return value, value
    res = bootstrap(samples, statistic, paired=True, vectorized=True, n_resamples=RESAMPLES,
                    confidence_level=CONFIDENCE, method="percentile", rng=np.random.default_rng(SEED))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def _mean(x: np.ndarray, axis: int = -1) -> Any:
    return np.mean(x, axis=axis)


def _difference(x: np.ndarray, y: np.ndarray, axis: int = -1) -> Any:
    return np.mean(x - y, axis=axis)


def interval(values: Sequence[float]) -> dict[str, float]:
    """The mean of ``values`` and its 95% bootstrap interval."""
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        raise ValueError("an interval needs at least one value")
    low, high = _bootstrap((x,), _mean)
    return {"mean": round(float(x.mean()), 4), "low": round(low, 4), "high": round(high, 4)}


def paired_difference(values: Sequence[float], baseline: Sequence[float]) -> dict[str, float]:
    """Mean of ``values - baseline`` over the same questions, with its 95% paired bootstrap interval."""
    x = np.asarray(values, dtype=np.float64)
    y = np.asarray(baseline, dtype=np.float64)
    if x.shape != y.shape or x.size == 0:
        raise ValueError(f"paired figures need the same questions: {x.size} against {y.size}")
    low, high = _bootstrap((x, y), _difference)
    return {"mean": round(float((x - y).mean()), 4), "low": round(low, 4), "high": round(high, 4)}


def intervals(per_question: Mapping[str, Mapping[str, Sequence[float]]], keys: Sequence[str]) -> dict[str, Any]:
    """For each system (name -> metric -> per-question values): each metric's interval, and its paired
    difference from the naive dense baseline when that system ran too."""
    out: dict[str, Any] = {}
    base = per_question.get(BASELINE)
    for name, metrics in per_question.items():
        entry: dict[str, Any] = {k: interval(metrics[k]) for k in keys if metrics.get(k)}
        if base is not None and name != BASELINE:
            entry[f"minus_{BASELINE}"] = {k: paired_difference(metrics[k], base[k]) for k in keys
                                          if metrics.get(k) and base.get(k)}
        out[name] = entry
    return out


def sentence(data: Mapping[str, Any], system: str = "omnimem") -> str | None:
    """One line for a report: ``system``'s intervals and its difference from naive dense, or None (older
    files, which kept no per-question figures)."""
    found = data.get("intervals", {}).get(system)
    if not found:
        return None

    def span(v: Mapping[str, float]) -> str:
        return f"{v['mean']:.3f} [{v['low']:.3f}, {v['high']:.3f}]"

    def signed(v: Mapping[str, float]) -> str:
        return f"{v['mean']:+.3f} [{v['low']:+.3f}, {v['high']:+.3f}]"

    parts = [f"{k} {span(v)}" for k, v in found.items() if not k.startswith("minus_")]
    diff = found.get(f"minus_{BASELINE}", {})
    text = f"95% bootstrap intervals over questions ({RESAMPLES:,} resamples, seed {SEED}): `{system}` " + ", ".join(parts)
    if diff:
        text += f"; `{system}` minus `{BASELINE}` (paired) " + ", ".join(f"{k} {signed(v)}" for k, v in diff.items())
    return text + "."
