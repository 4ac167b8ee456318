"""Prefetching name embeddings: one model call per batch, and the same decisions as without it."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from omnimem.results.entities import Entity, EntityType, ExtractedEntity
from omnimem.graph.resolve import CandidateIndex, EntityResolver
from omnimem.mau import Scope

SCOPE = Scope("u1", None, None)
KNOWN = [
    Entity("e1", "Melanie", (), EntityType.PERSON, 0.8, SCOPE),
    Entity("e2", "Louvre Museum", (), EntityType.LOCATION, 0.8, SCOPE),
    Entity("e3", "sunset painting", (), EntityType.CONCEPT, 0.5, SCOPE),
    Entity("e4", "Route 66", (), EntityType.LOCATION, 0.8, SCOPE),
]
BATCH = [
    ExtractedEntity("Louvre Museums", EntityType.LOCATION, 0.8),  # near a known name
    ExtractedEntity("sunset paintings", EntityType.CONCEPT, 0.5),  # exact after the plural rule
    ExtractedEntity("Grand Canyon Park", EntityType.LOCATION, 0.8),  # new...
    ExtractedEntity("Grand Canyon Parks", EntityType.LOCATION, 0.8),  # ...and near the new one in the same batch
    ExtractedEntity("Route 67", EntityType.LOCATION, 0.8),  # different digits: never by similarity
    ExtractedEntity("Mel", EntityType.PERSON, 0.8),  # a person rule decides
    ExtractedEntity("sunset paint", EntityType.CONCEPT, 0.5),
]


Embed = Callable[[list[str]], npt.NDArray[np.float32]]


class CountingEmbed:
    def __init__(self, embed: Embed) -> None:
        self.embed = embed
        self.calls: list[list[str]] = []

    def __call__(self, names: list[str]) -> npt.NDArray[np.float32]:
        self.calls.append(list(names))
        return self.embed(names)


def resolve_one_by_one(resolver: EntityResolver, pool: CandidateIndex) -> list[str | None]:
    """What the graph writer does: resolve each mention, then add the new or merged entity to the pool."""
    out: list[str | None] = []
    for mention in BATCH:
        found = resolver.resolve(mention, pool, scope=SCOPE).entity_id
        entity = (Entity(uuid.uuid4().hex, mention.name, (), mention.type, mention.confidence, SCOPE)
                  if found is None else resolver.merge(pool.get(found), mention))
        pool.add(entity)
        out.append(found)
    return out


def test_prefetch_leaves_nothing_to_embed_and_changes_no_decision(embed: Embed) -> None:
    plain, counted = CountingEmbed(embed), CountingEmbed(embed)
    without = resolve_one_by_one(EntityResolver(plain), CandidateIndex(KNOWN, scope=SCOPE))
    assert len(plain.calls) >= 2  # one call per mention that needed a comparison

    resolver = EntityResolver(counted)
    pool = CandidateIndex(KNOWN, scope=SCOPE)
    embedded = resolver.prefetch(BATCH, pool)
    assert len(counted.calls) == 1 and embedded == len(counted.calls[0])
    assert "Grand Canyon Parks" in counted.calls[0] and "Mel" not in counted.calls[0]
    with_prefetch = resolve_one_by_one(resolver, pool)
    assert len(counted.calls) == 1  # the run found every vector it compared
    assert with_prefetch[:2] == ["e2", "e3"] and with_prefetch[4:6] == [None, "e1"]
    assert [x is None for x in with_prefetch] == [x is None for x in without]
    assert with_prefetch[3] is not None  # merged into the entity its batch created a moment before


def test_prefetch_with_nothing_to_compare_calls_no_model(embed: Embed) -> None:
    counted = CountingEmbed(embed)
    resolver = EntityResolver(counted)
    assert resolver.prefetch([], CandidateIndex(scope=SCOPE)) == 0
    assert resolver.prefetch([ExtractedEntity("Melanie", EntityType.PERSON, 0.8)],
                             CandidateIndex(KNOWN, scope=SCOPE)) == 0
    assert counted.calls == []


def test_a_mention_an_earlier_one_makes_exact_needs_no_plan_and_nothing_is_left_to_embed(embed: Embed) -> None:
    batch = [
        ExtractedEntity("Grand Canyon Park", EntityType.LOCATION, 0.8),
        ExtractedEntity("the Grand Canyon Park", EntityType.ORGANIZATION, 0.8),  # exact after the first: no vector
        ExtractedEntity("Grand Canyon Parks", EntityType.LOCATION, 0.8),  # near, not exact: compared by vector
    ]
    counted = CountingEmbed(embed)
    resolver = EntityResolver(counted)
    pool = CandidateIndex(KNOWN, scope=SCOPE)
    resolver.prefetch(batch, pool)
    assert len(counted.calls) == 1 and "Grand Canyon Parks" in counted.calls[0]
    found = []
    for mention in batch:  # the writer's run: nothing left to embed, the second mention merges exactly
        resolution = resolver.resolve(mention, pool, scope=SCOPE)
        entity = (Entity(uuid.uuid4().hex, mention.name, (), mention.type, mention.confidence, SCOPE)
                  if resolution.entity_id is None else resolver.merge(pool.get(resolution.entity_id), mention))
        pool.add(entity)
        found.append(resolution.rule)
    assert found[:2] == ["", "exact"] and len(counted.calls) == 1
