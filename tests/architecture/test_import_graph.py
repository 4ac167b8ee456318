"""The package's import graph has no cycle, between modules or between wings, and the wings are layers.

Every ``import`` statement of every module under ``omnimem/`` counts: at
module level, inside functions, and under ``if TYPE_CHECKING`` alike, so a
layer can never lean on one above it, not even lazily or for types.

A wing is a top-level folder of ``omnimem/`` or a loose top-level module. The
wings stand on the floors of :data:`FLOORS` (top down; ``docs/architecture.md``
draws the same list) and import only wings on lower floors. Faces
(:data:`FACES`: import paths kept for users, docs and benchmarks) stand
outside the floors: they only re-export, and no omnimem module imports them.

The repository's ``benchmarks/`` package is held to the same rule of no cycle, and to its groups
(:data:`BENCH_TOP`, :func:`bench_group`): the harness (``benchmarks/harness/``) imports no group, a group
(``benchmarks/<group>/``) imports only the harness and itself. Besides import statements, a string that
names a benchmark module (a script command's module, ``importlib``, ``python -m``) and the import lines
of code run in a child process count as imports there.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import omnimem

ROOT = Path(omnimem.__file__).parent

# Top down. A wing imports only wings on floors below its own; the ground floor's modules may import
# each other (the module-level test keeps them free of cycles).
FLOORS: list[set[str]] = [
    {"cli"},
    {"server"},
    {"mcp", "remote", "integrations"},
    {"memory"},
    {"engine"},
    {"index", "graph"},
    {"store", "embed", "llm"},
    {"media"},
    {"contract"},  # the requests, the caller's context and the checks the facade, the engines and the shells share
    {"errors", "config", "mau", "tokens", "timeparse", "fusion", "text", "context", "results", "otel"},
]
GROUND = FLOORS[-1]
# The shells stand on the facade: they reach the engine only through ``Memory`` (and the contract below both).
SHELLS = {"cli", "server", "mcp", "remote", "integrations"}
# Modules that only re-export, for import paths users, docs or benchmarks name (kept for one release).
FACES = {
    "omnimem",  # the package: Memory, the errors, the value objects
    "omnimem.cli",  # the pyproject script omnimem.cli:main, the cold-start benchmark's phases
    "omnimem.remote",  # RemoteEngine
    "omnimem.store.sqlite",  # omnimem.store.sqlite.SQLiteStore
}
MAX_LOOSE_MODULES = 12  # the face's __init__, memory.py and the ground floor


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(tree: ast.AST, here: str, is_package: bool, known: set[str], strings: bool = False) -> set[str]:
    """The modules of ``known`` a module's import statements name (``from a import b`` names ``a.b`` if it is one).

    ``strings``: a string constant that is a known submodule's name counts too, and so does each import line of a
    string (code a child process runs).
    """
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
        elif strings and isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value in known and "." in node.value:  # a module, not the word "benchmarks" of a path
                names = [node.value]
            else:
                names = [name for line in node.value.splitlines() if (stmt := _import_line(line)) is not None
                         for name in imported(stmt, here, is_package, known)]
        else:
            continue
        for name in names:
            while name and name not in known:  # "omnimem.store.sqlite.store.SQLiteStore" -> the module
                name = name.rpartition(".")[0]
            if name and name != here:
                found.add(name)
    return found


def _import_line(line: str) -> ast.Module | None:
    """A line of code in a string that is an import statement, parsed (prose that starts with "import" is not)."""
    if not line.strip().startswith(("from ", "import ")):
        return None
    try:
        return ast.parse(line.strip())
    except SyntaxError:
        return None


def import_graph(root: Path = ROOT, strings: bool = False) -> dict[str, set[str]]:
    files = {module_name(p, root): p for p in root.rglob("*.py")}
    known = set(files)
    return {name: imported(ast.parse(path.read_text(encoding="utf-8")), name, path.name == "__init__.py", known,
                           strings) for name, path in files.items()}


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


def wing(module: str) -> str:
    """``omnimem.engine.ingest.pipeline`` -> ``engine``; ``omnimem.mau`` -> ``mau``."""
    return module.split(".")[1] if "." in module else module


def wing_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Which wings import which (faces left out: :func:`test_faces_only_re_export` keeps them inert)."""
    wings: dict[str, set[str]] = {}
    for name, targets in graph.items():
        if name in FACES:
            continue
        wings.setdefault(wing(name), set()).update(wing(t) for t in targets if wing(t) != wing(name))
    return wings


def strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """The groups of more than one node that reach each other (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            nxt = next(targets, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(group)
    return groups


def only_re_exports(tree: ast.Module) -> bool:
    """Only a docstring, imports and ``__all__``/``__version__``: a face runs nothing of its own."""
    for i, node in enumerate(tree.body):
        if i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) and t.id in {"__all__", "__version__"}
                                                  for t in node.targets):
            continue
        return False
    return True


def test_a_package_importing_its_own_submodule_counts_as_an_edge() -> None:
    graph = {"a": {"a.b"}, "a.b": {"a"}}
    assert find_cycle(graph) == ["a", "a.b", "a"]


def test_the_omnimem_import_graph_has_no_cycle() -> None:
    graph = import_graph()
    sqlite = "omnimem.store.sqlite.store"
    assert "omnimem.memory" in graph and sqlite in graph["omnimem.memory"] | {sqlite}
    cycles = []
    while (cycle := find_cycle(graph)) is not None:
        cycles.append(" -> ".join(cycle))
        graph[cycle[-2]].discard(cycle[-1])  # break it to report the next one too
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_a_circle_between_wings_is_found_even_when_the_modules_have_none() -> None:
    modules = {"omnimem.a.low": {"omnimem.b.top"}, "omnimem.b.top": set(), "omnimem.b.low": {"omnimem.a.top"},
               "omnimem.a.top": set()}
    assert find_cycle(modules) is None
    assert strongly_connected(wing_graph(modules)) == [{"a", "b"}]


def test_no_circle_between_wings() -> None:
    groups = strongly_connected(wing_graph(import_graph()))
    assert not groups, "wings that import each other: " + "; ".join(", ".join(sorted(g)) for g in groups)


def test_every_wing_stands_on_one_floor() -> None:
    wings = set(wing_graph(import_graph()))
    placed = [w for floor in FLOORS for w in floor]
    assert len(placed) == len(set(placed)), "a wing on two floors"
    assert wings == set(placed), f"not on a floor: {sorted(wings - set(placed))}; gone: {sorted(set(placed) - wings)}"


def not_down(wings: dict[str, set[str]], floors: list[set[str]], ground: set[str] = set()) -> list[str]:
    """Each import of a wing on its own floor or a higher one (the ``ground`` floor's wings may import each other)."""
    floor_of = {w: i for i, floor in enumerate(floors) for w in floor}
    return sorted(f"{a} (floor {floor_of[a] + 1}) imports {b} (floor {floor_of[b] + 1})"
                  for a, targets in wings.items() for b in targets
                  if floor_of[b] <= floor_of[a] and not (a in ground and b in ground))


def test_wings_import_only_lower_floors() -> None:
    upward = not_down(wing_graph(import_graph()), FLOORS, GROUND)
    assert not upward, "imports that are not down:\n" + "\n".join(upward)


# -- engine/'s own floors -------------------------------------------------------------------------------------------

# The same rule one level in: an inner wing is a folder of omnimem/engine/ or a loose module there (the package's
# __init__ holds no code and stands outside). Top down; no floor's wings import each other.
ENGINE = "omnimem.engine"
ENGINE_FLOORS: list[set[str]] = [
    {"local"},  # LocalEngine: builds the deps, the writer's state, the writer, the retriever, the enricher; delegates
    {"enrich", "governance", "lifecycle", "media_adds"},  # the rooms that hand their writes to the writer
    {"writer", "retrieval", "listing"},  # the one writer, and the reads
    {"ingest"},  # what to write: checks, the planner, novelty, summaries, restatement, job plans, dumps, media items
    {"deps", "state", "provenance", "backends", "verbs"},  # what every room shares
]


def inner_wing(module: str, package: str = ENGINE) -> str | None:
    """``omnimem.engine.ingest.pipeline`` -> ``ingest``; the package itself, or a module outside it -> None."""
    return module[len(package) + 1:].split(".")[0] if module.startswith(package + ".") else None


def inner_wing_graph(graph: dict[str, set[str]], package: str = ENGINE) -> dict[str, set[str]]:
    """Which inner wings of ``package`` import which (imports of modules outside it left out)."""
    wings: dict[str, set[str]] = {}
    for name, targets in graph.items():
        if (here := inner_wing(name, package)) is not None:
            inner = {inner_wing(t, package) for t in targets} - {None, here}
            wings.setdefault(here, set()).update(w for w in inner if w is not None)
    return wings


def test_an_import_up_or_sideways_inside_the_engine_is_found_even_lazily() -> None:
    known = {"omnimem.engine.deps", "omnimem.engine.writer.core", "omnimem.engine.retrieval.pyramid",
             "omnimem.engine.ingest.summarise", "omnimem.store.base"}
    lazy = "import omnimem.store.base\ndef f():\n    from omnimem.engine.writer import core\n"
    sources = {"omnimem.engine.deps": lazy,
               "omnimem.engine.retrieval.pyramid": "from omnimem.engine.ingest.summarise import first_words\n"
                                                   "from omnimem.engine.writer.core import Writer\n",
               "omnimem.engine.writer.core": "from ..deps import Deps\n"}
    graph = {name: imported(ast.parse(code), name, False, known) for name, code in sources.items()}
    assert inner_wing_graph(graph) == {"deps": {"writer"}, "retrieval": {"ingest", "writer"}, "writer": {"deps"}}
    assert not_down(inner_wing_graph(graph), ENGINE_FLOORS) == ["deps (floor 5) imports writer (floor 3)",
                                                                "retrieval (floor 3) imports writer (floor 3)"]


def test_every_engine_wing_stands_on_one_engine_floor() -> None:
    wings = set(inner_wing_graph(import_graph()))
    placed = [w for floor in ENGINE_FLOORS for w in floor]
    assert len(placed) == len(set(placed)), "an engine wing on two floors"
    assert wings == set(placed), f"not on a floor: {sorted(wings - set(placed))}; gone: {sorted(set(placed) - wings)}"


def test_engine_wings_import_only_lower_engine_floors() -> None:
    upward = not_down(inner_wing_graph(import_graph()), ENGINE_FLOORS)
    assert not upward, "imports inside omnimem/engine/ that are not down:\n" + "\n".join(upward)


def engine_imports(graph: dict[str, set[str]]) -> list[str]:
    """Each import of an ``omnimem.engine`` module by a shell's module."""
    return sorted(f"{a} -> {b}" for a, targets in graph.items() if wing(a) in SHELLS and a not in FACES
                  for b in targets if wing(b) == "engine")


def test_a_shell_reaching_past_the_facade_is_found_even_lazily() -> None:
    known = {"omnimem.cli.queue", "omnimem.engine.backends", "omnimem.memory"}
    lazy = ast.parse("def f():\n    from omnimem.engine.backends import is_database_url\n    import omnimem.memory\n")
    graph = {"omnimem.cli.queue": imported(lazy, "omnimem.cli.queue", False, known), "omnimem.memory": set()}
    assert engine_imports(graph) == ["omnimem.cli.queue -> omnimem.engine.backends"]


def test_the_shells_import_nothing_of_the_engine() -> None:
    graph = import_graph()
    assert {wing(m) for m in graph} >= SHELLS
    breaches = engine_imports(graph)
    assert not breaches, "shells importing omnimem.engine (go through Memory, or omnimem.contract):\n" + \
        "\n".join(breaches)


def test_faces_only_re_export_and_nothing_imports_them() -> None:
    files = {module_name(p): p for p in ROOT.rglob("*.py")}
    assert FACES <= set(files)
    impure = [f for f in sorted(FACES) if not only_re_exports(ast.parse(files[f].read_text(encoding="utf-8")))]
    assert not impure, f"faces that do more than re-export: {impure}"
    users = sorted(f"{a} -> {b}" for a, targets in import_graph().items() for b in targets & FACES)
    assert not users, "omnimem modules importing a face (import the module it re-exports):\n" + "\n".join(users)


def test_the_top_level_holds_the_facade_and_the_ground_floor() -> None:
    loose = {module_name(p) for p in ROOT.glob("*.py")} - FACES
    assert "omnimem.memory" in loose and {wing(m) for m in loose} <= GROUND | {"memory"}  # ground folders: results/
    assert len(loose) + 1 <= MAX_LOOSE_MODULES  # + the package's own __init__


@pytest.mark.parametrize("face", sorted(FACES))
def test_every_name_a_face_exports_resolves(face: str) -> None:
    module = importlib.import_module(face)
    assert [n for n in getattr(module, "__all__", []) if not hasattr(module, n)] == []


# -- benchmarks/: the repository's benchmark package (not in the wheel) ------------------------------------------

BENCHMARKS = ROOT.parent / "benchmarks"
BENCH_TOP = {"benchmarks", "benchmarks.__main__", "benchmarks.cli"}  # the package, `python -m benchmarks`, the app
HARNESS = "harness"


def bench_group(module: str) -> str:
    """``benchmarks.retrieval.qa`` -> ``retrieval``; ``benchmarks.harness.perf`` -> ``harness``; the top -> ``""``."""
    return "" if module in BENCH_TOP else module.split(".")[1]


def group_breaches(graph: dict[str, set[str]]) -> list[str]:
    """Imports against the groups' rule: the harness imports no group, a group only the harness and itself, and
    nothing but the top imports the top."""
    breaches = []
    for name, targets in sorted(graph.items()):
        group = bench_group(name)
        if not group:
            continue
        allowed = {HARNESS} if group == HARNESS else {HARNESS, group}
        breaches += [f"{name} ({group}) imports {t}" for t in sorted(targets) if bench_group(t) not in allowed]
    return breaches


def test_the_group_rule_catches_a_lazy_import_and_a_script_module_named_by_a_string() -> None:
    known = {"benchmarks.harness.perf", "benchmarks.speed.perf", "benchmarks.retrieval.qa", "benchmarks.cli"}
    lazy = ast.parse("def f():\n    from benchmarks.speed.perf import run_sizes\n")
    named = ast.parse('SCRIPTS = {"qa": ("benchmarks.retrieval.qa", "help")}\nCHILD = """\nimport json\n'
                      'from benchmarks.cli import main\n"""\n')
    graph = {"benchmarks.harness.perf": imported(lazy, "benchmarks.harness.perf", False, known, strings=True),
             "benchmarks.speed.perf": imported(named, "benchmarks.speed.perf", False, known, strings=True)}
    assert graph == {"benchmarks.harness.perf": {"benchmarks.speed.perf"},
                     "benchmarks.speed.perf": {"benchmarks.retrieval.qa", "benchmarks.cli"}}
    assert group_breaches(graph) == ["benchmarks.harness.perf (harness) imports benchmarks.speed.perf",
                                     "benchmarks.speed.perf (speed) imports benchmarks.cli",
                                     "benchmarks.speed.perf (speed) imports benchmarks.retrieval.qa"]


def test_the_benchmarks_import_graph_has_no_cycle() -> None:
    graph = import_graph(BENCHMARKS, strings=True)
    assert "benchmarks.harness.retrieval" in graph["benchmarks.retrieval.longmemeval"]
    cycles = []
    while (cycle := find_cycle(graph)) is not None:
        cycles.append(" -> ".join(cycle))
        graph[cycle[-2]].discard(cycle[-1])
    assert not cycles, "import cycles in benchmarks/:\n" + "\n".join(cycles)


def test_every_benchmark_module_is_in_a_group_or_the_harness() -> None:
    loose = sorted(module_name(p, BENCHMARKS) for p in BENCHMARKS.glob("*.py"))
    assert set(loose) == BENCH_TOP, f"modules at the top of benchmarks/ (put them in a group): {loose}"
    groups = {bench_group(m) for m in import_graph(BENCHMARKS)} - {""}
    assert HARNESS in groups and len(groups) >= 3


def test_the_harness_imports_no_group_and_a_group_only_the_harness_and_itself() -> None:
    graph = import_graph(BENCHMARKS, strings=True)
    assert "benchmarks.media.media_bench" in graph["benchmarks.media.commands"]  # script commands count
    breaches = group_breaches(graph)
    assert not breaches, "imports across benchmark groups:\n" + "\n".join(breaches)
