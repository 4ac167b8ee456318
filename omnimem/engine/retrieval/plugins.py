"""Ranking signals of plugins (the ``signals`` setting, provider kind ``signal``; docs/plugins.md).

Each is built once, when a ``Memory`` opens (an unknown name is a ConfigError then, not at the first search).
At search time a signal reads the ranking's best candidates (``signal_depth`` of them, as units, in the
ranking's order) and names the ones it prefers, best first. Its list is fused with the ranking as it stands
(the learnt or the rules order) by reciprocal rank at the signal's weight, and like every signal it never
lifts a unit above one that dense and BM25 both clearly prefer (``signal_margin``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from omnimem import otel
from omnimem.config import Settings, signal_weights
from omnimem.contract.providers import RankingSignal, providers
from omnimem.engine.retrieval.signals import Signal, bounded
from omnimem.errors import ConfigError
from omnimem.fusion import rrf_order
from omnimem.mau import MAU


def load_signals(settings: Settings) -> list[tuple[RankingSignal, float]]:
    """The plugins' signals the settings name, each with its weight."""
    built: list[tuple[RankingSignal, float]] = []
    weights = signal_weights(settings.signals)
    if weights and settings.fusion == "union":
        raise ConfigError("signals re-order a fused ranking: they need fusion='rrf' (the union has no order)")
    for name, weight in weights:
        signal = providers.create("signal", name)
        if not callable(getattr(signal, "rank", None)):
            raise ConfigError(f"ranking signal {name!r} has no rank(query, units) method")
        built.append((signal, weight))
    return built


def plugin_order(
    text: str, order: list[int], rows: Mapping[int, MAU], plugins: Sequence[tuple[RankingSignal, float]],
    dense: Sequence[tuple[int, float]], sparse: Sequence[tuple[int, float]], settings: Settings,
) -> tuple[list[int], list[Signal]]:
    """``order`` re-ordered by the plugins' signals over its head (``rows``: the head's units by row id)."""
    head = [rid for rid in order[: settings.signal_depth] if rid in rows]
    units = [rows[rid] for rid in head]
    by_id = {rows[rid].id: rid for rid in head}
    lists: list[Signal] = []
    for signal, weight in plugins:
        with otel.stage("omnimem.search.plugin_signal"):
            preferred: Any = signal.rank(text, units)
        if isinstance(preferred, (str, bytes)) or not isinstance(preferred, Sequence):
            raise ConfigError(f"ranking signal {signal.name!r} must return a sequence of unit ids, "
                              f"not {type(preferred).__name__}")
        rids = list(dict.fromkeys(by_id[i] for i in preferred if isinstance(i, str) and i in by_id))
        lists.append(Signal(signal.name, rids, weight))
    lifted = rrf_order(order, [], k=settings.rrf_k, extra=[(x.rids, x.weight) for x in lists])
    return bounded(lifted, order, dense, sparse, lists, settings), lists
