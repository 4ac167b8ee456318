"""The int8 ONNX MiniLM against the sentence-transformers MiniLM it claims to match."""

from __future__ import annotations

import numpy as np
import pytest

from omnimem.embed import MiniLMEmbedder, canonical_name, create_embedder
from omnimem.embed.onnx import MAX_TOKENS, ONNX_NAME, OnnxMiniLMEmbedder

pytestmark = pytest.mark.slow

# int8 weights: close to the float model, but short texts fall below the 0.999 an
# index shared with it would need, hence the embedder's own name (see omnimem/embed/onnx.py)
MEDIAN_COSINE = 0.999
MIN_COSINE = 0.99

SENTENCES = [
    "I painted a sunset last weekend.",
    "Caroline went to the LGBTQ support group on 7 May 2023.",
    "What did Melanie paint?",
    "hi",
    "ok",
    "Thanks!",
    "The meeting moved to Thursday at 3 pm because Dana is travelling.",
    "My dog Rex chewed the new sofa cushions again.",
    "We adopted two cats from the shelter in March.",
    "The capital of France is Paris.",
    "Can you remind me to call mom on her birthday, June 12th?",
    "I'm allergic to peanuts and shellfish.",
    "Our flight to Tokyo leaves from gate B22 at 06:45.",
    "The quarterly revenue grew by 12.5% year over year.",
    "She finished the marathon in 3 hours and 41 minutes.",
    "Let's try the new ramen place on 5th Avenue tonight.",
    "I started learning the violin when I was seven.",
    "The doctor said my blood pressure is 120/80.",
    "Python 3.11 removed some deprecated modules from the standard library.",
    "He proposed to her at the top of the Eiffel Tower.",
    "My favourite book is One Hundred Years of Solitude.",
    "The kids built a sandcastle at the beach yesterday.",
    "I have been feeling anxious about the job interview.",
    "Grandpa's recipe uses three cups of flour and a pinch of salt.",
    "We are planning a camping trip to Yosemite in August.",
    "The printer on the second floor is out of toner.",
    "She volunteers at the animal shelter every Saturday.",
    "I lost my keys somewhere between the gym and the café.",
    "Über café naïve résumé façade.",
    "日本語のテキストも埋め込めますか？",
    "¿Dónde está la biblioteca?",
    "🎉🎂 happy birthday!!! 🎈",
    "SELECT * FROM units WHERE user_id = 'ann';",
    "https://example.com/path?query=1&x=2",
    "2023-05-08T13:56:00Z",
    "42",
    "The the the the the the the the.",
    "Mel and Caroline both painted sunsets; Mel's was orange, Caroline's was purple.",
    "I think I'll pick up pottery again, it was so relaxing last summer.",
    "Don't forget: the rent is due on the first of every month.",
    "My sister moved to Berlin to work for a start-up that builds solar batteries.",
    "He's been sober for 18 months now and feels great.",
    "The concert was cancelled because of the thunderstorm.",
    "I bought a red kayak and took it out on the lake.",
    "Our team won the regional chess tournament last Sunday!",
    "Is it normal for a two-year-old to sleep fourteen hours a day?",
    "The new policy takes effect on January 1, 2025.",
    "I prefer tea over coffee, especially green tea with honey.",
    "We watched the meteor shower from the roof until 2 am.",
    "Her thesis is about the migration patterns of arctic terns.",
]


@pytest.fixture(scope="module")
def onnx() -> OnnxMiniLMEmbedder:
    return OnnxMiniLMEmbedder()


def test_matches_sentence_transformers(onnx: OnnxMiniLMEmbedder, minilm: MiniLMEmbedder) -> None:
    got, want = onnx.embed(SENTENCES), minilm.embed(SENTENCES)
    cosines = (got * want).sum(axis=1)
    assert got.shape == (len(SENTENCES), 384) and got.dtype == np.float32
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    assert np.median(cosines) >= MEDIAN_COSINE
    assert cosines.min() >= MIN_COSINE, sorted(zip(cosines.round(4), SENTENCES))[:3]
    assert onnx.name == ONNX_NAME != minilm.name  # not interchangeable, so never mixed in one store


def test_batching_does_not_change_vectors(onnx: OnnxMiniLMEmbedder) -> None:
    whole = onnx.embed(SENTENCES)
    one_by_one = np.vstack([onnx.embed([s]) for s in SENTENCES[:10]])
    small_batches = OnnxMiniLMEmbedder(batch_size=3).embed(SENTENCES)
    assert np.allclose(whole[:10], one_by_one, atol=1e-4)
    assert np.allclose(whole, small_batches, atol=1e-4)


def test_empty_input(onnx: OnnxMiniLMEmbedder) -> None:
    assert onnx.embed([]).shape == (0, 384)
    assert np.isclose(np.linalg.norm(onnx.embed([""])[0]), 1.0)


def test_long_input_is_truncated_like_sentence_transformers(onnx: OnnxMiniLMEmbedder, minilm: MiniLMEmbedder) -> None:
    long_text = " ".join(SENTENCES * 10)  # far beyond 256 tokens
    prefix_only = " ".join(long_text.split()[: MAX_TOKENS * 2])  # also beyond 256 tokens: same truncation
    got = onnx.embed([long_text, prefix_only])
    assert float(got[0] @ got[1]) > 0.9999
    assert float(got[0] @ minilm.embed([long_text])[0]) >= MIN_COSINE


def test_registered() -> None:
    assert canonical_name("onnx") == canonical_name("minilm-onnx") == ONNX_NAME
    assert isinstance(create_embedder("onnx"), OnnxMiniLMEmbedder)
