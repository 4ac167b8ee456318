"""docs/architecture.md is true: its floors and faces are the import test's, and what it names exists.

The page is the map a newcomer reads first; these tests make a move, a new wing or
a renamed file fail until the map is redrawn.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from test_import_graph import ENGINE_FLOORS, FACES, FLOORS, ROOT, module_name

REPO = ROOT.parent
DOC = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")


def section(marker: str) -> list[str]:
    """The lines after an ``<!-- marker: ... -->`` comment, up to the next blank line."""
    lines = DOC.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"<!-- {marker}:"))
    block = []
    for line in lines[start + 1:]:
        if not line.strip():
            break
        block.append(line)
    return block


def wing_name(cell: str) -> str:
    """``cli/`` -> ``cli``; ``memory.py`` -> ``memory``."""
    return cell.removesuffix("/").removesuffix(".py")


def test_the_floor_table_is_the_order_the_import_test_enforces() -> None:
    rows = [line.split("|")[1:-1] for line in section("floors")[2:]]  # after the header and its rule
    assert [int(number) for number, _, _ in rows] == list(range(1, len(rows) + 1))
    drawn = [{wing_name(w) for w in re.findall(r"`([^`]+)`", wings)} for _, wings, _ in rows]
    assert drawn == FLOORS


def test_the_engine_floor_table_is_engine_floors_and_names_every_engine_module() -> None:
    rows = [line.split("|")[1:-1] for line in section("engine floors")[2:]]
    assert [int(number) for number, _, _ in rows] == list(range(1, len(rows) + 1))
    drawn = [{wing_name(w) for w in re.findall(r"`([^`]+)`", wings)} for _, wings, _ in rows]
    assert drawn == ENGINE_FLOORS
    named = [{token.rpartition("/")[2] for token in re.findall(r"`([^`]+)`", wings + held)} for _, wings, held in rows]
    floor_of = {w: i for i, floor in enumerate(ENGINE_FLOORS) for w in floor}
    engine = ROOT / "engine"
    missing = sorted(path.relative_to(engine).as_posix() for path in engine.rglob("*.py") if path.name != "__init__.py"
                     and path.name not in named[floor_of[wing_name(path.relative_to(engine).parts[0])]])
    assert not missing, f"engine modules the engine floor table does not name in their wing's row: {missing}"


def test_the_faces_listed_are_the_faces_the_import_test_keeps_inert() -> None:
    listed = {name.split(":")[0] for line in section("faces") for name in re.findall(r"`(omnimem[\w.:]*)`", line)}
    assert listed == FACES


def test_every_file_or_folder_the_page_names_exists() -> None:
    tracked = [p.relative_to(REPO).as_posix() for top in ("omnimem", "tests", "docs", "benchmarks", "examples", ".ci")
               for p in (REPO / top).rglob("*")] + [top for top in ("omnimem", "tests", "docs", "benchmarks", ".ci")]
    named = {token for token in re.findall(r"`([\w./-]+)`", DOC) if re.search(r"/|\.(py|js|md)$", token)}
    missing = sorted(t for t in named
                     if not any(f == t.rstrip("/") or f.endswith("/" + t.rstrip("/")) for f in tracked))
    assert not missing, f"named in docs/architecture.md but not in the repository: {missing}"


PARTS = {"omnimem.engine.deps", "omnimem.engine.state"}  # the engine's dependencies and the writer's state


def test_parts_stay_inside_the_engine() -> None:
    outside = {}
    for path in ROOT.rglob("*.py"):
        here = module_name(path)
        if here.startswith("omnimem.engine"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module in PARTS:
                outside[here] = {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module == "omnimem.engine" and any(
                    f"omnimem.engine.{a.name}" in PARTS for a in node.names):
                outside[here] = {alias.name for alias in node.names}
            elif isinstance(node, ast.Import) and any(a.name in PARTS for a in node.names):
                outside[here] = {"*"}
    assert not outside, f"only the engine imports its parts (acting_as is omnimem.contract.caller's): {outside}"
