"""The knowledge graph wired to a store: build on ingest, expand at query time.

Entities are scoped by ``user_id`` and ``agent_id`` (not by session), so the
same person met in two sessions is one node: that is what lets multi-hop
questions cross sessions. Isolation between users and agents is kept exactly;
forgetting a session removes its units' evidence links, and any entity or
relation left without evidence goes with them.

Query time: entities mentioned in the query (spaCy or the LLM extractor, then
alias and fuzzy lookup) seed an h-hop expansion scored beta^distance *
confidence. Units linked to reached entities form a pool (fan-out capped per
entity); the pool is ranked by the entity score times the unit's similarity
to the query, and the best units join the hybrid results as graph evidence.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from omnimem.graph.expand import expand, find_seeds
from omnimem.graph.extract import Extractor
from omnimem.results import Entity, ExtractedEntity, Extraction, Relation
from omnimem.results import Neighbor
from omnimem.graph.resolve import CandidateIndex, EntityResolver
from omnimem.mau import MAU, Scope, search_text
from omnimem.store.base import GraphRows, GraphSource, RowWriter

Embed = Callable[[list[str]], npt.NDArray[np.float32]]
HANDED_KEPT = 16  # candidate pools waiting for their batch's writer (more only if batches fail before writing)


@dataclass(frozen=True, slots=True)
class GraphInfo:
    """What the graph did for one query (reported in the Context)."""

    seeds: tuple[str, ...] = ()
    reached: int = 0
    pool: int = 0
    added: tuple[str, ...] = ()
    edges_skipped: int = 0
    units_capped: int = 0
    entity_scores: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "seeds": list(self.seeds), "reached": self.reached, "pool": self.pool, "added": list(self.added),
            "edges_skipped": self.edges_skipped, "units_capped": self.units_capped,
        }


def entity_scope(scope: Scope) -> Scope:
    return Scope(scope.user_id, scope.agent_id, None)


class KnowledgeGraph:
    """Graph rows in the store (typed ``GraphRows`` methods), maintained with the units."""

    def __init__(
        self,
        source: GraphSource,
        embed: Embed,
        extractor: Extractor,
        *,
        hops: int = 2,
        beta: float = 0.5,
        max_fanout: int = 50,
        max_nodes: int = 500,
        units_per_entity: int = 200,
        threshold: float = 0.85,
    ) -> None:
        self._source = source  # graph_rows(): the store's graph rows, under its lock
        self.embed = embed
        self.extractor = extractor
        self.hops, self.beta = hops, beta
        self.max_fanout, self.max_nodes = max_fanout, max_nodes
        self.units_per_entity = units_per_entity
        self.resolver = EntityResolver(lambda names: embed(list(names)), threshold=threshold)
        self._handed: dict[Scope, tuple[int, CandidateIndex]] = {}  # scope -> (store seq, prefetch's pool)
        self._handed_lock = threading.Lock()

    def use_embedder(self, embed: Embed) -> None:
        """Compare entity names with another model from now on (after a re-embed); cached vectors go."""
        self.embed = embed
        old = self.resolver
        self.resolver = EntityResolver(lambda names: embed(list(names)), threshold=old.threshold,
                                       cosine_weight=old.cosine_weight, cache_size=old.cache_size)

    # -- ingest -----------------------------------------------------------------
    def extract(self, units: Sequence[MAU]) -> list[Extraction]:
        """Run the extractor on "speaker: text" (slow: called outside the store's locks).

        The speaker is part of the text so that "I painted a sunset" links the
        painting to the person who said it. The names that resolving the
        mentions will compare are embedded here too, in one call per scope
        (see :meth:`EntityResolver.prefetch`), so the writer, which runs in
        the insert transaction, does not wait for the model.
        """
        extractions = self.extractor.extract([search_text(u.speaker, u.summary) for u in units])
        self.prefetch(units, extractions)
        return extractions

    def prefetch(self, units: Sequence[MAU], extractions: Sequence[Extraction]) -> None:
        """Embed the names resolving these extractions will compare, and hand the writer its candidate pool.

        The scope's entities are read here, outside the insert transaction, and
        the pool goes to the writer of the batch, which uses it if the store's
        change counter has not moved since (see :meth:`_pool_for`): the
        entities are read and indexed once per batch. The counter is read
        before the entities, so a write committed in between makes the pool
        look stale (read again), never fresh.
        """
        mentions: dict[Scope, list[ExtractedEntity]] = {}
        for unit, extraction in zip(units, extractions, strict=True):
            mentions.setdefault(entity_scope(unit.scope), []).extend(extraction.entities)
        for scope, found in mentions.items():
            seq = self._seq()
            with self._source.graph_rows() as rows:
                pool = CandidateIndex(rows.owned_entities(scope.user_id, scope.agent_id), scope=scope)
            self.resolver.prefetch(found, pool)
            if seq is not None:
                with self._handed_lock:
                    self._handed.pop(scope, None)
                    self._handed[scope] = (seq, pool)
                    while len(self._handed) > HANDED_KEPT:  # batches that never reached their writer
                        self._handed.pop(next(iter(self._handed)))

    def _seq(self) -> int | None:
        """The store's change counter (None for a graph source without one: the writer then reads its pool)."""
        seq = getattr(self._source, "seq", None)
        return int(seq()) if callable(seq) else None

    def _pool_for(self, scope: Scope, rows: GraphRows, seq: int | None) -> CandidateIndex:
        """The writer's pool, exact: the one prefetch read if nothing was written since (``seq``, the counter
        as the writer's transaction sees it before its own change, is the one prefetch saw), else read in the
        writing transaction. A handed pool is used by one writer at most, so no pool outlives its batch."""
        with self._handed_lock:
            handed = self._handed.pop(scope, None)
        if handed is not None and seq is not None and handed[0] == seq:
            return handed[1]
        return CandidateIndex(rows.owned_entities(scope.user_id, scope.agent_id), scope=scope)

    def writer(self, units: Sequence[MAU], extractions: Sequence[Extraction]) -> RowWriter:
        """A function that writes the units' entities and relations inside the unit transaction.

        An entity a mention merges into without changing it is not rewritten,
        and a relation found in several units of the batch is written once
        with all of them: the rows are the same, with fewer statements.
        """

        def write(rows: GraphRows) -> None:
            seq = self._seq()  # inside the insert transaction, before its own change
            pools: dict[Scope, CandidateIndex] = {}
            relations: dict[tuple[str, str, str, float], list[str]] = {}
            for unit, extraction in zip(units, extractions, strict=True):
                scope = entity_scope(unit.scope)
                if scope not in pools:
                    pools[scope] = self._pool_for(scope, rows, seq)
                pool = pools[scope]
                ids: dict[str, str] = {}
                for mention in extraction.entities:
                    found = self.resolver.resolve(mention, pool, scope=scope).entity_id
                    if found is None:
                        entity = Entity(uuid.uuid4().hex, mention.name, (), mention.type, mention.confidence, scope)
                        changed = True
                    else:
                        existing = pool.get(found)
                        entity = self.resolver.merge(existing, mention)
                        changed = entity != existing
                    if changed:
                        pool.add(entity)
                        rows.upsert_entity(entity)
                    rows.link_entity_unit(entity.id, unit.id, mention.confidence)
                    ids[mention.name] = entity.id
                for rel in extraction.relations:
                    source, target = ids.get(rel.source), ids.get(rel.target)
                    if source and target and source != target:
                        relations.setdefault((source, target, rel.label, rel.confidence), []).append(unit.id)
            for (source, target, label, confidence), unit_ids in relations.items():
                rows.upsert_relation(Relation(source, target, label, confidence, tuple(dict.fromkeys(unit_ids))))

        return write

    # -- query --------------------------------------------------------------------
    def expand_units(self, query: str, scope: Scope) -> tuple[dict[str, float], GraphInfo]:
        """Units reached from the query's entities, with their entity scores."""
        with self._source.graph_rows() as rows:
            lookup = rows.entities(user_id=scope.user_id, agent_id=scope.agent_id)
        seeds = find_seeds(query, self.extractor, lookup)
        if not seeds:
            return {}, GraphInfo()

        with self._source.graph_rows() as rows:  # a SQL backend fetches the neighbourhood in one recursive query
            prefetch = getattr(rows, "adjacency", None)
            known = prefetch(sorted(seeds), self.hops) if prefetch is not None else {}

        def neighbours(entity_id: str) -> list[tuple[str, float]]:
            if entity_id in known:
                return list(known[entity_id])
            with self._source.graph_rows() as rows:
                return rows.neighbors(entity_id)

        result = expand(seeds, neighbours, hops=self.hops, beta=self.beta,
                        max_fanout=self.max_fanout, max_nodes=self.max_nodes)
        scores = result.scores()
        unit_scores: dict[str, float] = {}
        capped = 0
        with self._source.graph_rows() as rows:
            for entity_id, score in scores.items():
                linked = rows.entity_units(entity_id, self.units_per_entity + 1)
                if len(linked) > self.units_per_entity:
                    capped += 1
                    linked = linked[: self.units_per_entity]
                for unit_id, conf in linked:
                    unit_scores[unit_id] = unit_scores.get(unit_id, 0.0) + score * conf
        info = GraphInfo(tuple(sorted(seeds)), len(scores), len(unit_scores), (), result.edges_skipped, capped, scores)
        return unit_scores, info

    def entities(self, scope: Scope) -> list[Entity]:
        with self._source.graph_rows() as rows:
            return rows.entities(user_id=scope.user_id, agent_id=scope.agent_id)

    def find(self, name: str, scope: Scope) -> list[Entity]:
        with self._source.graph_rows() as rows:
            ids = rows.find_by_alias(name, user_id=scope.user_id, agent_id=scope.agent_id)
            return rows.entities(ids=ids)

    def neighbors(self, name: str, scope: Scope, hops: int) -> list[Neighbor]:
        found = self.find(name, scope)
        if not found:
            return []

        def neighbours(entity_id: str) -> list[tuple[str, float]]:
            with self._source.graph_rows() as rows:
                return rows.neighbors(entity_id)

        result = expand({e.id: 1.0 for e in found}, neighbours, hops=hops, beta=self.beta,
                        max_fanout=self.max_fanout, max_nodes=self.max_nodes)
        with self._source.graph_rows() as rows:
            by_id = {e.id: e for e in rows.entities(ids=[r.entity for r in result.reached])}
        return [Neighbor(by_id[r.entity], r.distance, r.score) for r in result.reached if r.entity in by_id]

    def details(self, entity: Entity) -> dict[str, Any]:
        """An entity with its relations (names resolved) and the units that attest it."""
        with self._source.graph_rows() as rows:
            units = [unit_id for unit_id, _ in rows.entity_units(entity.id)]
            rels = rows.relations(entity.id)
            names = {e.id: e.name for e in rows.entities(ids=[x for r in rels for x in r[:2]])}
        return {
            "id": entity.id, "name": entity.name, "aliases": list(entity.aliases), "type": entity.type.value,
            "confidence": entity.confidence, "units": sorted(units),
            "relations": [{"source": names.get(s, s), "target": names.get(t, t), "label": lbl, "confidence": c}
                          for s, t, lbl, c in rels],
        }

    def export(self, scope: Scope, fmt: str) -> str:
        """The scope's graph as GraphML or JSON (nodes with aliases and units, edges with labels)."""
        import json

        with self._source.graph_rows() as rows:
            ents = rows.entities(user_id=scope.user_id, agent_id=scope.agent_id)
            ids = {e.id for e in ents}
            rels = [r for r in rows.relations() if r[0] in ids and r[1] in ids]
            links: dict[str, list[str]] = {}
            for eid, uid in rows.unit_links():
                if eid in ids:
                    links.setdefault(eid, []).append(uid)
        nodes = [{"id": e.id, "name": e.name, "type": e.type.value, "aliases": list(e.aliases),
                  "confidence": e.confidence, "user_id": e.scope.user_id, "agent_id": e.scope.agent_id,
                  "units": sorted(links.get(e.id, []))} for e in ents]
        edges = [{"source": s, "target": t, "label": lbl, "confidence": c} for s, t, lbl, c in rels]
        if fmt == "json":
            return json.dumps({"nodes": nodes, "edges": edges}, ensure_ascii=False, indent=2)
        if fmt == "graphml":
            import networkx as nx

            graph = nx.MultiDiGraph()
            for node in nodes:
                graph.add_node(node["id"], name=node["name"], type=node["type"],
                               aliases="|".join(str(a) for a in node["aliases"] or ()),  # type: ignore[union-attr]
                               confidence=node["confidence"], units="|".join(str(u) for u in node["units"] or ()))  # type: ignore[union-attr]
            for edge in edges:
                graph.add_edge(edge["source"], edge["target"], label=edge["label"], confidence=edge["confidence"])
            return "\n".join(nx.generate_graphml(graph))
        raise ValueError(f"unknown export format {fmt!r}")
