"""A face: ``omnimem.entities`` keeps working; the graph's value types live in :mod:`omnimem.results`."""

from omnimem.errors import InvalidExtractionError
from omnimem.mau import Scope
from omnimem.results import (
    MAX_NAME_CHARS,
    PERSON_TITLES,
    Entity,
    EntityType,
    ExpansionResult,
    ExtractedEntity,
    ExtractedRelation,
    Extraction,
    Reached,
    Relation,
    name_key,
    normalize_name,
)

__all__ = [
    "MAX_NAME_CHARS", "PERSON_TITLES", "Entity", "EntityType", "ExpansionResult", "ExtractedEntity",
    "ExtractedRelation", "Extraction", "InvalidExtractionError", "Reached", "Relation", "Scope", "name_key",
    "normalize_name",
]
