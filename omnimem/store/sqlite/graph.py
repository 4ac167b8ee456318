"""The graph's SQLite schema and the queries over it (the SQLite side of ``GraphRows``).

Every function works inside the caller's transaction and never commits, so a
unit and its entities are written (or deleted) atomically by whoever owns the
connection. ``create_graph_schema`` runs statement by statement rather than
through ``executescript``, which would commit a pending transaction.

Evidence. Every entity and relation is attested by memory units, through
``entity_units`` / ``relation_units`` links that carry the confidence of that
attestation. An entity's or relation's confidence is the maximum over its
links, recomputed when units are deleted; one left without any link is
deleted (see :func:`delete_units_cascade`).

Aliases. ``entity_aliases`` holds every name an entity is known by, its
canonical name included, keyed by ``name_key`` so exact lookups use an index.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from omnimem.results import Entity, EntityType, Relation, name_key
from omnimem.mau import Scope

GRAPH_SCHEMA: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS entities (
        id TEXT PRIMARY KEY,
        user_id TEXT,
        agent_id TEXT,
        session_id TEXT,
        name TEXT NOT NULL,
        type TEXT NOT NULL,
        confidence REAL NOT NULL,
        embedding BLOB
    )""",
    "CREATE INDEX IF NOT EXISTS entities_scope ON entities (user_id, agent_id, session_id)",
    """CREATE TABLE IF NOT EXISTS entity_aliases (
        entity_id TEXT NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
        alias_key TEXT NOT NULL,
        alias TEXT NOT NULL,
        PRIMARY KEY (entity_id, alias_key)
    )""",
    "CREATE INDEX IF NOT EXISTS entity_aliases_key ON entity_aliases (alias_key)",
    """CREATE TABLE IF NOT EXISTS relations (
        id TEXT PRIMARY KEY,
        source_entity TEXT NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
        target_entity TEXT NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
        label TEXT NOT NULL,
        confidence REAL NOT NULL,
        UNIQUE (source_entity, target_entity, label)
    )""",
    "CREATE INDEX IF NOT EXISTS relations_target ON relations (target_entity)",
    """CREATE TABLE IF NOT EXISTS relation_units (
        relation_id TEXT NOT NULL REFERENCES relations (id) ON DELETE CASCADE,
        unit_id TEXT NOT NULL,
        confidence REAL NOT NULL,
        PRIMARY KEY (relation_id, unit_id)
    )""",
    "CREATE INDEX IF NOT EXISTS relation_units_unit ON relation_units (unit_id)",
    """CREATE TABLE IF NOT EXISTS entity_units (
        entity_id TEXT NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
        unit_id TEXT NOT NULL,
        confidence REAL NOT NULL,
        PRIMARY KEY (entity_id, unit_id)
    )""",
    "CREATE INDEX IF NOT EXISTS entity_units_unit ON entity_units (unit_id)",
)
"""DDL, one statement per string. The UNIQUE constraint on relations already
indexes ``source_entity``, so only ``target_entity`` gets its own index."""

_CHUNK = 400  # SQLite builds before 3.32 allow 999 bound parameters; some queries bind a chunk twice


def create_graph_schema(conn: sqlite3.Connection) -> None:
    for statement in GRAPH_SCHEMA:
        conn.execute(statement)


def relation_id(source_id: str, target_id: str, label: str) -> str:
    """A stable id, so the same relation extracted twice is one row."""
    digest = hashlib.sha256(f"{source_id}\x1f{target_id}\x1f{label}".encode()).hexdigest()
    return f"rel_{digest[:24]}"


# --------------------------------------------------------------------------- writes


def upsert_entity(
    conn: sqlite3.Connection, entity: Entity, *, embedding: npt.ArrayLike | None = None
) -> None:
    """Insert or update an entity and add its names to its aliases.

    Name, type and embedding are overwritten (the embedding only when given);
    confidence is raised, never lowered; the scope of an existing entity is
    left alone. Aliases are only ever added.
    """
    blob = None if embedding is None else np.asarray(embedding, dtype=np.float32).tobytes()
    scope = entity.scope
    conn.execute(
        """INSERT INTO entities (id, user_id, agent_id, session_id, name, type, confidence, embedding)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (id) DO UPDATE SET
               name = excluded.name,
               type = excluded.type,
               confidence = MAX(entities.confidence, excluded.confidence),
               embedding = COALESCE(excluded.embedding, entities.embedding)""",
        (entity.id, scope.user_id, scope.agent_id, scope.session_id, entity.name, entity.type.value,
         entity.confidence, blob),
    )
    for name in entity.names:
        add_alias(conn, entity.id, name)


def add_alias(conn: sqlite3.Connection, entity_id: str, alias: str) -> None:
    conn.execute(
        "INSERT OR IGNORE INTO entity_aliases (entity_id, alias_key, alias) VALUES (?, ?, ?)",
        (entity_id, name_key(alias), alias),
    )


def link_entity_unit(conn: sqlite3.Connection, entity_id: str, unit_id: str, confidence: float) -> None:
    """Record that a unit attests an entity; raises the entity's confidence if needed."""
    conn.execute(
        """INSERT INTO entity_units (entity_id, unit_id, confidence) VALUES (?, ?, ?)
           ON CONFLICT (entity_id, unit_id) DO UPDATE
           SET confidence = MAX(entity_units.confidence, excluded.confidence)""",
        (entity_id, unit_id, confidence),
    )
    conn.execute("UPDATE entities SET confidence = MAX(confidence, ?) WHERE id = ?", (confidence, entity_id))


def upsert_relation(conn: sqlite3.Connection, relation: Relation) -> str:
    """Insert or strengthen a relation, link it to ``relation.unit_ids``; returns its id."""
    rid = relation_id(relation.source_id, relation.target_id, relation.label)
    conn.execute(
        """INSERT INTO relations (id, source_entity, target_entity, label, confidence) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (id) DO UPDATE SET confidence = MAX(relations.confidence, excluded.confidence)""",
        (rid, relation.source_id, relation.target_id, relation.label, relation.confidence),
    )
    conn.executemany(
        """INSERT INTO relation_units (relation_id, unit_id, confidence) VALUES (?, ?, ?)
           ON CONFLICT (relation_id, unit_id) DO UPDATE
           SET confidence = MAX(relation_units.confidence, excluded.confidence)""",
        [(rid, unit_id, relation.confidence) for unit_id in relation.unit_ids],
    )
    return rid


@dataclass(frozen=True)
class CascadeResult:
    entities_deleted: int
    relations_deleted: int


def delete_units_cascade(conn: sqlite3.Connection, unit_ids: Iterable[str]) -> CascadeResult:
    """Forget units: drop their links, then every entity or relation left without one.

    Relations touching a deleted entity go too. Surviving entities and
    relations that lost a link get their confidence recomputed from the
    links that remain. Entities and relations the units never linked are
    not touched.
    """
    units = sorted(set(unit_ids))
    touched_entities: set[str] = set()
    touched_relations: set[str] = set()
    for chunk in _chunks(units):
        marks = _marks(chunk)
        touched_entities.update(_column(conn, f"SELECT entity_id FROM entity_units WHERE unit_id IN ({marks})", chunk))
        touched_relations.update(
            _column(conn, f"SELECT relation_id FROM relation_units WHERE unit_id IN ({marks})", chunk)
        )
        conn.execute(f"DELETE FROM entity_units WHERE unit_id IN ({marks})", chunk)
        conn.execute(f"DELETE FROM relation_units WHERE unit_id IN ({marks})", chunk)

    dead_entities = _without_links(conn, "entity_units", "entity_id", touched_entities)
    dead_relations = _without_links(conn, "relation_units", "relation_id", touched_relations)
    for chunk in _chunks(sorted(dead_entities)):
        marks = _marks(chunk)
        dead_relations.update(
            _column(
                conn,
                f"SELECT id FROM relations WHERE source_entity IN ({marks}) OR target_entity IN ({marks})",
                chunk + chunk,
            )
        )
    for chunk in _chunks(sorted(dead_relations)):
        marks = _marks(chunk)
        conn.execute(f"DELETE FROM relation_units WHERE relation_id IN ({marks})", chunk)
        conn.execute(f"DELETE FROM relations WHERE id IN ({marks})", chunk)
    for chunk in _chunks(sorted(dead_entities)):
        marks = _marks(chunk)
        conn.execute(f"DELETE FROM entity_units WHERE entity_id IN ({marks})", chunk)
        conn.execute(f"DELETE FROM entity_aliases WHERE entity_id IN ({marks})", chunk)
        conn.execute(f"DELETE FROM entities WHERE id IN ({marks})", chunk)

    for chunk in _chunks(sorted(touched_entities - dead_entities)):
        conn.execute(
            f"""UPDATE entities SET confidence =
                   (SELECT MAX(confidence) FROM entity_units WHERE entity_id = entities.id)
                WHERE id IN ({_marks(chunk)})""",
            chunk,
        )
    for chunk in _chunks(sorted(touched_relations - dead_relations)):
        conn.execute(
            f"""UPDATE relations SET confidence =
                   (SELECT MAX(confidence) FROM relation_units WHERE relation_id = relations.id)
                WHERE id IN ({_marks(chunk)})""",
            chunk,
        )
    return CascadeResult(len(dead_entities), len(dead_relations))


# --------------------------------------------------------------------------- reads


def neighbors(conn: sqlite3.Connection, entity_id: str) -> list[tuple[str, float]]:
    """Entities related to ``entity_id`` in either direction, with the strongest relation's confidence."""
    rows = conn.execute(
        """SELECT other, MAX(confidence) FROM (
               SELECT target_entity AS other, confidence FROM relations WHERE source_entity = ?
               UNION ALL
               SELECT source_entity AS other, confidence FROM relations WHERE target_entity = ?
           ) WHERE other != ? GROUP BY other ORDER BY other""",
        (entity_id, entity_id, entity_id),
    )
    return [(other, float(conf)) for other, conf in rows]


def entities(
    conn: sqlite3.Connection,
    *,
    user_id: str | None = None,
    agent_id: str | None = None,
    session_id: str | None = None,
    ids: Sequence[str] | None = None,
) -> list[Entity]:
    """Entities matching the scope filter (``None`` means any value), ordered by id."""
    clauses, params = _scope_filter(user_id, agent_id, session_id)
    if ids is not None:
        if not ids:
            return []
        out: list[Entity] = []
        for chunk in _chunks(sorted(set(ids))):
            out.extend(_select_entities(conn, [*clauses, f"id IN ({_marks(chunk)})"], [*params, *chunk]))
        return sorted(out, key=lambda e: e.id)
    return _select_entities(conn, clauses, params)


def find_by_alias(
    conn: sqlite3.Connection,
    name: str,
    *,
    user_id: str | None = None,
    agent_id: str | None = None,
    session_id: str | None = None,
) -> list[str]:
    """Ids of entities in scope known by ``name`` (case-insensitive), sorted."""
    clauses, params = _scope_filter(user_id, agent_id, session_id, prefix="e.")
    where = " AND ".join(["a.alias_key = ?", *clauses])
    rows = conn.execute(
        f"SELECT DISTINCT e.id FROM entity_aliases a JOIN entities e ON e.id = a.entity_id WHERE {where} ORDER BY e.id",
        [name_key(name), *params],
    )
    return [row[0] for row in rows]


def entity_embeddings(conn: sqlite3.Connection, ids: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
    """Stored float32 embeddings of the given entities (those that have one)."""
    out: dict[str, npt.NDArray[np.float32]] = {}
    for chunk in _chunks(sorted(set(ids))):
        rows = conn.execute(
            f"SELECT id, embedding FROM entities WHERE embedding IS NOT NULL AND id IN ({_marks(chunk)})", chunk
        )
        out.update((eid, np.frombuffer(blob, dtype=np.float32)) for eid, blob in rows)
    return out


def relations_of_units(conn: sqlite3.Connection, unit_ids: Sequence[str]) -> list[Relation]:
    """Relations attested by any of the units, each with all its unit ids."""
    found: set[str] = set()
    for chunk in _chunks(sorted(set(unit_ids))):
        found.update(_column(conn, f"SELECT relation_id FROM relation_units WHERE unit_id IN ({_marks(chunk)})", chunk))
    out: list[Relation] = []
    for chunk in _chunks(sorted(found)):
        rows = conn.execute(
            f"""SELECT r.id, r.source_entity, r.target_entity, r.label, r.confidence, ru.unit_id
                FROM relations r LEFT JOIN relation_units ru ON ru.relation_id = r.id
                WHERE r.id IN ({_marks(chunk)}) ORDER BY r.id, ru.unit_id""",
            chunk,
        )
        grouped: dict[str, tuple[tuple[str, str, str, float], list[str]]] = {}
        for rid, src, dst, label, conf, unit in rows:
            grouped.setdefault(rid, ((src, dst, label, conf), []))[1].append(unit)
        out.extend(Relation(s, t, lbl, float(c), tuple(units)) for (s, t, lbl, c), units in grouped.values())
    return out


# --------------------------------------------------------------------------- helpers


def _select_entities(conn: sqlite3.Connection, clauses: list[str], params: Sequence[str | None]) -> list[Entity]:
    where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
    rows = conn.execute(
        f"""SELECT id, user_id, agent_id, session_id, name, type, confidence
            FROM entities {where} ORDER BY id""",
        params,
    ).fetchall()
    aliases = _aliases(conn, [row[0] for row in rows])
    return [
        Entity(
            id=eid,
            name=name,
            aliases=tuple(a for a in aliases.get(eid, []) if name_key(a) != name_key(name)),
            type=EntityType(type_),
            confidence=float(conf),
            scope=Scope(uid, aid, sid),
        )
        for eid, uid, aid, sid, name, type_, conf in rows
    ]


def _aliases(conn: sqlite3.Connection, ids: Sequence[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for chunk in _chunks(list(ids)):
        rows = conn.execute(
            f"""SELECT entity_id, alias FROM entity_aliases
                WHERE entity_id IN ({_marks(chunk)}) ORDER BY entity_id, rowid""",  # aliases in the order added
            chunk,
        )
        for eid, alias in rows:
            out.setdefault(eid, []).append(alias)
    return out


def _scope_filter(
    user_id: str | None, agent_id: str | None, session_id: str | None, *, prefix: str = ""
) -> tuple[list[str], list[str]]:
    clauses: list[str] = []
    params: list[str] = []
    for column, value in (("user_id", user_id), ("agent_id", agent_id), ("session_id", session_id)):
        if value is not None:
            clauses.append(f"{prefix}{column} = ?")
            params.append(value)
    return clauses, params


def _without_links(conn: sqlite3.Connection, table: str, column: str, ids: set[str]) -> set[str]:
    alive: set[str] = set()
    for chunk in _chunks(sorted(ids)):
        alive.update(_column(conn, f"SELECT DISTINCT {column} FROM {table} WHERE {column} IN ({_marks(chunk)})", chunk))
    return ids - alive


def _column(conn: sqlite3.Connection, sql: str, params: Sequence[str]) -> list[str]:
    return [row[0] for row in conn.execute(sql, params)]


def _chunks(items: Sequence[str]) -> Iterator[list[str]]:
    for start in range(0, len(items), _CHUNK):
        yield list(items[start : start + _CHUNK])


def _marks(chunk: Sequence[str]) -> str:
    return ", ".join("?" * len(chunk))


class SQLiteGraphRows:
    """The ``GraphRows`` contract over one connection (inside the caller's transaction or lock)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def entities(self, *, user_id: str | None = None, agent_id: str | None = None,
                 ids: Sequence[str] | None = None) -> list[Entity]:
        return entities(self._conn, user_id=user_id, agent_id=agent_id, ids=ids)

    def owned_entities(self, user_id: str | None, agent_id: str | None) -> list[Entity]:
        # one query by owner (not ids, then the entities in chunks of ids): read once per ingest batch
        return _select_entities(self._conn, ["user_id IS ?", "agent_id IS ?"], [user_id, agent_id])

    def find_by_alias(self, name: str, *, user_id: str | None, agent_id: str | None) -> list[str]:
        return find_by_alias(self._conn, name, user_id=user_id, agent_id=agent_id)

    def neighbors(self, entity_id: str) -> list[tuple[str, float]]:
        return neighbors(self._conn, entity_id)

    def entity_units(self, entity_id: str, limit: int | None = None) -> list[tuple[str, float]]:
        sql = "SELECT unit_id, confidence FROM entity_units WHERE entity_id = ? ORDER BY confidence DESC, unit_id"
        rows = self._conn.execute(sql + " LIMIT ?", (entity_id, limit)) if limit is not None else \
            self._conn.execute(sql, (entity_id,))
        return [(unit_id, float(conf)) for unit_id, conf in rows]

    def relations(self, entity_id: str | None = None) -> list[tuple[str, str, str, float]]:
        sql = "SELECT source_entity, target_entity, label, confidence FROM relations"
        rows = self._conn.execute(sql) if entity_id is None else self._conn.execute(
            sql + " WHERE source_entity = ? OR target_entity = ?", (entity_id, entity_id))
        return [(s, t, lbl, float(c)) for s, t, lbl, c in rows]

    def unit_links(self) -> list[tuple[str, str]]:
        return [(e, u) for e, u in self._conn.execute("SELECT entity_id, unit_id FROM entity_units")]

    def upsert_entity(self, entity: Entity) -> None:
        upsert_entity(self._conn, entity)

    def link_entity_unit(self, entity_id: str, unit_id: str, confidence: float) -> None:
        link_entity_unit(self._conn, entity_id, unit_id, confidence)

    def upsert_relation(self, relation: Relation) -> None:
        upsert_relation(self._conn, relation)

    def put_clip_vectors(self, rows: Sequence[tuple[str, str, npt.NDArray[np.float32]]]) -> None:
        self._conn.executemany(
            "INSERT OR REPLACE INTO clip_vectors(unit_id, model, vector) VALUES (?, ?, ?)",
            [(unit_id, model, np.asarray(v, dtype=np.float32).tobytes()) for unit_id, model, v in rows])
