"""The fast loop (``pytest -m fast``) still covers every facade verb on the embedded engine.

``tests/fast_subset.py`` lists its files. Here each listed file must exist (a renamed
file would shrink the loop silently), and every verb of the verb table must be called
(``x.verb(...)``) by a test in those files, so a new verb tested only in a slow wing
fails until the fast loop calls it too.
"""

from __future__ import annotations

import ast

from omnimem.engine.verbs import VERBS
from tests.fast_subset import EMBEDDED, FAST_FILES, TESTS, is_fast


def called_attributes(source: str) -> set[str]:
    return {node.func.attr for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)}


def test_every_listed_file_exists() -> None:
    missing = sorted(name for name in FAST_FILES if not (TESTS / name).is_file())
    assert missing == []


def test_the_fast_files_call_every_facade_verb() -> None:
    called: set[str] = set()
    for name in FAST_FILES:
        called |= called_attributes((TESTS / name).read_text(encoding="utf-8"))
    uncalled = sorted(verb.name for verb in VERBS if verb.name not in called)
    assert uncalled == [], f"verbs no fast test calls: {uncalled} (add a test or a file to tests/fast_subset.py)"


def test_only_embedded_runs_of_a_listed_file_are_fast() -> None:
    listed = TESTS / "core" / "test_memory.py"
    assert all(is_fast(listed, {"engine": engine}, slow=False) for engine in ("memory", "path"))
    assert not is_fast(listed, {"engine": "postgresql"}, slow=False)
    assert not is_fast(listed, {"engine": "http"}, slow=False)
    assert not is_fast(listed, {}, slow=True)
    assert not is_fast(TESTS / "postgres" / "test_pg_bulk.py", {}, slow=False)
    assert {"memory", "path"} <= EMBEDDED
