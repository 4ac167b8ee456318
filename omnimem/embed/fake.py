"""A deterministic embedder for fast tests: hashed words and character trigrams.

It is a real provider (registered as ``fake``), not a mock: texts sharing words
get similar vectors, so retrieval tests mean something without loading a model.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from omnimem.embed.base import Vectors, normalise

_WORD = re.compile(r"\w+")


class FakeEmbedder:
    """Feature hashing into ``dim`` dimensions, L2-normalised."""

    name = "fake"

    def __init__(self, dim: int = 384) -> None:
        self.dim = dim

    def _bucket(self, feature: str) -> tuple[int, float]:
        digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        return value % self.dim, 1.0 if (value >> 63) & 1 else -1.0

    def features(self, texts: Sequence[str]) -> Vectors:
        """The hashed counts before normalisation: multiples of 0.5, exact in float32."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                index, sign = self._bucket("w:" + word)
                out[row, index] += 2.0 * sign
                padded = f"#{word}#"
                for i in range(len(padded) - 2):
                    index, sign = self._bucket("t:" + padded[i : i + 3])
                    out[row, index] += 0.5 * sign
        return out

    def embed(self, texts: Sequence[str]) -> Vectors:
        return normalise(self.features(texts))


class ExactFakeEmbedder(FakeEmbedder):
    """The fake embedder's directions rounded to multiples of 1/256 (registered as ``fake-exact``).

    Every inner product of two such vectors is a multiple of 2**-16 below 2,
    which float32 holds exactly, so FAISS, BLAS and numpy give the same scores
    in any summation order, on any CPU: regression tests that compare rankings
    across machines use it (``tests/engine/retrieval/test_retrieval_identical.py``). The norm is
    taken from the exact sum of squares, so the rounding is the same everywhere
    too. Vectors are unit length to within about 1%.
    """

    name = "fake-exact"

    def embed(self, texts: Sequence[str]) -> Vectors:
        raw = self.features(texts).astype(np.float64)
        norms = np.sqrt((raw * raw).sum(axis=1, keepdims=True))  # sums of multiples of 0.25: exact
        norms[norms == 0] = 1.0
        return np.ascontiguousarray(np.round(raw / norms * _GRID) / _GRID, dtype=np.float32)


_GRID = 256
