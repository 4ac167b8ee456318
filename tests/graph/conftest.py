"""Shared fixtures for the graph tests: one spaCy pipeline, one fake embedder."""

from __future__ import annotations

import zlib

import numpy as np
import numpy.typing as npt
import pytest

from omnimem.graph.extract import SpacyExtractor

DIM = 512


def trigram_embed(names: list[str]) -> npt.NDArray[np.float32]:
    """Deterministic stand-in for a name embedder: hashed character trigrams, L2-normalised.

    Names sharing many trigrams get a high cosine, like a real embedder on
    surface-similar names; no model, no randomness (crc32, not ``hash``).
    """
    out = np.zeros((len(names), DIM), dtype=np.float32)
    for row, name in enumerate(names):
        padded = f"  {name.lower()} "
        for i in range(len(padded) - 2):
            out[row, zlib.crc32(padded[i : i + 3].encode()) % DIM] += 1.0
        out[row] /= max(float(np.linalg.norm(out[row])), 1e-12)
    return out


@pytest.fixture(scope="session")
def spacy_extractor() -> SpacyExtractor:
    extractor = SpacyExtractor()
    extractor.extract(["warm up"])  # load the pipeline once for the whole session
    return extractor


@pytest.fixture
def embed() -> object:
    return trigram_embed
