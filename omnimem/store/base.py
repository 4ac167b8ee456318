"""The contract every storage backend implements (SQLite now, PostgreSQL later).

Batch-first: every mutation takes many units and is one transaction. Retrieval
logic (fusion, pyramid) lives above the store; a store only keeps and finds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from omnimem.mau import MAU, Modality, Scope
from omnimem.store.audit import AuditEvent, AuditRecord


@dataclass(frozen=True, slots=True)
class StoreMeta:
    """What produced the data: checked on every open."""

    schema_version: int
    embedder: str
    dim: int


class Store(Protocol):
    """Hot tier (units, embeddings, metadata) plus the cold tier for raw content."""

    read_only: bool
    last_write_seq: int  # the change counter after this process's last write

    def meta(self) -> StoreMeta | None: ...

    def init_meta(self, embedder: str, dim: int) -> StoreMeta: ...

    def insert(
        self,
        units: Sequence[MAU],
        raw: Mapping[str, bytes],
        extra: Callable[[Any], None] | None = None,
        *,
        event: AuditEvent | None = None,
        supersedes: Mapping[str, Sequence[str]] | None = None,
    ) -> list[tuple[int, MAU]]:
        """Store units (and their raw content) atomically; returns (row id, unit with links).

        ``extra`` runs inside the same transaction with the backend's connection
        (derived rows such as the knowledge graph commit or roll back with the units);
        ``event`` is logged and ``supersedes`` (new id -> old ids) applied in it too.
        """
        ...

    def get(self, ids: Sequence[str]) -> list[MAU]: ...

    def get_with_rids(self, ids: Sequence[str]) -> list[tuple[int, MAU]]: ...

    def get_rows(self, rids: Sequence[int]) -> dict[int, MAU]: ...

    def find_hashes(self, hashes: Sequence[str]) -> dict[str, str]: ...

    def recent(self, scope: Scope, limit: int) -> list[tuple[str, str]]: ...

    def recent_metadata(self, scope: Scope, modality: Modality, limit: int) -> list[tuple[str, dict[str, Any]]]: ...

    def rids_in_scope(
        self, scope: Scope, *, include_superseded: bool = False, as_of: datetime | None = None
    ) -> npt.NDArray[np.int64] | None: ...

    def ids_in_scope(self, scope: Scope) -> list[str]: ...

    def delete(
        self, ids: Sequence[str], *, event: AuditEvent | None = None, tombstone: bool = True,
        forgotten: Scope | None = None,
    ) -> list[tuple[int, str]]:
        """Remove units; what they superseded is reconnected to a surviving successor or made current
        again (logged). ``forgotten``: a whole user/agent scope went, so its tombstone key goes too."""
        ...

    def predecessors(self, ids: Sequence[str]) -> list[str]: ...

    def supersede(self, pairs: Mapping[str, Sequence[str]], event: AuditEvent) -> None: ...

    def log(self, event: AuditEvent) -> None: ...

    def events(
        self, *, unit_id: str | None = None, scope: Scope | None = None, limit: int | None = None
    ) -> list[AuditRecord]: ...

    def tombstoned(self, items: Sequence[tuple[Scope, str]]) -> dict[str, str]:
        """(scope, content hash) pairs that were deleted: hash -> deleted unit id."""
        ...

    def tombstone_owner(self, unit_id: str) -> Scope | None: ...

    def forgotten_since(self, scope: Scope) -> datetime | None: ...

    def vectors(self, batch: int = 10_000) -> Iterator[tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]]: ...

    def recent_lines(self, scope: Scope, limit: int) -> list[tuple[str | None, str]]: ...

    def embed_rows(self) -> Iterator[tuple[int, Scope, str | None, str, str, str | None]]:
        """(row id, scope, speaker, summary, modality, event time) of every unit, in insertion order."""
        ...

    def index_rows(self) -> Iterator[tuple[int, str | None, str]]:
        """(row id, speaker, summary) of every unit, for rebuilding text indexes."""
        ...

    def read_raw(self, ref: str) -> bytes: ...

    def add_stats(self, counts: Mapping[str, float]) -> None: ...

    def filter_stats(self) -> dict[str, float]: ...

    def seq(self) -> int: ...

    def stats(self) -> dict[str, Any]: ...

    def replace_vectors(
        self, rids: Sequence[int], vectors: Sequence[npt.NDArray[np.float32]], embedder: str, dim: int,
        event: AuditEvent,
    ) -> None: ...

    def clip_vectors(self, model: str) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32] | None]: ...

    def scrub(self) -> bool: ...

    def close(self) -> None: ...
