"""The knowledge graph's value types: what extractors emit, what the store keeps, what expansion reaches.

Frozen and validated on construction (:class:`InvalidExtractionError`), so a
bad value fails where it is made rather than deep inside the store.
:class:`Entity` and :class:`Neighbor` cross the surfaces, with
``to_dict``/``from_dict``; :mod:`omnimem.results` re-exports every name here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from omnimem.errors import InvalidExtractionError
from omnimem.mau import Scope

__all__ = [
    "MAX_NAME_CHARS", "PERSON_TITLES", "Entity", "EntityType", "ExpansionResult", "ExtractedEntity",
    "ExtractedRelation", "Extraction", "InvalidExtractionError", "Neighbor", "Reached", "Relation", "Scope",
    "name_key", "normalize_name",
]

MAX_NAME_CHARS = 200
"""Longer "names" are sentences an extractor mistook for an entity."""

_SPACE = re.compile(r"\s+")

PERSON_TITLES = frozenset(
    "dr doctor mr mrs ms miss mx prof professor sir dame lord lady rev reverend "
    "fr father sr sister capt captain sgt sergeant officer coach judge".split()
)
"""Words that may precede a person's name, lowercased and without the dot."""


class EntityType(str, Enum):
    """The seven node types; the value is the name stored in the database."""

    PERSON = "Person"
    LOCATION = "Location"
    EVENT = "Event"
    CONCEPT = "Concept"
    TIME = "Time"
    ORGANIZATION = "Organization"
    OBJECT = "Object"

    @classmethod
    def parse(cls, text: str) -> EntityType:
        """Read a type name case-insensitively ("person", "PERSON", "Person")."""
        key = text.strip().lower()
        for member in cls:
            if member.value.lower() == key:
                return member
        raise InvalidExtractionError(f"unknown entity type {text!r}")

    def __str__(self) -> str:
        return self.value


def normalize_name(text: str) -> str:
    """Collapse whitespace and trim; the form every name is stored in."""
    return _SPACE.sub(" ", text).strip()


def name_key(text: str) -> str:
    """Case-insensitive comparison key for a name (exact-alias lookups use it)."""
    return normalize_name(text).casefold()


def _check_name(name: str, what: str) -> None:
    if not isinstance(name, str) or not name.strip():
        raise InvalidExtractionError(f"{what} is empty")
    if len(name) > MAX_NAME_CHARS:
        raise InvalidExtractionError(f"{what} is longer than {MAX_NAME_CHARS} characters: {name[:40]!r}...")


def _check_confidence(value: float, what: str) -> None:
    if not isinstance(value, (int, float)) or math.isnan(value) or not 0.0 <= value <= 1.0:
        raise InvalidExtractionError(f"{what} confidence must be in [0, 1], got {value!r}")


@dataclass(frozen=True)
class ExtractedEntity:
    """An entity mention as an extractor saw it; not yet tied to a stored entity."""

    name: str
    type: EntityType
    confidence: float

    def __post_init__(self) -> None:
        _check_name(self.name, "entity name")
        if not isinstance(self.type, EntityType):
            raise InvalidExtractionError(f"entity type must be an EntityType, got {self.type!r}")
        _check_confidence(self.confidence, "entity")


@dataclass(frozen=True)
class ExtractedRelation:
    """A directed relation between two extracted entity names of the same text."""

    source: str
    target: str
    label: str
    confidence: float

    def __post_init__(self) -> None:
        _check_name(self.source, "relation source")
        _check_name(self.target, "relation target")
        _check_name(self.label, "relation label")
        if name_key(self.source) == name_key(self.target):
            raise InvalidExtractionError(f"relation {self.label!r} is a self-loop on {self.source!r}")
        _check_confidence(self.confidence, "relation")


@dataclass(frozen=True)
class Extraction:
    """Everything extracted from one text."""

    entities: tuple[ExtractedEntity, ...] = ()
    relations: tuple[ExtractedRelation, ...] = ()


@dataclass(frozen=True)
class Entity:
    """A node of the graph: one real-world thing, known under a name and aliases."""

    id: str
    name: str
    aliases: tuple[str, ...]
    type: EntityType
    confidence: float
    scope: Scope = Scope()

    def __post_init__(self) -> None:
        _check_name(self.name, "entity name")
        _check_confidence(self.confidence, "entity")

    @property
    def names(self) -> tuple[str, ...]:
        """The canonical name first, then the aliases."""
        return (self.name, *self.aliases)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "aliases": list(self.aliases), "type": self.type.value,
                "confidence": self.confidence, **self.scope.as_dict()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Entity:
        """The inverse of :meth:`to_dict` (the remote client reads entities with it)."""
        return cls(str(data["id"]), str(data["name"]), tuple(str(a) for a in data.get("aliases", ())),
                   EntityType(data["type"]), float(data["confidence"]),
                   Scope(data.get("user_id"), data.get("agent_id"), data.get("session_id")))

    def __str__(self) -> str:
        if not self.aliases:
            return f"{self.name} ({self.type})"
        return f"{self.name} ({self.type}; aka {', '.join(self.aliases)})"


@dataclass(frozen=True)
class Relation:
    """A directed, labelled edge, with the memory units that attest it."""

    source_id: str
    target_id: str
    label: str
    confidence: float
    unit_ids: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _check_name(self.label, "relation label")
        if self.source_id == self.target_id:
            raise InvalidExtractionError(f"relation {self.label!r} is a self-loop on {self.source_id!r}")
        _check_confidence(self.confidence, "relation")


@dataclass(frozen=True)
class Reached:
    """An entity (by id) found by graph expansion.

    ``distance`` is the hop count of the path that gave the best ``score``;
    ``via`` is the previous entity on that path (``None`` for seeds).
    """

    entity: str
    distance: int
    score: float
    via: str | None = None


@dataclass(frozen=True)
class ExpansionResult:
    """What :func:`omnimem.graph.expand.expand` found, best score first, and what it cut.

    ``nodes_visited`` counts entities whose neighbours were fetched (once
    each); ``edges_skipped`` the edges dropped by the fan-out cap;
    ``hit_max_nodes`` whether some entity was left out for lack of room.
    """

    reached: tuple[Reached, ...]
    nodes_visited: int
    edges_skipped: int
    hit_max_nodes: bool

    def scores(self) -> dict[str, float]:
        return {r.entity: r.score for r in self.reached}


@dataclass(frozen=True, slots=True)
class Neighbor:
    """An entity reached from another, with its hop distance and score."""

    entity: Entity
    distance: int
    score: float

    def __str__(self) -> str:
        return f"{self.entity} d={self.distance} score={self.score:.3f}"

    def to_dict(self) -> dict[str, Any]:
        return {"entity": self.entity.to_dict(), "distance": self.distance, "score": self.score}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Neighbor:
        return cls(Entity.from_dict(data["entity"]), int(data["distance"]), float(data["score"]))
