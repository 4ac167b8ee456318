"""CrewAI's memory kept in omnimem (the ``[crewai]`` extra): ``OmnimemStorage``, a CrewAI ``StorageBackend``.

CrewAI 1.x has one memory, ``crewai.Memory``, over a pluggable storage backend
(``crewai.memory.storage.backend.StorageBackend``: save, search by vector, delete,
update, list and count by scope path). ``Memory(storage=OmnimemStorage(memory,
user_id=...), embedder=omnimem_embedder(memory))`` keeps a crew's or agent's
memories in omnimem:

- each CrewAI ``MemoryRecord`` is one omnimem text unit of the storage's
  ``user_id`` / ``agent_id``: its content is the unit's text (so omnimem's own
  search, HTTP API and MCP tools find what the crew learnt), the record itself
  (scope path, categories, importance, metadata, times, source, private) and its
  embedding round-trip through the unit's metadata;
- CrewAI's searches are by vector (its ``Memory`` embeds the query): they are exact
  cosine similarity over the records of the storage's scope, filtered by scope
  path, categories and metadata as CrewAI's own LanceDB storage filters;
- an update stores a new version that supersedes the old (history kept); deletes
  and resets remove units with no residue; nothing outside the storage's exact
  omnimem scope is read, changed or removed.

``omnimem_embedder(memory)`` gives CrewAI omnimem's embedder (local, no API key).
The storage writes with :meth:`omnimem.Memory.put`, so it works on any
``Memory``, a remote ``Memory(url="http://...")`` too (the embedder needs one
in this process). ``min_trust=`` keeps a search to units at least that
trusted. ``docs/crewai.md``.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timezone
from typing import Any

import numpy as np

from omnimem.errors import ConfigError, InvalidInputError, StoreError, missing_extra

try:
    from crewai.memory.types import MemoryRecord, ScopeInfo
except ImportError:
    raise missing_extra("crewai", "crewai") from None

from omnimem.contract import MAX_PUT
from omnimem.contract.checks import clean_id, floor, make_scope
from omnimem.mau import MAU, trust_rank
from omnimem.integrations import writing_as
from omnimem.memory import LocalMemory, Memory

META = "crewai"  # the metadata key: {"record": MemoryRecord as JSON (no embedding), "embedding": [...]}
PAGE = 1000


class OmnimemStorage:
    """CrewAI's ``StorageBackend`` protocol over an omnimem :class:`~omnimem.Memory`, for one user (and agent)."""

    def __init__(self, memory: Any, *, user_id: str, agent_id: str | None = None,
                 min_trust: str | None = None) -> None:
        if not isinstance(memory, Memory):
            raise ConfigError(f"OmnimemStorage needs an omnimem Memory, got {type(memory).__name__}")
        if user_id is None:
            raise InvalidInputError("OmnimemStorage needs a user_id: whose memory it is")
        self.memory: Any = memory
        self.user_id: str = clean_id(user_id, "user_id") or ""
        self.agent_id = clean_id(agent_id, "agent_id")
        self.min_trust = floor(min_trust)  # searches see only units at least this trusted (None: all)
        self._lock = threading.Lock()  # an update reads, then writes

    # -- writes -------------------------------------------------------------------------------------
    def save(self, records: list[MemoryRecord]) -> None:
        """Store new records (their ``id`` is CrewAI's; saving an id again stores a new version)."""
        checked = _records(records)
        with self._lock:
            current = {r.id: u for u, r in self._stored()}
            self._write([(r, current.get(r.id)) for r in checked])

    def update(self, record: MemoryRecord) -> None:
        """Replace the record with the same id (the old version stays in omnimem's history)."""
        self.save([record])

    def delete(self, scope_prefix: str | None = None, categories: list[str] | None = None,
               record_ids: list[str] | None = None, older_than: datetime | None = None,
               metadata_filter: dict[str, Any] | None = None) -> int:
        """Remove the records matching every given criterion; returns how many. No criteria: none."""
        if scope_prefix is None and categories is None and record_ids is None and older_than is None \
                and metadata_filter is None:
            return 0
        cutoff = None if older_than is None else _utc(older_than)
        with self._lock:
            doomed = [u.id for u, r in self._stored(scope_prefix)
                      if _matches(r, categories, metadata_filter)
                      and (record_ids is None or r.id in record_ids)
                      and (cutoff is None or _utc(r.created_at) < cutoff)]
            return self._forget(doomed, "crewai memory delete")

    def reset(self, scope_prefix: str | None = None) -> None:
        """Remove every record under ``scope_prefix`` (all of this storage's records when None)."""
        with self._lock:
            self._forget([u.id for u, _ in self._stored(scope_prefix)], "crewai memory reset")

    # -- reads --------------------------------------------------------------------------------------
    def search(self, query_embedding: list[float], scope_prefix: str | None = None,
               categories: list[str] | None = None, metadata_filter: dict[str, Any] | None = None,
               limit: int = 10, min_score: float = 0.0) -> list[tuple[MemoryRecord, float]]:
        """The records most similar to ``query_embedding`` (cosine), best first, at least ``min_score``."""
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidInputError(f"limit must be a whole number >= 1, got {limit!r}")
        query = np.asarray(query_embedding, dtype=np.float32)
        if query.ndim != 1 or not query.size or not np.isfinite(query).all():
            raise InvalidInputError("query_embedding must be a non-empty list of finite numbers")
        scored: list[tuple[float, int, MemoryRecord]] = []
        for order, (unit, record) in enumerate(self._stored(scope_prefix)):
            if self.min_trust is not None and trust_rank(unit.trust) < trust_rank(self.min_trust):
                continue
            vector = unit.metadata[META].get("embedding")
            if vector is None or len(vector) != query.size or not _matches(record, categories, metadata_filter):
                continue
            score = _cosine(query, np.asarray(vector, dtype=np.float32))
            if score >= min_score:
                scored.append((score, order, record))
        scored.sort(key=lambda s: (-s[0], s[1]))  # ties: the order the records were stored in
        return [(record, score) for score, _, record in scored[:limit]]

    def get_record(self, record_id: str) -> MemoryRecord | None:
        """The current version of a record, or None."""
        return next((r for _, r in self._stored() if r.id == record_id), None)

    def list_records(self, scope_prefix: str | None = None, limit: int = 200, offset: int = 0) -> list[MemoryRecord]:
        """Records under ``scope_prefix``, newest first."""
        found = sorted((r for _, r in self._stored(scope_prefix)), key=lambda r: _utc(r.created_at), reverse=True)
        return found[offset:offset + limit]

    def get_scope_info(self, scope: str) -> ScopeInfo:
        records = [r for _, r in self._stored(scope)]
        times = [r.created_at for r in records]
        return ScopeInfo(path=scope, record_count=len(records),
                         categories=sorted({c for r in records for c in r.categories}),
                         oldest_record=min(times, default=None), newest_record=max(times, default=None),
                         child_scopes=self.list_scopes(scope))

    def list_scopes(self, parent: str = "/") -> list[str]:
        """The immediate child scope paths under ``parent`` (as CrewAI's LanceDB storage lists them)."""
        base = parent.rstrip("/")
        prefix = f"{base}/"
        children = set()
        for _, record in self._stored(base or None):
            if record.scope.startswith(prefix) and record.scope != (base or "/"):
                first = record.scope[len(prefix):].split("/", 1)[0]
                if first:
                    children.add(prefix + first)
        return sorted(children)

    def list_categories(self, scope_prefix: str | None = None) -> dict[str, int]:
        return dict(Counter(c for _, r in self._stored(scope_prefix) for c in r.categories))

    def count(self, scope_prefix: str | None = None) -> int:
        return sum(1 for _ in self._stored(scope_prefix))

    # -- async, on a worker thread ------------------------------------------------------------------
    async def asave(self, records: list[MemoryRecord]) -> None:
        await asyncio.to_thread(self.save, records)

    async def asearch(self, query_embedding: list[float], scope_prefix: str | None = None,
                      categories: list[str] | None = None, metadata_filter: dict[str, Any] | None = None,
                      limit: int = 10, min_score: float = 0.0) -> list[tuple[MemoryRecord, float]]:
        return await asyncio.to_thread(self.search, query_embedding, scope_prefix, categories, metadata_filter,
                                       limit, min_score)

    async def adelete(self, scope_prefix: str | None = None, categories: list[str] | None = None,
                      record_ids: list[str] | None = None, older_than: datetime | None = None,
                      metadata_filter: dict[str, Any] | None = None) -> int:
        return await asyncio.to_thread(self.delete, scope_prefix, categories, record_ids, older_than,
                                       metadata_filter)

    # -- omnimem ------------------------------------------------------------------------------------
    def _scope(self) -> dict[str, Any]:
        return {"user_id": self.user_id, "agent_id": self.agent_id}

    def _stored(self, scope_prefix: str | None = None) -> Iterator[tuple[MAU, MemoryRecord]]:
        """This storage's current record units under ``scope_prefix`` (a path prefix, as CrewAI's LanceDB)."""
        prefix = None if scope_prefix is None or not scope_prefix.strip("/") else scope_prefix.rstrip("/")
        owner, offset = make_scope(self.user_id, self.agent_id, None), 0
        while True:
            page = self.memory.units(limit=PAGE, offset=offset, **self._scope())
            for unit in page:
                held = unit.metadata.get(META)
                if (unit.scope.user_id, unit.scope.agent_id) != (owner.user_id, owner.agent_id) \
                        or not isinstance(held, dict):
                    continue
                record = MemoryRecord.model_validate(held["record"])
                record.embedding = held.get("embedding")
                if prefix is None or record.scope.startswith(prefix):
                    yield unit, record
            if len(page) < PAGE:
                return
            offset += PAGE

    def _write(self, records: Sequence[tuple[MemoryRecord, MAU | None]]) -> None:
        pending, now = [], datetime.now(timezone.utc)
        for record, old in records:
            held = {"record": record.model_dump(mode="json"),
                    "embedding": None if record.embedding is None else [float(x) for x in record.embedding]}
            # a new version is timed now (CrewAI's created_at stays in the record): its content hash is new
            when = _utc(record.created_at) if old is None else now
            pending.append({"text": record.content, "time": when, "source_id": record.id, "metadata": {META: held},
                            "supersedes": [old.id] if old is not None else []})
        if not pending:
            return
        results = []
        with writing_as("crewai"):  # redact_pii: the facade redacts the content and the record, stored and read back
            for start in range(0, len(pending), MAX_PUT):
                results += self.memory.put(pending[start:start + MAX_PUT], allow_forgotten=True,
                                           **self._scope())
        for (record, _), result in zip(records, results):
            if not result.accepted:
                raise StoreError(f"omnimem did not keep the CrewAI record {record.id!r}: {result.reason}")

    def _forget(self, unit_ids: list[str], reason: str) -> int:
        if not unit_ids:
            return 0
        self.memory.forget(unit_ids=unit_ids, reason=reason, **self._scope())
        return len(unit_ids)


def omnimem_embedder(memory: Any) -> Callable[[list[str]], list[list[float]]]:
    """CrewAI's ``embedder=`` callable: the texts embedded by the memory's own embedder (local, offline)."""
    if not isinstance(memory, LocalMemory):
        raise ConfigError("omnimem_embedder needs a Memory in this process: a remote Memory's embedder is the "
                          "server's")
    model = memory.embedder

    def embed(texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in row] for row in model.embed(list(texts))]

    return embed


def _records(records: object) -> list[MemoryRecord]:
    if isinstance(records, MemoryRecord) or not isinstance(records, Sequence):
        raise InvalidInputError("save takes a list of MemoryRecord")
    for position, record in enumerate(records):
        if not isinstance(record, MemoryRecord):
            raise InvalidInputError(f"record {position} must be a MemoryRecord, got {type(record).__name__}")
    return list(records)


def _matches(record: MemoryRecord, categories: list[str] | None, metadata_filter: dict[str, Any] | None) -> bool:
    """CrewAI's filters: any of the categories, every metadata key equal."""
    if categories and not any(c in record.categories for c in categories):
        return False
    return not metadata_filter or all(record.metadata.get(k) == v for k, v in metadata_filter.items())


def _cosine(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> float:
    norm = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(np.dot(a, b)) / norm if norm else 0.0


def _utc(when: datetime) -> datetime:
    """CrewAI's times are naive UTC (``datetime.utcnow``); omnimem's are aware."""
    return when.replace(tzinfo=timezone.utc) if when.tzinfo is None else when
