"""The knowledge graph's rows in PostgreSQL: the ``GraphRows`` contract, the unit cascade and recursive expansion.

Each row carries its entity's tenant (see :mod:`omnimem.store.postgres.schema`);
links and relations take it from the entity they hang on, so a tenant's
graph is co-located with its units. Functions run inside the caller's
transaction and never commit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from omnimem.results import Entity, EntityType, Relation, name_key
from omnimem.mau import Scope
from omnimem.store.sqlite.graph import relation_id
from omnimem.store.postgres.governance_sql import tenant_of


class PgGraphRows:
    """``GraphRows`` over one connection (inside the caller's transaction)."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    # -- reads ------------------------------------------------------------------
    def entities(self, *, user_id: str | None = None, agent_id: str | None = None,
                 ids: Sequence[str] | None = None) -> list[Entity]:
        clauses: list[str] = []
        args: list[Any] = []
        for col, value in (("user_id", user_id), ("agent_id", agent_id)):
            if value is not None:
                clauses.append(f"{col} = %s")
                args.append(value)
        if ids is not None:
            if not ids:
                return []
            clauses.append("id = ANY(%s)")
            args.append(sorted(set(ids)))
        return self._select(clauses, args)

    def owned_entities(self, user_id: str | None, agent_id: str | None) -> list[Entity]:
        return self._select(["user_id IS NOT DISTINCT FROM %s", "agent_id IS NOT DISTINCT FROM %s"],
                            [user_id, agent_id])

    def _select(self, clauses: list[str], args: list[Any]) -> list[Entity]:
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = self._conn.execute(f"SELECT id, user_id, agent_id, session_id, name, type, confidence "
                                  f"FROM entities {where} ORDER BY id", args).fetchall()
        aliases: dict[str, list[str]] = {}
        if rows:
            for eid, alias in self._conn.execute(
                    "SELECT entity_id, alias FROM entity_aliases WHERE entity_id = ANY(%s) ORDER BY entity_id, pos",
                    ([r[0] for r in rows],)):
                aliases.setdefault(eid, []).append(alias)
        return [Entity(id=eid, name=name,
                       aliases=tuple(a for a in aliases.get(eid, []) if name_key(a) != name_key(name)),
                       type=EntityType(type_), confidence=float(conf), scope=Scope(uid, aid, sid))
                for eid, uid, aid, sid, name, type_, conf in rows]

    def find_by_alias(self, name: str, *, user_id: str | None, agent_id: str | None) -> list[str]:
        clauses, args = ["a.alias_key = %s"], [name_key(name)]
        for col, value in (("e.user_id", user_id), ("e.agent_id", agent_id)):
            if value is not None:
                clauses.append(f"{col} = %s")
                args.append(value)
        if user_id is not None:  # the tenant leads the alias index and keeps the join on one shard
            clauses.append("a.tenant = %s")
            args.append(user_id)
        rows = self._conn.execute(
            "SELECT DISTINCT e.id FROM entity_aliases a JOIN entities e ON e.tenant = a.tenant AND e.id = a.entity_id "
            f"WHERE {' AND '.join(clauses)} ORDER BY e.id", args)
        return [r[0] for r in rows]

    def neighbors(self, entity_id: str) -> list[tuple[str, float]]:
        rows = self._conn.execute(
            """SELECT other, MAX(confidence) FROM (
                   SELECT target_entity AS other, confidence FROM relations WHERE source_entity = %s
                   UNION ALL
                   SELECT source_entity AS other, confidence FROM relations WHERE target_entity = %s
               ) AS r WHERE other <> %s GROUP BY other ORDER BY other""", (entity_id, entity_id, entity_id))
        return [(other, float(conf)) for other, conf in rows]

    def adjacency(self, seeds: Sequence[str], hops: int) -> dict[str, list[tuple[str, float]]]:
        """``neighbors()`` of every entity within ``hops`` relations of ``seeds``, in one recursive query.

        Graph expansion walks ``hops + 1`` levels from the seeds; fetching their
        adjacency at once replaces one round trip per entity. The walk stays in
        the seeds' tenant (relations are co-located with their entities).
        """
        if not seeds or hops < 0:
            return {}
        rows = self._conn.execute(
            """WITH RECURSIVE walk(tenant, id, depth) AS (
                   SELECT tenant, id, 0 FROM entities WHERE id = ANY(%s)
                   UNION
                   SELECT r.tenant, CASE WHEN r.source_entity = w.id THEN r.target_entity ELSE r.source_entity END,
                          w.depth + 1
                   FROM walk w JOIN relations r ON r.tenant = w.tenant
                        AND (r.source_entity = w.id OR r.target_entity = w.id)
                   WHERE w.depth < %s),
               nodes AS (SELECT DISTINCT tenant, id FROM walk),
               edges AS (
                   SELECT n.id AS node, r.target_entity AS other, r.confidence
                   FROM nodes n JOIN relations r ON r.tenant = n.tenant AND r.source_entity = n.id
                   UNION ALL
                   SELECT n.id, r.source_entity, r.confidence
                   FROM nodes n JOIN relations r ON r.tenant = n.tenant AND r.target_entity = n.id)
               SELECT n.id, e.other, MAX(e.confidence) FROM nodes n
               LEFT JOIN edges e ON e.node = n.id AND e.other <> n.id
               GROUP BY n.id, e.other ORDER BY n.id, e.other""", (list(seeds), hops)).fetchall()
        out: dict[str, list[tuple[str, float]]] = {}
        for node, other, confidence in rows:
            edges = out.setdefault(node, [])
            if other is not None:
                edges.append((other, float(confidence)))
        return out

    def entity_units(self, entity_id: str, limit: int | None = None) -> list[tuple[str, float]]:
        rows = self._conn.execute("SELECT unit_id, confidence FROM entity_units WHERE entity_id = %s "
                                  "ORDER BY confidence DESC, unit_id LIMIT %s", (entity_id, limit))
        return [(unit_id, float(conf)) for unit_id, conf in rows]

    def relations(self, entity_id: str | None = None) -> list[tuple[str, str, str, float]]:
        sql = "SELECT source_entity, target_entity, label, confidence FROM relations"
        rows = self._conn.execute(sql + " ORDER BY id") if entity_id is None else self._conn.execute(
            sql + " WHERE source_entity = %s OR target_entity = %s ORDER BY id", (entity_id, entity_id))
        return [(s, t, lbl, float(c)) for s, t, lbl, c in rows]

    def unit_links(self) -> list[tuple[str, str]]:
        return [(e, u) for e, u in self._conn.execute("SELECT entity_id, unit_id FROM entity_units "
                                                      "ORDER BY entity_id, unit_id")]

    # -- writes -----------------------------------------------------------------
    def upsert_entity(self, entity: Entity, embedding: npt.ArrayLike | None = None) -> None:
        blob = None if embedding is None else np.asarray(embedding, dtype=np.float32).tobytes()
        scope = entity.scope
        self._conn.execute(
            """INSERT INTO entities (tenant, id, user_id, agent_id, session_id, name, type, confidence, embedding)
               VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)
               ON CONFLICT (tenant, id) DO UPDATE SET name = excluded.name, type = excluded.type,
                   confidence = GREATEST(entities.confidence, excluded.confidence),
                   embedding = COALESCE(excluded.embedding, entities.embedding)""",
            (tenant_of(scope), entity.id, scope.user_id, scope.agent_id, scope.session_id, entity.name,
             entity.type.value, entity.confidence, blob))
        with self._conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO entity_aliases (tenant, entity_id, alias_key, alias) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT DO NOTHING", [(tenant_of(scope), entity.id, name_key(n), n) for n in entity.names])

    def link_entity_unit(self, entity_id: str, unit_id: str, confidence: float) -> None:
        self._conn.execute(
            """INSERT INTO entity_units (tenant, entity_id, unit_id, confidence)
               SELECT tenant, id, %s, %s FROM entities WHERE id = %s
               ON CONFLICT (tenant, entity_id, unit_id) DO UPDATE
               SET confidence = GREATEST(entity_units.confidence, excluded.confidence)""",
            (unit_id, confidence, entity_id))
        self._conn.execute("UPDATE entities SET confidence = GREATEST(confidence, %s) WHERE id = %s",
                           (confidence, entity_id))

    def upsert_relation(self, relation: Relation) -> None:
        rid = relation_id(relation.source_id, relation.target_id, relation.label)
        row = self._conn.execute("SELECT tenant FROM entities WHERE id = %s", (relation.source_id,)).fetchone()
        tenant = row[0] if row else ""
        self._conn.execute(
            """INSERT INTO relations (tenant, id, source_entity, target_entity, label, confidence)
               VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (tenant, id) DO UPDATE
               SET confidence = GREATEST(relations.confidence, excluded.confidence)""",
            (tenant, rid, relation.source_id, relation.target_id, relation.label, relation.confidence))
        with self._conn.cursor() as cur:
            cur.executemany(
                """INSERT INTO relation_units (tenant, relation_id, unit_id, confidence) VALUES (%s, %s, %s, %s)
                   ON CONFLICT (tenant, relation_id, unit_id) DO UPDATE
                   SET confidence = GREATEST(relation_units.confidence, excluded.confidence)""",
                [(tenant, rid, unit_id, relation.confidence) for unit_id in relation.unit_ids])

    def put_clip_vectors(self, rows: Sequence[tuple[str, str, npt.NDArray[np.float32]]]) -> None:
        with self._conn.cursor() as cur:
            cur.executemany(
                """INSERT INTO clip_vectors (tenant, unit_id, model, vector)
                   SELECT tenant, id, %s, %s FROM units WHERE id = %s
                   ON CONFLICT (tenant, unit_id) DO UPDATE SET model = excluded.model, vector = excluded.vector""",
                [(model, np.asarray(v, dtype=np.float32), unit_id) for unit_id, model, v in rows])


def delete_units_cascade(conn: Any, unit_ids: Sequence[str]) -> None:
    """Drop the units' evidence links, then every entity or relation left without one (see ``store/sqlite/graph.py``)."""
    units = sorted(set(unit_ids))
    touched_e = {r[0] for r in conn.execute("DELETE FROM entity_units WHERE unit_id = ANY(%s) RETURNING entity_id",
                                            (units,))}
    touched_r = {r[0] for r in conn.execute(
        "DELETE FROM relation_units WHERE unit_id = ANY(%s) RETURNING relation_id", (units,))}
    alive_e = {r[0] for r in conn.execute("SELECT DISTINCT entity_id FROM entity_units WHERE entity_id = ANY(%s)",
                                          (sorted(touched_e),))}
    alive_r = {r[0] for r in conn.execute(
        "SELECT DISTINCT relation_id FROM relation_units WHERE relation_id = ANY(%s)", (sorted(touched_r),))}
    dead_e, dead_r = sorted(touched_e - alive_e), touched_r - alive_r
    dead_r.update(r[0] for r in conn.execute(
        "SELECT id FROM relations WHERE source_entity = ANY(%s) OR target_entity = ANY(%s)", (dead_e, dead_e)))
    conn.execute("DELETE FROM relation_units WHERE relation_id = ANY(%s)", (sorted(dead_r),))
    conn.execute("DELETE FROM relations WHERE id = ANY(%s)", (sorted(dead_r),))
    conn.execute("DELETE FROM entity_units WHERE entity_id = ANY(%s)", (dead_e,))
    conn.execute("DELETE FROM entity_aliases WHERE entity_id = ANY(%s)", (dead_e,))
    conn.execute("DELETE FROM entities WHERE id = ANY(%s)", (dead_e,))
    conn.execute("""UPDATE entities e SET confidence = (SELECT MAX(confidence) FROM entity_units l
                    WHERE l.tenant = e.tenant AND l.entity_id = e.id) WHERE id = ANY(%s)""", (sorted(alive_e),))
    conn.execute("""UPDATE relations r SET confidence = (SELECT MAX(confidence) FROM relation_units l
                    WHERE l.tenant = r.tenant AND l.relation_id = r.id) WHERE id = ANY(%s)""",
                 (sorted(alive_r - dead_r),))
