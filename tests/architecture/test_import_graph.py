"""The package's import graph has no cycle.

Every ``import`` statement of every module under ``omnimem/`` counts: at
module level, inside functions, and under ``if TYPE_CHECKING`` alike, so a
layer can never lean on one above it, not even lazily or for types.
"""

from __future__ import annotations

import ast
from pathlib import Path

import omnimem

ROOT = Path(omnimem.__file__).parent


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(tree: ast.AST, here: str, is_package: bool, known: set[str]) -> set[str]:
    """The omnimem modules a module's import statements name (``from a import b`` names ``a.b`` if it is one)."""
    package = here if is_package else here.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        for name in names:
            while name and name not in known:  # "omnimem.store.sqlite.SQLiteStore" -> the module
                name = name.rpartition(".")[0]
            if name and name != here:
                found.add(name)
    return found


def import_graph() -> dict[str, set[str]]:
    files = {module_name(p): p for p in ROOT.rglob("*.py")}
    known = set(files)
    return {name: imported(ast.parse(path.read_text(encoding="utf-8")), name, path.name == "__init__.py", known)
            for name, path in files.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a path of module names, or None (iterative depth-first search)."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    for start in sorted(graph):
        if state.get(start):
            continue
        path: list[str] = [start]
        todo = [iter(sorted(graph[start]))]
        state[start] = 1
        while todo:
            nxt = next(todo[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                todo.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                todo.append(iter(sorted(graph[nxt])))
    return None


def test_a_package_importing_its_own_submodule_counts_as_an_edge() -> None:
    graph = {"a": {"a.b"}, "a.b": {"a"}}
    assert find_cycle(graph) == ["a", "a.b", "a"]


def test_the_omnimem_import_graph_has_no_cycle() -> None:
    graph = import_graph()
    assert "omnimem.memory" in graph and "omnimem.store.sqlite" in graph["omnimem.memory"] | {"omnimem.store.sqlite"}
    cycles = []
    while (cycle := find_cycle(graph)) is not None:
        cycles.append(" -> ".join(cycle))
        graph[cycle[-2]].discard(cycle[-1])  # break it to report the next one too
    assert not cycles, "import cycles:\n" + "\n".join(cycles)
