"""Embedders: a Protocol and the built-in providers (registered in :mod:`omnimem.providers`)."""

from omnimem.embed.base import (
    NO_ROLES,
    Embedder,
    RoleEmbedder,
    available_embedders,
    canonical_name,
    create_embedder,
    embed_queries,
    normalise,
    register_embedder,
    role_scheme,
)
from omnimem.embed.e5 import E5Embedder
from omnimem.embed.fake import FakeEmbedder
from omnimem.embed.minilm import MODEL_NAME, MiniLMEmbedder

DEFAULT_EMBEDDER = MODEL_NAME

# the built-ins register in omnimem.providers.BUILTINS, the same way plugins do

__all__ = [
    "DEFAULT_EMBEDDER",
    "E5Embedder",
    "NO_ROLES",
    "Embedder",
    "FakeEmbedder",
    "MiniLMEmbedder",
    "RoleEmbedder",
    "available_embedders",
    "canonical_name",
    "create_embedder",
    "embed_queries",
    "normalise",
    "register_embedder",
    "role_scheme",
]
