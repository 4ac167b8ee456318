"""Embedders: a Protocol, a registry, and the built-in providers."""

from omnimem.embed.base import (
    Embedder,
    available_embedders,
    canonical_name,
    create_embedder,
    normalise,
    register_embedder,
)
from omnimem.embed.fake import FakeEmbedder
from omnimem.embed.minilm import MODEL_NAME, MiniLMEmbedder
from omnimem.embed.onnx import ONNX_NAME, OnnxMiniLMEmbedder

DEFAULT_EMBEDDER = MODEL_NAME

register_embedder(MODEL_NAME, MiniLMEmbedder, aliases=("minilm", "default"))
register_embedder("fake", FakeEmbedder)

register_embedder(ONNX_NAME, OnnxMiniLMEmbedder, aliases=("minilm-onnx", "onnx"))

__all__ = [
    "DEFAULT_EMBEDDER",
    "Embedder",
    "FakeEmbedder",
    "MiniLMEmbedder",
    "available_embedders",
    "canonical_name",
    "create_embedder",
    "normalise",
    "register_embedder",
]
