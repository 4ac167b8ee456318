"""Without the ``postgres`` extra, a PostgreSQL URL is an actionable error naming it (nothing else breaks)."""

from __future__ import annotations

import sys

import pytest

from omnimem import Memory
from omnimem.errors import MissingDependencyError


def test_a_postgres_url_without_the_extra_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("psycopg", "psycopg_pool", "pgvector", "pgvector.psycopg"):
        monkeypatch.setitem(sys.modules, name, None)  # as if not installed
    with pytest.raises(MissingDependencyError, match=r"pip install 'omnimem\[postgres\]'"):
        Memory(url="postgresql://user@localhost:5432/mem", embedder="fake")
    with Memory(embedder="fake") as m:  # the embedded engine does not need it
        assert m.add("still works", user_id="u").accepted
