from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omnimem.errors import InvalidInputError
from omnimem.graph.expand import expand, find_seeds
from omnimem.graph.extract import SpacyExtractor
from omnimem.results.entities import Entity, EntityType, ExtractedEntity, Extraction, Reached


class Graph:
    """An undirected test graph that counts how often each node's neighbours are fetched."""

    def __init__(self, edges: Sequence[tuple[str, str, float]]) -> None:
        self.adj: dict[str, list[tuple[str, float]]] = {}
        for a, b, conf in edges:
            self.adj.setdefault(a, []).append((b, conf))
            if a != b:
                self.adj.setdefault(b, []).append((a, conf))
        self.fetches: dict[str, int] = {}

    def __call__(self, node: str) -> list[tuple[str, float]]:
        self.fetches[node] = self.fetches.get(node, 0) + 1
        return list(self.adj.get(node, []))


CHAT = [
    ("caroline", "melanie", 0.9),
    ("melanie", "painting", 0.8),
    ("painting", "sunset", 1.0),
    ("caroline", "support group", 0.6),
]


def test_distances_and_scores_follow_the_best_path() -> None:
    result = expand({"caroline": 1.0}, Graph(CHAT), hops=2, beta=0.5)
    assert result.reached == (
        Reached("caroline", 0, 1.0),
        Reached("melanie", 1, pytest.approx(0.45), "caroline"),
        Reached("support group", 1, pytest.approx(0.3), "caroline"),
        Reached("painting", 2, pytest.approx(0.18), "melanie"),
    )
    assert "sunset" not in result.scores()  # three hops away
    assert result.edges_skipped == 0 and not result.hit_max_nodes


def test_more_hops_reach_further() -> None:
    scores = expand({"caroline": 1.0}, Graph(CHAT), hops=3).scores()
    assert scores["sunset"] == pytest.approx(0.09)
    assert expand({"caroline": 1.0}, Graph(CHAT), hops=0).scores() == {"caroline": 1.0}


def test_seed_confidence_scales_everything() -> None:
    scores = expand({"caroline": 0.5}, Graph(CHAT)).scores()
    assert scores["caroline"] == 0.5
    assert scores["melanie"] == pytest.approx(0.225)


def test_a_strong_two_hop_path_beats_a_weak_edge() -> None:
    graph = Graph([("a", "b", 0.05), ("a", "c", 1.0), ("c", "b", 1.0)])
    reached = {r.entity: r for r in expand({"a": 1.0}, graph).reached}
    assert reached["b"] == Reached("b", 2, pytest.approx(0.25), "c")


def test_seeds_stay_pinned_and_the_best_seed_wins() -> None:
    graph = Graph([("a", "b", 1.0), ("a", "x", 0.4), ("b", "x", 1.0)])
    reached = {r.entity: r for r in expand({"a": 1.0, "b": 0.1}, graph).reached}
    assert reached["b"] == Reached("b", 0, 0.1)
    assert reached["x"] == Reached("x", 1, pytest.approx(0.2), "a")  # 1.0*0.5*0.4 beats 0.1*0.5*1.0


def test_cycles_and_self_loops_are_harmless() -> None:
    graph = Graph([("a", "b", 1.0), ("b", "c", 1.0), ("c", "a", 1.0), ("a", "a", 1.0), ("b", "b", 0.9)])
    result = expand({"a": 1.0}, graph, hops=10)
    assert {r.entity: r.distance for r in result.reached} == {"a": 0, "b": 1, "c": 1}
    assert all(count == 1 for count in graph.fetches.values())  # each node fetched at most once
    assert result.edges_skipped == 0


def test_a_hub_stays_bounded_and_keeps_its_strongest_edges() -> None:
    spokes = [("hub", f"n{i:04d}", round(0.1 + (i % 90) / 100, 2)) for i in range(5000)]
    graph = Graph(spokes)
    result = expand({"hub": 1.0}, graph, hops=2, max_fanout=50)
    kept = [r for r in result.reached if r.distance == 1]
    assert len(kept) == 50
    assert result.edges_skipped == 4950  # each spoke has one edge, back to the hub
    assert min(r.score for r in kept) == pytest.approx(0.5 * 0.99)  # only the 0.99 spokes made it
    assert [r.entity for r in kept] == sorted(r.entity for r in kept)  # equal scores: by id
    assert result.nodes_visited == 51
    assert kept[0].entity == "n0089"


def test_max_nodes_caps_the_result_and_keeps_the_best() -> None:
    graph = Graph([("s", f"n{i}", (i + 1) / 20) for i in range(20)])
    result = expand({"s": 1.0}, graph, max_nodes=5)
    assert result.hit_max_nodes
    assert [r.entity for r in result.reached] == ["s", "n19", "n18", "n17", "n16"]


def test_too_many_seeds_keep_the_most_confident() -> None:
    result = expand({"a": 0.2, "b": 0.9, "c": 0.5}, Graph([]), max_nodes=2)
    assert [r.entity for r in result.reached] == ["b", "c"] and result.hit_max_nodes


def test_duplicate_edges_count_once_with_their_best_confidence() -> None:
    graph = Graph([("a", "b", 0.2), ("a", "b", 0.8)])
    assert expand({"a": 1.0}, graph, max_fanout=1).scores()["b"] == pytest.approx(0.4)


@pytest.mark.parametrize(
    "kwargs", [{"hops": -1}, {"beta": 0.0}, {"beta": 1.5}, {"max_fanout": 0}, {"max_nodes": 0}]
)
def test_invalid_arguments(kwargs: dict[str, float]) -> None:
    with pytest.raises(InvalidInputError):
        expand({"a": 1.0}, Graph([]), **kwargs)  # type: ignore[arg-type]


def test_invalid_confidences() -> None:
    with pytest.raises(InvalidInputError, match="seed"):
        expand({"a": 2.0}, Graph([]))
    with pytest.raises(InvalidInputError, match="edge"):
        expand({"a": 1.0}, Graph([("a", "b", 1.5)]))


# --------------------------------------------------------------------------- seeds


class FixedExtractor:
    """Returns the same entities for any text: isolates find_seeds from NER quality."""

    def __init__(self, *names: str) -> None:
        self.entities = tuple(ExtractedEntity(n, EntityType.PERSON, 0.8) for n in names)

    def extract(self, texts: Sequence[str]) -> list[Extraction]:
        return [Extraction(self.entities) for _ in texts]


KNOWN = [
    Entity("e-mel", "Melanie", ("Mel",), EntityType.PERSON, 0.9),
    Entity("e-car", "Caroline", (), EntityType.PERSON, 0.9),
    Entity("e-sun", "sunset", (), EntityType.CONCEPT, 0.5),
    Entity("e-paris-city", "Paris", (), EntityType.LOCATION, 0.8),
    Entity("e-paris-person", "Paris", (), EntityType.PERSON, 0.8),
]


def test_exact_alias_then_fuzzy() -> None:
    seeds = find_seeds("q", FixedExtractor("mel", "Carolin", "Bob"), KNOWN)
    assert seeds["e-mel"] == 1.0
    assert 0.9 <= seeds["e-car"] < 1.0
    assert set(seeds) == {"e-mel", "e-car"}


def test_an_ambiguous_alias_seeds_every_bearer() -> None:
    assert find_seeds("q", FixedExtractor("Paris"), KNOWN) == {"e-paris-city": 1.0, "e-paris-person": 1.0}


def test_seeds_from_a_real_question(spacy_extractor: SpacyExtractor) -> None:
    seeds = find_seeds("When did Mel paint a sunset with Caroline?", spacy_extractor, KNOWN)
    assert seeds == {"e-mel": 1.0, "e-car": 1.0, "e-sun": 1.0}


# --------------------------------------------------------------------------- property


def _brute_force(seeds: dict[str, float], graph: Graph, hops: int, beta: float) -> dict[str, float]:
    """Best score per node over every path of <= hops edges that does not pass through another seed."""
    best = dict(seeds)

    def walk(node: str, score: float, depth: int, seen: frozenset[str]) -> None:
        if depth == hops:
            return
        for other, conf in graph.adj.get(node, []):
            if other in seen or other in seeds or conf <= 0:
                continue
            value = score * beta * conf
            best[other] = max(value, best.get(other, 0.0))
            walk(other, value, depth + 1, seen | {other})

    for seed, conf in seeds.items():
        if conf > 0:
            walk(seed, conf, 0, frozenset({seed}))
    return best


NODES = [f"v{i}" for i in range(7)]


@settings(max_examples=200, deadline=None)
@given(
    edges=st.lists(
        st.tuples(st.sampled_from(NODES), st.sampled_from(NODES), st.sampled_from([0.0, 0.1, 0.3, 0.5, 0.9, 1.0])),
        max_size=18,
    ),
    seeds=st.dictionaries(st.sampled_from(NODES), st.sampled_from([0.0, 0.2, 0.7, 1.0]), min_size=1, max_size=3),
    hops=st.integers(0, 3),
    beta=st.sampled_from([0.3, 0.5, 1.0]),
)
def test_expansion_matches_brute_force(
    edges: list[tuple[str, str, float]], seeds: dict[str, float], hops: int, beta: float
) -> None:
    graph = Graph(edges)
    result = expand(seeds, graph, hops=hops, beta=beta)
    assert result.scores() == pytest.approx(_brute_force(seeds, graph, hops, beta))
    reached = {r.entity: r for r in result.reached}
    for r in result.reached:
        assert 0 <= r.distance <= hops
        assert (r.via is None) == (r.distance == 0)
        if r.via is not None:
            assert r.via in reached
