"""Query-time graph expansion: from seed entities to their h-hop neighbourhood.

Pure functions over an adjacency accessor, so the same code runs over SQLite,
PostgreSQL or a dict in a test.

Scoring. A path ``seed = v0, v1, ..., vd`` scores
``seed_confidence * c(v0,v1) * ... * c(vd-1,vd) * beta**d``: the path's
confidence is the **product** of its edge confidences (two shaky links are
shakier than one), damped by ``beta`` per hop. Each entity keeps its best
path of at most ``hops`` edges; ``distance`` is that path's length, so a
strong two-hop path can beat a weak direct edge. Seeds stay at distance 0
with their seed confidence.

Bounds. Each expanded node contributes at most ``max_fanout`` edges, its
most confident ones (ties by neighbour id); the rest are counted in
``edges_skipped``. At most ``max_nodes`` entities (seeds included) are
reached; within a hop the best-scoring newcomers get in first.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping, Sequence

from omnimem.errors import InvalidInputError, missing_extra
from omnimem.graph.extract import Extractor
from omnimem.results import Entity, ExpansionResult, Reached, name_key

try:
    from rapidfuzz import process
    from rapidfuzz.distance import JaroWinkler
except ImportError as exc:
    raise missing_extra("rapidfuzz", "graph") from exc

Neighbors = Callable[[str], Iterable[tuple[str, float]]]
"""``neighbors(entity_id)`` -> (neighbour id, relation confidence) pairs, either direction."""


def expand(
    seeds: Mapping[str, float],
    neighbors: Neighbors,
    *,
    hops: int = 2,
    beta: float = 0.5,
    max_fanout: int = 50,
    max_nodes: int = 500,
) -> ExpansionResult:
    """Reach entities within ``hops`` of the seeds; best score first (ties by id)."""
    _check_arguments(seeds, hops, beta, max_fanout, max_nodes)
    ranked_seeds = sorted(seeds.items(), key=lambda kv: (-kv[1], kv[0]))
    hit_max_nodes = len(ranked_seeds) > max_nodes
    best = {sid: Reached(sid, 0, conf) for sid, conf in ranked_seeds[:max_nodes]}
    adjacency = _CappedAdjacency(neighbors, max_fanout)

    frontier = {sid: r.score for sid, r in best.items() if r.score > 0}
    for distance in range(1, hops + 1):
        offers: dict[str, tuple[float, str]] = {}
        for node in sorted(frontier, key=lambda n: (-frontier[n], n)):
            for other, confidence in adjacency(node):
                score = frontier[node] * beta * confidence
                current = offers.get(other)
                if current is None or score > current[0] or (score == current[0] and node < current[1]):
                    offers[other] = (score, node)
        frontier = {}
        for node, (score, via) in sorted(offers.items(), key=lambda kv: (-kv[1][0], kv[0])):
            known = best.get(node)
            if known is not None and (known.distance == 0 or score <= known.score):
                continue  # seeds are pinned; ties keep the shorter path
            if known is None and len(best) >= max_nodes:
                hit_max_nodes = True
                continue
            best[node] = Reached(node, distance, score, via)
            frontier[node] = score
        if not frontier:
            break

    reached = tuple(sorted(best.values(), key=lambda r: (-r.score, r.distance, r.entity)))
    return ExpansionResult(reached, adjacency.nodes_visited, adjacency.edges_skipped, hit_max_nodes)


def _check_arguments(seeds: Mapping[str, float], hops: int, beta: float, max_fanout: int, max_nodes: int) -> None:
    if hops < 0:
        raise InvalidInputError(f"hops must be >= 0, got {hops}")
    if not 0.0 < beta <= 1.0:
        raise InvalidInputError(f"beta must be in (0, 1], got {beta}")
    if max_fanout < 1 or max_nodes < 1:
        raise InvalidInputError("max_fanout and max_nodes must be >= 1")
    for sid, conf in seeds.items():
        if not 0.0 <= conf <= 1.0:
            raise InvalidInputError(f"seed {sid!r} has confidence {conf!r}, expected [0, 1]")


class _CappedAdjacency:
    """Fetches each node's edges once, keeps its ``max_fanout`` best, counts what it cut."""

    def __init__(self, neighbors: Neighbors, max_fanout: int) -> None:
        self._neighbors = neighbors
        self._max_fanout = max_fanout
        self._cache: dict[str, list[tuple[str, float]]] = {}
        self.edges_skipped = 0

    @property
    def nodes_visited(self) -> int:
        """How many nodes had their neighbours fetched."""
        return len(self._cache)

    def __call__(self, node: str) -> list[tuple[str, float]]:
        cached = self._cache.get(node)
        if cached is not None:
            return cached
        strongest: dict[str, float] = {}
        for other, confidence in self._neighbors(node):
            if not 0.0 <= confidence <= 1.0:
                raise InvalidInputError(f"edge {node!r} -> {other!r} has confidence {confidence!r}")
            if other != node and confidence > 0.0 and confidence > strongest.get(other, -1.0):
                strongest[other] = confidence
        self.edges_skipped += max(0, len(strongest) - self._max_fanout)
        kept = heapq.nsmallest(self._max_fanout, strongest.items(), key=lambda e: (-e[1], e[0]))
        self._cache[node] = kept
        return kept


def find_seeds(
    query: str,
    extractor: Extractor,
    lookup: Iterable[Entity],
    *,
    threshold: float = 0.9,
    per_mention: int = 3,
) -> dict[str, float]:
    """Entity ids the query mentions, with a confidence in [0, 1].

    Each entity the extractor finds in ``query`` is matched against
    ``lookup`` (the known entities, already filtered to the caller's scope):
    an exact, case-insensitive name or alias match scores 1.0 (every entity
    carrying that alias); otherwise up to ``per_mention`` entities whose best
    name or alias has Jaro-Winkler similarity >= ``threshold`` score that
    similarity. Types are ignored: query-time NER on a short question is
    too unreliable to filter on.
    """
    by_key: dict[str, set[str]] = {}
    keys: list[str] = []  # every name and alias, aligned with owners
    owners: list[str] = []
    for entity in lookup:
        for name in entity.names:
            by_key.setdefault(name_key(name), set()).add(entity.id)
            keys.append(name_key(name))
            owners.append(entity.id)

    seeds: dict[str, float] = {}
    for mention in extractor.extract([query])[0].entities:
        key = name_key(mention.name)
        if key in by_key:
            matches = dict.fromkeys(by_key[key], 1.0)
        else:
            matches = _fuzzy(key, keys, owners, threshold, per_mention)
        for entity_id, score in matches.items():
            seeds[entity_id] = max(score, seeds.get(entity_id, 0.0))
    return seeds


def _fuzzy(key: str, keys: Sequence[str], owners: Sequence[str], threshold: float, limit: int) -> dict[str, float]:
    best: dict[str, float] = {}
    hits = process.extract(key, keys, scorer=JaroWinkler.similarity, score_cutoff=threshold, limit=None)
    for _, score, index in hits:
        owner = owners[index]
        best[owner] = max(float(score), best.get(owner, 0.0))
    return dict(sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))[:limit])
