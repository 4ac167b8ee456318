"""The contracts every storage backend implements (SQLite and PostgreSQL).

Small Protocols, each a backend can run on its own terms:

- :class:`UnitStore`: units with their metadata, the meta table, the audit
  log, tombstones and the cold tier (raw bytes). Batch-first: every
  mutation takes many units and is one transaction. It includes
  :class:`KeyStore`, the server's API keys and console sessions, which the
  server is handed on its own (``create_app(keys=)``).
- :class:`GraphRows`: the knowledge graph's and CLIP's rows, written through
  typed methods inside the transaction of their units (``insert(derived=)``)
  and read under the store's lock (``graph_rows()``). No connection crosses.
- :class:`CandidateSearch`: dense k-nearest-neighbour and BM25-like text
  search, filtered by scope, supersession and ``as_of`` inside the backend.
  The embedded backend runs FAISS and bm25s in the process
  (:mod:`omnimem.index.search`); a SQL backend would run SQL.

Retrieval logic (fusion, neighbours, graph expansion, the pyramid) lives
above these contracts; a backend only keeps and finds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from omnimem.results import Entity, Relation
from omnimem.mau import MAU, Modality, Scope
from omnimem.store.audit import AuditEvent
from omnimem.results import AuditRecord
from omnimem.store.keys import ApiKey, ApiSession
from omnimem.store.jobs import Job, JobState, NewJob

Vector = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class StoreMeta:
    """What produced the data: checked on every open."""

    schema_version: int
    embedder: str
    dim: int
    roles: str = "none"  # the embedder's role scheme (omnimem.embed.base.role_scheme); stores from before: none
    language: str = "en"  # what BM25 tokenises and stems by (omnimem.text.tokenize_in); stores from before: en

    @classmethod
    def recorded(cls, rows: Mapping[str, str]) -> StoreMeta | None:
        """The meta a store's ``meta`` table (key -> value) records; None before an embedder is recorded."""
        if "embedder" not in rows:
            return None
        return cls(int(rows["schema_version"]), rows["embedder"], int(rows["dim"]),
                   rows.get("embedder_roles", "none"), rows.get("language", "en"))


@dataclass(frozen=True, slots=True)
class SearchFilter:
    """Which units a search may return: in ``scope``, current (or ``include_superseded``), as held at ``as_of``,
    at least ``min_trust`` trusted (None: any trust)."""

    scope: Scope
    include_superseded: bool = False
    as_of: datetime | None = None
    min_trust: str | None = None


class GraphRows(Protocol):
    """Rows of the knowledge graph and of CLIP vectors (see :mod:`omnimem.graph`)."""

    def entities(self, *, user_id: str | None = None, agent_id: str | None = None,
                 ids: Sequence[str] | None = None) -> list[Entity]:
        """Entities matching the filter (``None`` means any value), ordered by id."""
        ...

    def owned_entities(self, user_id: str | None, agent_id: str | None) -> list[Entity]:
        """Entities of exactly this user and agent (``None`` matches only ``None``)."""
        ...

    def find_by_alias(self, name: str, *, user_id: str | None, agent_id: str | None) -> list[str]: ...

    def neighbors(self, entity_id: str) -> list[tuple[str, float]]: ...

    def entity_units(self, entity_id: str, limit: int | None = None) -> list[tuple[str, float]]:
        """(unit id, confidence) of the units attesting an entity, strongest first."""
        ...

    def relations(self, entity_id: str | None = None) -> list[tuple[str, str, str, float]]:
        """(source, target, label, confidence) of every relation, or of those touching ``entity_id``."""
        ...

    def unit_links(self) -> list[tuple[str, str]]:
        """Every (entity id, unit id) evidence link."""
        ...

    def upsert_entity(self, entity: Entity) -> None: ...

    def link_entity_unit(self, entity_id: str, unit_id: str, confidence: float) -> None: ...

    def upsert_relation(self, relation: Relation) -> None: ...

    def put_clip_vectors(self, rows: Sequence[tuple[str, str, Vector]]) -> None:
        """(unit id, CLIP model name, image vector) rows."""
        ...


RowWriter = Callable[[GraphRows], None]  # writes derived rows inside the transaction of their units


class GraphSource(Protocol):
    def graph_rows(self) -> AbstractContextManager[GraphRows]:
        """The graph rows, under the store's lock (reads between writes)."""
        ...


class KeyStore(Protocol):
    """API keys and console sessions of a server (hashed; see omnimem.store.keys): what the server's
    authentication needs, handed to :func:`omnimem.server.app.create_app` on its own."""

    def put_key(self, key: ApiKey) -> None:
        """Store a new key (its hash, never the secret)."""
        ...

    def find_key(self, key_id: str) -> ApiKey | None: ...

    def list_keys(self) -> list[ApiKey]:
        """Every key, revoked ones too, oldest first."""
        ...

    def revoke_key(self, key_id: str) -> bool:
        """Revoke a key and end its sessions; whether an active key was found."""
        ...

    def put_session(self, session: ApiSession) -> None:
        """Store a console login (expired ones may be dropped on the way)."""
        ...

    def find_session(self, token_hash: str) -> ApiSession | None: ...

    def drop_session(self, token_hash: str) -> None: ...


class UnitStore(GraphSource, KeyStore, Protocol):
    """Hot tier (units, embeddings, metadata), audit log, tombstones, and the cold tier for raw content."""

    read_only: bool
    last_write_seq: int  # the change counter after this process's last write

    def meta(self) -> StoreMeta | None: ...

    def init_meta(self, embedder: str, dim: int, *, roles: str = "none", language: str = "en") -> StoreMeta: ...

    def seq(self) -> int:
        """The change counter: moves on every write, by any process."""
        ...

    def insert(
        self,
        units: Sequence[MAU],
        raw: Mapping[str, bytes],
        *,
        derived: Sequence[RowWriter] = (),
        event: AuditEvent | None = None,
        supersedes: Mapping[str, Sequence[str]] | None = None,
        jobs: Sequence[NewJob] = (),
    ) -> list[tuple[int, MAU]]:
        """Store units (and their raw content) atomically; returns (row id, unit with links).

        ``derived`` writers (graph and CLIP rows) run inside the same
        transaction through :class:`GraphRows`; ``event`` is logged,
        ``supersedes`` (new id -> old ids) applied and ``jobs`` (their
        enrichment) enqueued in it too.
        """
        ...

    def get(self, ids: Sequence[str]) -> list[MAU]: ...

    def get_with_rids(self, ids: Sequence[str]) -> list[tuple[int, MAU]]: ...

    def get_rows(self, rids: Sequence[int]) -> dict[int, MAU]: ...

    def find_hashes(self, hashes: Sequence[str]) -> dict[str, str]: ...

    def recent(self, scope: Scope, limit: int) -> list[tuple[str, str]]: ...

    def recent_lines(self, scope: Scope, limit: int) -> list[tuple[str | None, str]]:
        """(speaker, summary) of the last ``limit`` units of the scope, oldest first."""
        ...

    def recent_metadata(self, scope: Scope, modality: Modality, limit: int) -> list[tuple[str, dict[str, Any]]]: ...

    def ids_in_scope(self, scope: Scope) -> list[str]: ...

    def delete(
        self, ids: Sequence[str], *, event: AuditEvent | None = None, tombstone: bool = True,
        forgotten: Scope | None = None,
    ) -> list[tuple[int, str]]:
        """Remove units and their graph and CLIP rows; what they superseded is reconnected to a surviving
        successor or made current again (logged). ``forgotten``: a whole user/agent scope went, so its
        tombstone key goes too."""
        ...

    def predecessors(self, ids: Sequence[str]) -> list[str]: ...

    def supersede(self, pairs: Mapping[str, Sequence[str]], event: AuditEvent) -> None: ...

    def log(self, event: AuditEvent) -> None: ...

    def set_trust(self, ids: Sequence[str], trust: str, event: AuditEvent) -> int:
        """Give these units ``trust`` (an admin's change), logging ``event``, in one transaction; how many changed."""
        ...

    def events(
        self, *, unit_id: str | None = None, scope: Scope | None = None, limit: int | None = None
    ) -> list[AuditRecord]: ...

    def tombstoned(self, items: Sequence[tuple[Scope, str]]) -> dict[str, str]:
        """(scope, content hash) pairs that were deleted: hash -> deleted unit id."""
        ...

    def tombstone_owner(self, unit_id: str) -> Scope | None: ...

    def past_owners(self, unit_ids: Sequence[str]) -> dict[str, set[tuple[str | None, str | None]]]:
        """(user, agent) pairs the tombstones and the audit log name for each id (only ids with a past)."""
        ...

    def forgotten_since(self, scope: Scope) -> datetime | None: ...

    def embed_rows(self) -> Iterator[tuple[int, Scope, str | None, str, str, str | None]]:
        """(row id, scope, speaker, summary, modality, event time) of every unit, in insertion order."""
        ...

    def replace_vectors(self, rids: Sequence[int], vectors: Sequence[Vector], embedder: str, dim: int,
                        event: AuditEvent, roles: str = "none") -> None:
        """Swap every unit's embedding and the recorded embedder (and its role scheme) in one transaction."""
        ...

    def read_raw(self, ref: str) -> bytes: ...

    def add_stats(self, counts: Mapping[str, float]) -> None: ...

    def filter_stats(self) -> dict[str, float]: ...

    def stats(self) -> dict[str, Any]: ...

    def scrub(self) -> bool:
        """Make deleted bytes unreadable (free pages, write-ahead log); whether it completed."""
        ...

    # -- the job queue (see :mod:`omnimem.store.jobs` for the states) ----------
    def enqueue(self, jobs: Sequence[NewJob]) -> None:
        """Add jobs in their own transaction; a job whose key is already queued is not added again."""
        ...

    def claim(self, worker: str, lease_s: float, limit: int = 1, kinds: Sequence[str] | None = None) -> list[Job]:
        """Lease up to ``limit`` runnable jobs to ``worker`` for ``lease_s`` seconds, oldest first.

        Runnable: ``pending`` with ``run_after`` passed, or ``running`` with an
        expired lease (its worker died). One transaction marks them
        ``running`` and adds one to ``attempts``; concurrent claims never
        return the same job (PostgreSQL: ``FOR UPDATE SKIP LOCKED``).
        """
        ...

    def complete(self, job_id: int, worker: str, *, derived: Sequence[RowWriter] = (),
                 requires: Sequence[str] = ()) -> bool:
        """Remove a job ``worker`` holds, writing ``derived`` rows in the same transaction; every unit in
        ``requires`` must still exist and be current (else NotFoundError, nothing changed). False
        (nothing written) when its lease was lost to another worker."""
        ...

    def fail(self, job_id: int, worker: str, error: str, *, retry_at: float | None) -> bool:
        """A failed attempt: ``pending`` again at ``retry_at`` (epoch seconds), or ``failed`` (dead letter,
        kept with ``error``) when ``retry_at`` is None. False when ``worker`` no longer holds the job."""
        ...

    def jobs(self, state: JobState | None = None, limit: int | None = None) -> list[Job]:
        """Queued jobs, all or in one state, oldest first."""
        ...

    def retry(self, ids: Sequence[int] | None = None) -> int:
        """Failed jobs (these ids, or all) back to ``pending``, runnable now, attempts reset; how many."""
        ...

    def drop(self, ids: Sequence[int]) -> int:
        """Remove these failed jobs; how many."""
        ...

    def queue_depth(self, kinds: Sequence[str] | None = None) -> dict[str, int]:
        """Jobs (of these kinds, or all) per state: ``{"pending": n, "running": n, "failed": n}``."""
        ...

    def close(self) -> None: ...


class Candidates(Protocol):
    """One search's view of the units a :class:`SearchFilter` admits."""

    together: bool  # whether a search should ask for its dense and text lists at once (each waits on a server)

    def dense(self, vector: Vector, k: int) -> list[tuple[int, float]]:
        """(row id, cosine similarity) of the ``k`` nearest admitted units."""
        ...

    def text(self, query: str, k: int) -> list[tuple[int, float]]:
        """(row id, BM25-like score) of the ``k`` best admitted units."""
        ...

    def images(self, vector: Vector, model: str, k: int) -> list[tuple[int, float]]:
        """(row id, similarity) of the ``k`` admitted images nearest a CLIP text vector of ``model``."""
        ...

    def admitted(self, rids: Sequence[int]) -> set[int]:
        """Which of these rows (found another way: neighbours, the graph) pass the filter."""
        ...


class CandidateSearch(Protocol):
    """Search over the units, filtered inside the backend; in step with the units it indexes."""

    def within(self, where: SearchFilter) -> Candidates: ...

    def sync(self) -> None:
        """Catch up with writes (of this or another process) before searching."""
        ...

    def added(self, rows: Sequence[tuple[int, MAU]], vectors: Any, write_seq: int, writes: int = 1) -> None:
        """Index units this process just stored in its last ``writes`` writes (``write_seq``: the counter the
        last of them produced; together they moved it by ``writes``)."""
        ...

    def removed(self, rids: Sequence[int], write_seq: int) -> None:
        """Drop units this process just deleted."""
        ...

    def save(self) -> None:
        """Persist what the backend keeps outside the unit store (index files); never forgotten content."""
        ...

    def sizes(self) -> dict[str, int]: ...


Store = UnitStore  # what an engine holds: a backend's unit store (its search is a CandidateSearch over it)
