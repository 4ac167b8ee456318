"""The real MiniLM embedder runs a call's batches on two threads: same vectors, even batches."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from omnimem.embed.minilm import MiniLMEmbedder, length_batches

TEXTS = [f"Caroline told Melanie about the {word} she saw on day {i}." + " It was lovely." * (i % 4)
         for i, word in enumerate(["lake", "museum", "parade", "concert", "garden", "library", "market",
                                   "harbour", "forest", "theatre", "bakery", "station", "bridge", "castle",
                                   "beach", "valley", "studio", "temple", "canyon", "island", "meadow",
                                   "village", "summit", "orchard"])]


def test_batches_are_even_sorted_by_length_and_cover_every_text() -> None:
    batches = length_batches(TEXTS, batch_size=16, parallel=2)
    assert [len(b) for b in batches] == [12, 12]  # not 16 + 8: both threads get the same work
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(len(TEXTS)))
    assert [len(TEXTS[i]) for i in flat] == sorted((len(t) for t in TEXTS), reverse=True)
    assert [len(b) for b in length_batches(TEXTS, batch_size=16, parallel=1)] == [12, 12]
    assert [len(b) for b in length_batches(TEXTS[:5], batch_size=16, parallel=2)] == [3, 2]
    assert length_batches(TEXTS[:1], batch_size=16, parallel=2) == [[0]]
    assert length_batches([], batch_size=16, parallel=2) == []
    assert max(len(b) for b in length_batches(TEXTS * 4, batch_size=16, parallel=2)) <= 16


def test_bad_widths_are_refused() -> None:
    with pytest.raises(ValueError, match="must be >= 1"):
        MiniLMEmbedder(parallel=0)


def test_two_threads_give_the_vectors_of_one_text_at_a_time(minilm: MiniLMEmbedder) -> None:
    together = minilm.embed(TEXTS)
    alone = np.stack([minilm.embed([t])[0] for t in TEXTS])
    assert together.shape == (len(TEXTS), 384) and together.dtype == np.float32
    np.testing.assert_allclose(together, alone, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    in_turn = MiniLMEmbedder(parallel=1).embed(TEXTS)
    np.testing.assert_allclose(together, in_turn, atol=1e-5)


def test_calls_from_many_threads_at_once_each_get_their_own_vectors(minilm: MiniLMEmbedder) -> None:
    expected = minilm.embed(TEXTS)
    chunks = [TEXTS[i::4] for i in range(4)]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(minilm.embed, chunks * 2))
    for n, vectors in enumerate(got):
        np.testing.assert_allclose(vectors, expected[n % 4::4], atol=1e-5)
