"""One write path: only the engine's writer (``omnimem/engine/writer/``) writes to the store or takes the locks.

Read from the source (AST), every call counts wherever it sits: a work room
(ingest, enrichment, lifecycle, governance, listing, the engine's wiring)
that called ``store.insert`` or took ``state.write_lock`` would open a
second door beside the writer's, with its own lock order. The writer's state
(``omnimem/engine/state.py``) is changed by the writer alone.
"""

from __future__ import annotations

import ast
from pathlib import Path

import omnimem

ENGINE = Path(omnimem.__file__).parent / "engine"
WRITER = ENGINE / "writer"
# The unit store's writes (store/base.py): units, supersession, the audit log, vectors, counters, scrubbing,
# the job queue's transitions. Key and session writes belong to the server's key store, not to the engine.
WRITE_METHODS = {"insert", "delete", "supersede", "log", "replace_vectors", "add_stats", "scrub", "enqueue",
                 "claim", "complete", "fail", "retry", "drop", "put_clip_vectors", "init_meta"}
# Where the engine's locks may be taken: the writer, and the retriever's stages: the short catch-up with other
# processes (search.py) and the store reads of the units a ranking adds (graph units, neighbours, CLIP images).
LOCK_OWNERS = {WRITER, *(ENGINE / "retrieval" / name for name in ("search.py", "candidates.py", "packing.py"))}
# The engine opens its store once, before any writer exists: recording the embedder of a new store.
OPENING = {(ENGINE / "local.py", "init_meta")}
# The one field of the writer's state set outside the writer: the engine hands it the enricher's wake-up once.
STATE_SET_AT_OPEN = {(ENGINE / "local.py", "wake")}


def sources() -> list[Path]:
    return sorted(ENGINE.rglob("*.py"))


def within(path: Path, owners: set[Path]) -> bool:
    return any(path == owner or owner in path.parents for owner in owners)


def store_writes(path: Path) -> list[tuple[int, str]]:
    """Calls ``<...>.store.<write>(...)`` or ``store.<write>(...)`` in one module: (line, method)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in WRITE_METHODS:
            target = node.func.value
            named = target.attr if isinstance(target, ast.Attribute) else target.id if isinstance(target, ast.Name) \
                else None
            if named in {"store", "_store"}:
                found.append((node.lineno, node.func.attr))
    return found


def lock_uses(path: Path) -> list[int]:
    """Lines that touch ``<...>.lock`` or ``<...>.write_lock`` (the fields of ``WriterState``) in one module."""
    return [node.lineno for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Attribute) and node.attr in {"lock", "write_lock"}]


def test_the_checks_see_a_write_and_a_lock() -> None:
    sample = ENGINE / "writer" / "core.py"
    assert {"insert", "delete", "supersede", "claim"} <= {m for _, m in store_writes(sample)}
    assert lock_uses(sample)


def test_only_the_writer_calls_the_stores_write_methods() -> None:
    outside = [f"{path.relative_to(ENGINE.parent)}:{line} store.{method}"
               for path in sources() if not within(path, {WRITER})
               for line, method in store_writes(path) if (path, method) not in OPENING]
    assert not outside, "store writes outside omnimem/engine/writer/: " + ", ".join(outside)


def test_the_work_rooms_take_no_lock() -> None:
    outside = [f"{path.relative_to(ENGINE.parent)}:{line}" for path in sources() if not within(path, LOCK_OWNERS)
               for line in lock_uses(path)]
    assert not outside, "the engine's locks taken outside the writer and the retriever: " + ", ".join(outside)


def test_the_rooms_named_are_checked() -> None:
    rooms = {ENGINE / "lifecycle.py", ENGINE / "governance.py", ENGINE / "local.py", ENGINE / "listing.py",
             ENGINE / "enrich" / "jobs.py", ENGINE / "enrich" / "worker.py", ENGINE / "ingest" / "pipeline.py",
             ENGINE / "media_adds.py"}
    assert rooms <= set(sources())
    assert not any(within(room, LOCK_OWNERS) for room in rooms)


def state_changes(path: Path) -> list[tuple[int, str]]:
    """Assignments to a field of ``state`` / ``<...>.state`` (the writer's state) in one module: (line, field)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
            if isinstance(node, ast.AugAssign | ast.AnnAssign) else []
        for target in targets:
            if isinstance(target, ast.Attribute):
                owner = target.value
                named = owner.attr if isinstance(owner, ast.Attribute) else owner.id if isinstance(owner, ast.Name) \
                    else None
                if named in {"state", "_state"}:
                    found.append((target.lineno, target.attr))
    return found


def test_only_the_writer_changes_its_state() -> None:
    assert {"closed", "embedder", "search"} <= {f for _, f in state_changes(WRITER / "core.py")}
    outside = [f"{path.relative_to(ENGINE.parent)}:{line} state.{name}"
               for path in sources() if not within(path, {WRITER})
               for line, name in state_changes(path) if (path, name) not in STATE_SET_AT_OPEN]
    assert not outside, "the writer's state changed outside omnimem/engine/writer/: " + ", ".join(outside)
