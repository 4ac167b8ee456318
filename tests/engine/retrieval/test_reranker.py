"""``Memory(reranker=...)``: a local cross-encoder re-orders the best candidates (a tiny random one here).

No weights ship in any package, so the checkpoint is a randomly initialised
one-layer BERT with a real (tiny) WordPiece vocabulary: it exercises loading
and re-ordering; its scores mean nothing, so the test checks that the order
is the model's, whatever it is.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from omnimem import Memory
from omnimem.errors import ConfigError
from omnimem.mau import search_text

WORDS = "the a i we my lighthouse harbour painting bowl dog beach tea job library sunset boat red blue".split()
TURNS = [{"speaker": "Ann", "text": t} for t in (
    "the lighthouse at sunset", "a red boat in the harbour", "my dog on the beach", "blue tea bowl",
    "the library job", "we painted the harbour", "the dog and the boat", "a sunset painting")]


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    folder = tmp_path_factory.mktemp("tiny-cross-encoder")
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ":", "ann", *WORDS]) + "\n")
    transformers.BertTokenizer(str(vocab)).save_pretrained(folder)
    config = transformers.BertConfig(vocab_size=len(WORDS) + 7, hidden_size=16, num_hidden_layers=1,
                                     num_attention_heads=2, intermediate_size=32, max_position_embeddings=64,
                                     num_labels=1)
    torch.manual_seed(0)
    transformers.BertForSequenceClassification(config).save_pretrained(folder)
    return folder


def test_the_reranker_orders_the_best_candidates_by_its_own_score(tmp_path: Path, tiny_cross_encoder: Path):
    from sentence_transformers import CrossEncoder

    query = "painting of the harbour"
    with Memory(tmp_path / "m", embedder="fake", novelty=False, reranker=str(tiny_cross_encoder),
                rerank_depth=5) as mem:
        mem.add_dialogue(TURNS, user_id="u", session_id="s")
        ctx = mem.search(query, user_id="u")
    with Memory(tmp_path / "p", embedder="fake", novelty=False) as plain:
        plain.add_dialogue(TURNS, user_id="u", session_id="s")
        fused = sorted(plain.search(query, user_id="u").hits, key=lambda h: h.rank)
    hits = sorted(ctx.hits, key=lambda h: h.rank)
    assert [h.ranks["rerank"] for h in hits[:5]] == [1, 2, 3, 4, 5]
    assert all("rerank" not in h.ranks for h in hits[5:])
    model = CrossEncoder(str(tiny_cross_encoder), device="cpu")
    scores = model.predict([(query, search_text(h.unit.speaker, h.unit.summary)) for h in hits[:5]])
    assert list(scores) == sorted(scores, reverse=True)  # the first five follow the model's scores
    assert {h.unit.summary for h in hits[:5]} == {h.unit.summary for h in fused[:5]}  # the same five, re-ordered
    assert [h.unit.summary for h in hits[5:]] == [h.unit.summary for h in fused[5:]]  # the rest as fused


def test_off_by_default_and_a_missing_checkpoint_is_a_config_error(tmp_path: Path):
    with Memory(tmp_path / "m", embedder="fake") as mem:
        assert mem.settings.reranker is None
        mem.add("the lighthouse at sunset", user_id="u")
        assert all("rerank" not in h.ranks for h in mem.search("lighthouse", user_id="u").hits)
    with Memory(tmp_path / "n", embedder="fake", reranker=str(tmp_path / "nowhere")) as mem:
        mem.add("the lighthouse at sunset", user_id="u")
        with pytest.raises(ConfigError, match="not a folder"):
            mem.search("lighthouse", user_id="u")
