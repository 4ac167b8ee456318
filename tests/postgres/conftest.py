"""PostgreSQL tests need the ``postgres`` extra and ``pgserver``: skipped (with the reason) without them,
except in CI (``OMNIMEM_REQUIRE_POSTGRES=1``), where a missing one fails the run."""

from __future__ import annotations

import importlib.util
import os

_MISSING = [name for name in ("psycopg", "psycopg_pool", "pgvector", "pgserver") if importlib.util.find_spec(name) is None]
if _MISSING and os.environ.get("OMNIMEM_REQUIRE_POSTGRES") == "1":
    raise RuntimeError(f"PostgreSQL tests required (OMNIMEM_REQUIRE_POSTGRES=1) but {', '.join(_MISSING)} missing")
collect_ignore_glob = ["test_*.py"] if _MISSING else []  # the facade and contract suites report the skip reason
