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

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                index, sign = self._bucket("w:" + word)
                out[row, index] += 2.0 * sign
                padded = f"#{word}#"
                for i in range(len(padded) - 2):
                    index, sign = self._bucket("t:" + padded[i : i + 3])
                    out[row, index] += 0.5 * sign
        return normalise(out)
