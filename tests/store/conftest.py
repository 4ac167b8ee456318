"""One fixture, ``backend``: a unit store and its candidate search, for every storage backend.

The contract tests in this folder use only the Protocols of
:mod:`omnimem.store.base`; a new backend (PostgreSQL) joins by adding a
parameter to ``BACKENDS`` and a branch to :func:`open_backend`; PostgreSQL runs on a
fresh database of the session's server.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from omnimem.index.manager import IndexSet
from omnimem.store.base import CandidateSearch, UnitStore
from omnimem.index.search import EmbeddedSearch
from omnimem.store.sqlite.store import SQLiteStore

BACKENDS = ["sqlite-memory", "sqlite-file", "postgresql"]
DIM = 4


@dataclass
class Backend:
    store: UnitStore
    search: CandidateSearch


def open_backend(kind: str, folder: Path, url: str | None = None) -> Backend:
    if kind not in BACKENDS:
        raise ValueError(kind)
    if kind == "postgresql":
        from omnimem.store.postgres.search import PgSearch
        from omnimem.store.postgres.store import PostgresStore

        assert url is not None
        pg = PostgresStore(url)
        pg.init_meta("fake", DIM)
        return Backend(pg, PgSearch(pg))
    path = folder / "store" if kind == "sqlite-file" else None
    store = SQLiteStore(path)
    store.init_meta("fake", DIM)
    return Backend(store, EmbeddedSearch(store, IndexSet(store, DIM, path / "index" if path else None)))


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    url = request.getfixturevalue("pg_url") if request.param == "postgresql" else None
    opened = open_backend(request.param, tmp_path, url)
    yield opened
    opened.store.close()
