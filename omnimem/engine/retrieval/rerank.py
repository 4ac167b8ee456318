"""An optional second stage: a local cross-encoder re-scores the best fused candidates.

``Memory(reranker="/path/to/cross-encoder")`` loads a sentence-transformers
``CrossEncoder`` checkpoint from that folder (nothing is downloaded: pass a
local copy) and re-orders the first ``rerank_depth`` candidates of the fused
ranking by its score of (query, memory line). Off by default: it costs one
cross-encoder forward pass over ``rerank_depth`` pairs per search. With a
cross-encoder of all-MiniLM-L6-v2's size on 2 CPU cores that adds ~115 ms to a
search at the default depth of 30 (~50 ms at 10), against ~8 ms for the search
without it (``python -m benchmarks rerank-cost``, random weights: no
cross-encoder weights ship in any package this project can use, so what it
gains is not measured here). The cross-encoder comes with the ``torch`` extra
(``pip install 'omnimem[torch]'``); without it a search with a reranker raises
:class:`~omnimem.errors.MissingDependencyError` naming the extra.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omnimem.errors import ConfigError, missing_extra


class Reranker:
    """A cross-encoder loaded on first use (thread-safe), scoring (query, text) pairs."""

    def __init__(self, path: str) -> None:
        if not Path(path).is_dir():
            raise ConfigError(f"reranker {path!r} is not a folder holding a cross-encoder checkpoint")
        self.path = path
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                try:
                    from sentence_transformers import CrossEncoder
                except ImportError as exc:  # the torch extra brings sentence-transformers and torch
                    raise missing_extra("torch" if exc.name == "torch" else "sentence-transformers", "torch") from exc
                try:
                    self._model = CrossEncoder(self.path, device="cpu", local_files_only=True)
                except (OSError, ValueError) as exc:
                    raise ConfigError(f"reranker {self.path!r} cannot be loaded: {exc}") from None
            return self._model

    def order(self, query: str, texts: Sequence[str]) -> list[int]:
        """Indices of ``texts``, best first by the model's score (ties: the given order)."""
        if not texts:
            return []
        scores = self._load().predict([(query, t) for t in texts], show_progress_bar=False)
        return sorted(range(len(texts)), key=lambda i: (-float(scores[i]), i))
