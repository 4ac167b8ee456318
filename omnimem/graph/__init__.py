"""The knowledge graph: extraction, entity resolution, expansion and the SQLite schema.

Pure pieces the store and ``Memory`` wire together:

- ``extract``: texts -> ``Extraction`` (spaCy offline, or an LLM);
- ``resolve``: an extracted entity -> an existing ``Entity`` id or None;
- ``expand``: seed entity ids -> their scored h-hop neighbourhood;

Their rows live in the store: typed methods of the ``GraphRows`` contract
(:mod:`omnimem.store.base`), in SQLite through :mod:`omnimem.store.sqlite.graph`.

The value objects import eagerly; everything needing the ``graph`` extra
(rapidfuzz, spaCy) imports on first use, so ``omnimem.results`` (and the
store's graph tables) work without it. spaCy itself loads only when a
``SpacyExtractor`` first extracts.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from omnimem.errors import InvalidExtractionError
from omnimem.results import (
    Entity,
    EntityType,
    ExpansionResult,
    ExtractedEntity,
    ExtractedRelation,
    Extraction,
    Reached,
    Relation,
)
from omnimem.mau import Scope  # the one scope type, re-exported for graph users

if TYPE_CHECKING:
    from omnimem.graph.expand import expand, find_seeds
    from omnimem.graph.extract import CO_OCCURS, Extractor, JSONCompleter, LLMExtractor, SpacyExtractor
    from omnimem.graph.resolve import CandidateIndex, EntityResolver, Resolution

_LAZY = {
    "expand": "omnimem.graph.expand",
    "find_seeds": "omnimem.graph.expand",
    "CO_OCCURS": "omnimem.graph.extract",
    "Extractor": "omnimem.graph.extract",
    "JSONCompleter": "omnimem.graph.extract",
    "LLMExtractor": "omnimem.graph.extract",
    "SpacyExtractor": "omnimem.graph.extract",
    "CandidateIndex": "omnimem.graph.resolve",
    "EntityResolver": "omnimem.graph.resolve",
    "Resolution": "omnimem.graph.resolve",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "CO_OCCURS",
    "CandidateIndex",
    "Entity",
    "EntityResolver",
    "EntityType",
    "ExpansionResult",
    "ExtractedEntity",
    "ExtractedRelation",
    "Extraction",
    "Extractor",
    "InvalidExtractionError",
    "JSONCompleter",
    "LLMExtractor",
    "Reached",
    "Relation",
    "Resolution",
    "Scope",
    "SpacyExtractor",
    "expand",
    "find_seeds",
]
