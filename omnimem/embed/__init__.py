"""Embedders: a Protocol and the built-in providers (registered in :mod:`omnimem.contract.providers`)."""

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
from omnimem.embed.minilm import MiniLMEmbedder, default_model

DEFAULT_EMBEDDER = default_model()  # a new store's model: all-MiniLM-L6-v2 with the torch extra, else its int8 copy

# the built-ins register in omnimem.contract.providers.BUILTINS, the same way plugins do

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
