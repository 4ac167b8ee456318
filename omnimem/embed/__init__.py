"""Embedders: a Protocol and the built-in providers (registered in :mod:`omnimem.providers`)."""

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

DEFAULT_EMBEDDER = MODEL_NAME

# the built-ins register in omnimem.providers.BUILTINS, the same way plugins do

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
