from __future__ import annotations

import random
from collections.abc import Callable

import numpy as np
import pytest

from omnimem.results.entities import Entity, EntityType, ExtractedEntity
from omnimem.mau import Scope
from omnimem.graph.resolve import CandidateIndex, EntityResolver, PersonName, person_rule, types_compatible

P, L, C, O, ORG, T, EV = (
    EntityType.PERSON,
    EntityType.LOCATION,
    EntityType.CONCEPT,
    EntityType.OBJECT,
    EntityType.ORGANIZATION,
    EntityType.TIME,
    EntityType.EVENT,
)
HERE = Scope(user_id="u1")

MUST_MERGE = [
    ("Mel", P, "Melanie", P),  # first-name prefix
    ("Melanie", P, "Mel", P),
    ("Dr. Smith", P, "John Smith", P),  # title + surname
    ("J. Smith", P, "John Smith", P),  # initial + surname
    ("Smith", P, "John Smith", P),  # surname alone
    ("Melanie", P, "Melanie Brown", P),  # first name alone
    ("Prof. Ada Lovelace", P, "Ada Lovelace", P),
    ("John Smith Jr.", P, "John Smith", P),
    ("caroline", P, "Caroline", P),  # case
    ("Sam", P, "Samantha", P),
    ("New York City", L, "new york city", L),
    ("The Louvre", L, "Louvre", L),  # leading article
    ("Google", ORG, "Google", L),  # compatible types
    ("guitar", C, "guitar", O),
    ("paintings", C, "painting", O),  # plural
    ("dogs", O, "dog", O),
    ("sunset", C, "sunsets", C),
    ("Pride parade", EV, "pride parade", EV),
    ("last weekend", T, "Last Weekend", T),
    ("pottery class", C, "pottery classes", C),
]

MUST_NOT_MERGE = [
    ("John Smith", P, "Jane Smith", P),  # different first names
    ("Melanie Brown", P, "Melanie Smith", P),  # different surnames
    ("Paris", L, "Paris", P),  # incompatible types
    ("Dr. Brown", P, "John Smith", P),
    ("Al", P, "Alan", P),  # prefix too short
    ("Caroline", P, "Carolyn", P),
    ("Sam", P, "Sarah", P),
    ("New York", L, "New Jersey", L),
    ("London", L, "Londonderry", L),
    ("hiking", C, "biking", C),
    ("pottery", C, "poetry", C),
    ("cat", O, "dog", O),
    ("May 7, 2023", T, "May 8, 2023", T),  # Time merges only exactly
    ("last weekend", T, "last week", T),
    ("Route 66", L, "Route 67", L),  # different numbers
    ("Sweden", L, "Swedish", ORG),
    ("apple", O, "Apple", ORG),
    ("adoption", C, "adoption agency", ORG),
    ("Boston", L, "Boston Marathon", EV),
    ("2022", T, "2023", T),
]


def _entity(eid: str, name: str, type_: EntityType, aliases: tuple[str, ...] = (), scope: Scope = HERE) -> Entity:
    return Entity(eid, name, aliases, type_, 0.9, scope)


def _incoming(name: str, type_: EntityType) -> ExtractedEntity:
    return ExtractedEntity(name, type_, 0.8)


@pytest.mark.parametrize(("new", "new_type", "known", "known_type"), MUST_MERGE)
def test_must_merge(embed: Callable, new: str, new_type: EntityType, known: str, known_type: EntityType) -> None:
    resolver = EntityResolver(embed)
    result = resolver.resolve(_incoming(new, new_type), [_entity("e1", known, known_type)], scope=HERE)
    assert result.entity_id == "e1", result


@pytest.mark.parametrize(("new", "new_type", "known", "known_type"), MUST_NOT_MERGE)
def test_must_not_merge(embed: Callable, new: str, new_type: EntityType, known: str, known_type: EntityType) -> None:
    resolver = EntityResolver(embed)
    result = resolver.resolve(_incoming(new, new_type), [_entity("e1", known, known_type)], scope=HERE)
    assert result.entity_id is None, result


def test_other_scopes_are_invisible(embed: Callable) -> None:
    elsewhere = _entity("e1", "Caroline", P, scope=Scope(user_id="u2"))
    assert EntityResolver(embed).resolve(_incoming("Caroline", P), [elsewhere], scope=HERE).entity_id is None


def test_aliases_are_matched(embed: Callable) -> None:
    melanie = _entity("e1", "Melanie", P, aliases=("Mellie",))
    result = EntityResolver(embed).resolve(_incoming("mellie", P), [melanie], scope=HERE)
    assert (result.entity_id, result.rule, result.similarity) == ("e1", "exact", 1.0)


def test_a_rule_match_on_an_alias_beats_a_veto_on_the_name(embed: Callable) -> None:
    # "B. Smith" vs "Robert Smith": the initial conflicts; vs the alias "Bobby Smith": it fits.
    robert = _entity("e1", "Robert Smith", P, aliases=("Bobby Smith",))
    result = EntityResolver(embed).resolve(_incoming("B. Smith", P), [robert], scope=HERE)
    assert (result.entity_id, result.rule) == ("e1", "person:full_names")
    plain = _entity("e1", "Robert Smith", P)
    assert EntityResolver(embed).resolve(_incoming("B. Smith", P), [plain], scope=HERE).entity_id is None


def test_two_rule_matches_are_ambiguous(embed: Callable) -> None:
    john, jane = _entity("e1", "John Smith", P), _entity("e2", "Jane Smith", P)
    result = EntityResolver(embed).resolve(_incoming("Dr. Smith", P), [john, jane], scope=HERE)
    assert (result.entity_id, result.rule) == (None, "ambiguous")
    result = EntityResolver(embed).resolve(_incoming("John Smith", P), [john, jane], scope=HERE)
    assert result.entity_id == "e1"


def test_best_candidate_wins_and_order_does_not_matter(embed: Callable) -> None:
    pool = [_entity(f"e{i}", name, C) for i, name in enumerate(["painting", "paint", "pottery", "poetry", "piano"])]
    picks = set()
    for seed in range(5):
        shuffled = pool[:]
        random.Random(seed).shuffle(shuffled)
        picks.add(EntityResolver(embed).resolve(_incoming("Painting", C), shuffled, scope=HERE).entity_id)
    assert picks == {"e0"}


def test_exact_match_prefers_the_same_type(embed: Callable) -> None:
    org, loc = _entity("a", "Google", ORG), _entity("b", "Google", L)
    assert EntityResolver(embed).resolve(_incoming("Google", L), [org, loc], scope=HERE).entity_id == "b"


def test_names_are_embedded_once_and_hopeless_names_never(embed: Callable) -> None:
    calls: list[list[str]] = []

    def counting(names: list[str]) -> np.ndarray:
        calls.append(list(names))
        return embed(names)

    resolver = EntityResolver(counting)
    pool = [_entity("e1", "sunsets", C), _entity("e2", "mountain bike", O)]
    results = resolver.resolve_many([_incoming("sunset", C), _incoming("sunset glow", C)], pool, scope=HERE)
    assert results[0].entity_id == "e1"
    assert len(calls) == 1 and "mountain bike" not in calls[0]
    resolver.resolve(_incoming("sunset", C), pool, scope=HERE)
    assert len(calls) == 1  # cached


def test_threshold_controls_hybrid_merges(embed: Callable) -> None:
    pool = [_entity("e1", "camping", C)]
    loose = EntityResolver(embed, threshold=0.7).resolve(_incoming("camping trip", C), pool, scope=HERE)
    strict = EntityResolver(embed, threshold=0.95).resolve(_incoming("camping trip", C), pool, scope=HERE)
    assert loose.entity_id == "e1" and loose.rule == "hybrid"
    assert strict.entity_id is None and 0 < strict.similarity < 0.95


def test_pure_jaro_winkler_needs_no_embedder() -> None:
    def no_embed(names: list[str]) -> np.ndarray:
        raise AssertionError("cosine_weight=0 must not embed")

    resolver = EntityResolver(no_embed, cosine_weight=0.0, threshold=0.95)
    result = resolver.resolve(_incoming("Melbourne", L), [_entity("e1", "Melbourn", L)], scope=HERE)
    assert result.entity_id == "e1"


def test_merge_keeps_aliases_and_prefers_the_fuller_person_name(embed: Callable) -> None:
    resolver = EntityResolver(embed)
    mel = _entity("e1", "Mel", P)
    merged = resolver.merge(mel, _incoming("Melanie", P))
    assert (merged.id, merged.name, merged.aliases) == ("e1", "Melanie", ("Mel",))
    merged = resolver.merge(merged, _incoming("mel", P))
    assert merged.aliases == ("Mel",)  # no case-duplicates
    merged = resolver.merge(merged, _incoming("Dr. Melanie Brown", P))
    assert merged.name == "Dr. Melanie Brown" and set(merged.aliases) == {"Mel", "Melanie"}
    concept = resolver.merge(_entity("e2", "painting", C), _incoming("oil paintings", C))
    assert concept.name == "painting" and concept.aliases == ("oil paintings",)


def test_person_name_parsing() -> None:
    assert PersonName.parse("Dr. John  Smith, Jr.") == PersonName("dr", ("john", "smith"))
    assert PersonName.parse("Mel") == PersonName(None, ("mel",))
    assert person_rule(PersonName.parse("Dr. Smith"), PersonName.parse("Mr. Smith"))[0] is True
    assert person_rule(PersonName.parse("Mel"), PersonName.parse("Jon"))[0] is None


def test_compatible_types_are_symmetric_and_exclude_person() -> None:
    for a in EntityType:
        assert types_compatible(a, a)
        for b in EntityType:
            assert types_compatible(a, b) == types_compatible(b, a)
            if a is P and b is not P:
                assert not types_compatible(a, b)


def test_invalid_settings() -> None:
    with pytest.raises(ValueError):
        EntityResolver(lambda names: np.zeros((len(names), 2)), threshold=0.0)
    with pytest.raises(ValueError):
        EntityResolver(lambda names: np.zeros((len(names), 2)), cosine_weight=1.5)


def test_an_index_grows_with_the_batch_so_later_mentions_merge(embed: Callable) -> None:
    resolver = EntityResolver(embed)
    index = CandidateIndex([_entity("e1", "Caroline", P), _entity("x", "Caroline", P, scope=Scope())], scope=HERE)
    assert len(index) == 1  # other scopes are left out
    ids = []
    for n, mention in enumerate(["Mel", "Caroline", "Melanie Brown", "Mel", "sunsets", "sunset"]):
        type_ = C if "sun" in mention else P
        result = resolver.resolve(_incoming(mention, type_), index, scope=HERE)
        if result.entity_id is None:
            entity = _entity(f"new{n}", mention, type_)
        else:
            (known,) = [e for e in index.entities if e.id == result.entity_id]
            entity = resolver.merge(known, _incoming(mention, type_))
        index.add(entity)
        ids.append(entity.id)
    assert ids == ["new0", "e1", "new0", "new0", "new4", "new4"]
    (mel,) = [e for e in index.entities if e.id == "new0"]
    assert (mel.name, mel.aliases) == ("Melanie Brown", ("Mel",))


def test_an_index_of_another_scope_is_refused(embed: Callable) -> None:
    with pytest.raises(ValueError, match="candidate index"):
        EntityResolver(embed).resolve(_incoming("a", C), CandidateIndex(scope=Scope()), scope=HERE)
    with pytest.raises(ValueError, match="not in scope"):
        CandidateIndex(scope=HERE).add(_entity("e", "a", C, scope=Scope()))
