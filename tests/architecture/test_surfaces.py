"""Every surface carries the verbs the verb table says, and docs/http-api.md lists the app's routes.

``omnimem/engine/verbs.py`` has one row per public ``Memory`` verb. Here each mirror is
read from the real thing (the facade classes ``Memory`` and ``LocalMemory``, the
``Engine`` Protocol with its two engines, the FastAPI app and its routers, the fastmcp
server, the typer app) and compared with the table, so a verb that is added to one
surface and forgotten on another, or a row naming a route, tool or command that does
not exist or calls another verb, fails.
"""

from __future__ import annotations

import ast
import asyncio
import importlib
import inspect
import pkgutil
import re
import textwrap
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
import typer

import omnimem.server.routes
from omnimem import LocalMemory, Memory, RemoteMemory
from omnimem.contract import Engine
from omnimem.engine.local import LocalEngine
from omnimem.remote.engine import RemoteEngine
from omnimem.cli.commands import app as cli_app
from omnimem.engine.verbs import OTHER_COMMANDS, OTHER_ROUTES, VERBS, Excluded, Route, Verb
from omnimem.errors import ConfigError, InvalidInputError, OmnimemError
from omnimem.mcp import create_mcp
from omnimem.server.app import create_app

DOCS = Path(__file__).resolve().parents[2] / "docs" / "http-api.md"


def public_methods(cls: type) -> set[str]:
    """A class's own public methods (properties, static and class methods are not verbs)."""
    return {name for name, member in vars(cls).items() if inspect.isfunction(member) and not name.startswith("_")}


def facade_verbs() -> set[str]:
    """The verbs of every Memory (``Memory``) and those only an in-process one has (``LocalMemory``)."""
    return public_methods(Memory) | public_methods(LocalMemory)


def engine_verbs() -> set[str]:
    """The methods of the Engine Protocol."""
    return {name for name in dir(Engine) if not name.startswith("_") and inspect.isfunction(getattr(Engine, name))}


def is_memory(node: ast.expr) -> bool:
    """``memory`` / ``mem`` (the shells' names for their Memory), or a route's ``memory_of(request)``."""
    if isinstance(node, ast.Call):
        return isinstance(node.func, ast.Name) and node.func.id == "memory_of"
    return isinstance(node, ast.Name) and node.id in {"memory", "mem"}


def names_verb(function: Callable[..., Any], verb: str) -> bool:
    """Whether a function's body reaches ``memory.<verb>`` (called or handed on, as to a thread pool)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    return any(isinstance(n, ast.Attribute) and n.attr == verb and is_memory(n.value) for n in ast.walk(tree))


@pytest.fixture(scope="module")
def memory() -> Iterable[Memory]:
    with Memory() as mem:
        yield mem


@pytest.fixture(scope="module")
def routes(memory: Memory) -> dict[tuple[str, str], Any]:
    """(method, path) -> the APIRoute of every router the server's routes package defines."""
    found = {}
    for info in pkgutil.iter_modules(omnimem.server.routes.__path__):
        module = importlib.import_module(f"omnimem.server.routes.{info.name}")
        for route in getattr(getattr(module, "router", None), "routes", []):
            for method in route.methods:
                found[(method, route.path)] = route
    return found


@pytest.fixture(scope="module")
def openapi(memory: Memory) -> set[tuple[str, str]]:
    paths = create_app(memory).openapi()["paths"]
    return {(method.upper(), path) for path, operations in paths.items() for method in operations}


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every tool the MCP server can list: the graph tools are listed only when the store has a graph."""
    with Memory(tmp_path_factory.mktemp("graph"), embedder="fake", graph=True) as graph_memory:
        return {tool.name: tool for tool in asyncio.run(create_mcp(graph_memory).list_tools())}


@pytest.fixture(scope="module")
def commands() -> dict[str, Any]:
    """Every leaf command of the CLI (typer's click commands), a group's as "graph show"."""
    found: dict[str, Any] = {}

    def walk(group: Any, prefix: str) -> None:
        for name, command in group.commands.items():
            full = f"{prefix} {name}".strip()
            if hasattr(command, "commands"):  # a group
                walk(command, full)
            else:
                found[full] = command

    walk(typer.main.get_command(cli_app), "")
    return found


def route_problems(table: Iterable[Verb], routes: dict[tuple[str, str], Any], openapi: set[tuple[str, str]]) -> list[str]:
    problems = []
    carried = set(OTHER_ROUTES)
    for verb in table:
        if isinstance(verb.route, Excluded):
            continue
        key = (verb.route.method, verb.route.path)
        carried.add(key)
        route = routes.get(key)
        if route is None or key not in openapi:
            problems.append(f"{verb.name}: no route {key}")
            continue
        roles = {d.call.__name__ for d in route.dependant.dependencies}
        if verb.route.role not in roles:
            problems.append(f"{verb.name}: {key} needs {sorted(roles)}, the table says {verb.route.role}")
        if not names_verb(route.endpoint, verb.name):
            problems.append(f"{verb.name}: {key} does not call memory.{verb.name}")
    problems += [f"route {key} carries no verb and is not in OTHER_ROUTES" for key in sorted(openapi - carried)]
    return problems


def tool_problems(table: Iterable[Verb], tools: dict[str, Any]) -> list[str]:
    problems = []
    named = set()
    for verb in table:
        if isinstance(verb.tool, Excluded):
            continue
        named.add(verb.tool)
        if verb.tool not in tools:
            problems.append(f"{verb.name}: no MCP tool {verb.tool!r}")
        elif not names_verb(tools[verb.tool].fn, verb.name):
            problems.append(f"{verb.name}: tool {verb.tool!r} does not call memory.{verb.name}")
    problems += [f"MCP tool {name!r} carries no verb" for name in sorted(set(tools) - named)]
    return problems


def command_problems(table: Iterable[Verb], commands: dict[str, Any]) -> list[str]:
    problems = []
    named = set(OTHER_COMMANDS)
    for verb in table:
        if isinstance(verb.command, Excluded):
            continue
        named.add(verb.command)
        command = commands.get(verb.command)
        if command is None or command.callback is None:
            problems.append(f"{verb.name}: no CLI command {verb.command!r}")
        elif not names_verb(command.callback, verb.name):
            problems.append(f"{verb.name}: omnimem {verb.command} does not call mem.{verb.name}")
    problems += [f"CLI command {name!r} carries no verb and is not in OTHER_COMMANDS"
                 for name in sorted(set(commands) - named)]
    return problems


def engine_problems(table: Iterable[Verb], engines: Iterable[type] = (LocalEngine, RemoteEngine)) -> list[str]:
    """Every verb that is neither local-only nor composed is an Engine method that each engine has with the
    Protocol's parameters and annotations; the others are not engine methods; no Engine method lacks a row."""
    problems, engines = [], list(engines)
    for verb in table:
        contract = getattr(Engine, verb.name, None)
        if verb.composed or verb.local_only:
            if contract is not None:
                problems.append(f"{verb.name}: {'composed' if verb.composed else 'local-only'}, yet an Engine method")
            continue
        if contract is None:
            problems.append(f"{verb.name}: no Engine method")
            continue
        wanted = inspect.signature(contract)
        for engine in engines:
            method = getattr(engine, verb.name, None)
            if method is None or not inspect.isfunction(method):
                problems.append(f"{verb.name}: {engine.__name__} has no method")
            elif [(p.name, p.kind, p.annotation) for p in inspect.signature(method).parameters.values()] != \
                    [(p.name, p.kind, p.annotation) for p in wanted.parameters.values()] \
                    or inspect.signature(method).return_annotation != wanted.return_annotation:
                problems.append(f"{verb.name}: {engine.__name__}{inspect.signature(method)}, Engine{wanted}")
    problems += [f"Engine method {name!r} has no row" for name in sorted(engine_verbs() - {v.name for v in table})]
    return problems


def test_every_public_memory_verb_has_one_row() -> None:
    names = [verb.name for verb in VERBS]
    assert len(names) == len(set(names))
    assert set(names) == facade_verbs()


def test_the_local_only_verbs_are_the_ones_only_a_local_memory_has() -> None:
    assert public_methods(LocalMemory) == {verb.name for verb in VERBS if verb.local_only}
    assert not public_methods(LocalMemory) & public_methods(Memory)  # LocalMemory adds, it overrides no verb


def test_every_exclusion_says_why() -> None:
    for verb in VERBS:
        for surface in (verb.route, verb.tool, verb.command):
            assert not isinstance(surface, Excluded) or surface.reason.strip(), verb.name
    assert all(reason.strip() for reason in [*OTHER_ROUTES.values(), *OTHER_COMMANDS.values()])


def test_both_engines_implement_every_engine_verb_with_the_protocols_parameters() -> None:
    assert engine_problems(VERBS) == []
    assert engine_verbs() <= {verb.name for verb in VERBS}
    assert all(isinstance(getattr(engine, "read_only"), property) for engine in (Engine, LocalEngine, RemoteEngine))


def test_a_remote_memory_is_a_memory_without_the_in_process_parts() -> None:
    remote = Memory(url="http://127.0.0.1:9")  # nothing listens there: none of this needs the server
    try:
        assert type(remote) is Memory and isinstance(remote, Memory) and isinstance(remote.engine, RemoteEngine)
        assert RemoteMemory is Memory  # the old name, kept as an alias
        assert remote.settings is None  # the server's settings apply
        for name in ("store", "indexes", "embedder", "llm", "graph", "clip", "count_tokens",
                     *(v.name for v in VERBS if v.local_only)):
            assert not hasattr(remote, name), name
        with pytest.raises(OmnimemError, match="top_k"):  # checked once, before the network
            remote.search("x", top_k=0)
        with pytest.raises(OmnimemError, match="unit_id"):
            remote.get("")
    finally:
        remote.close()
    with pytest.raises(ConfigError, match="embedder cannot be set on a remote Memory"):
        Memory(url="http://127.0.0.1:9", embedder="fake")
    with pytest.raises(InvalidInputError, match="not both"):
        Memory("./somewhere", url="http://127.0.0.1:9")


def test_an_in_process_memory_is_a_local_memory(memory: Memory) -> None:
    assert type(memory) is LocalMemory and isinstance(memory, Memory) and isinstance(memory.engine, LocalEngine)
    assert isinstance(memory.engine, Engine)


def test_every_route_is_in_the_table_with_its_role_and_calls_its_verb(routes, openapi) -> None:
    assert route_problems(VERBS, routes, openapi) == []


def test_every_mcp_tool_is_in_the_table_and_calls_its_verb(tools) -> None:
    assert tool_problems(VERBS, tools) == []


def test_every_cli_command_is_in_the_table_and_calls_its_verb(commands) -> None:
    assert command_problems(VERBS, commands) == []


def test_a_verb_added_to_the_table_without_its_surfaces_fails(routes, openapi, tools, commands) -> None:
    added = Verb("pin", Route("POST", "/v1/pins", "writer"), "pin", "pin")
    assert route_problems([*VERBS, added], routes, openapi) == ["pin: no route ('POST', '/v1/pins')"]
    assert tool_problems([*VERBS, added], tools) == ["pin: no MCP tool 'pin'"]
    assert command_problems([*VERBS, added], commands) == ["pin: no CLI command 'pin'"]
    assert engine_problems([*VERBS, added]) == ["pin: no Engine method"]
    assert engine_problems(VERBS, [type("Partial", (), {"search": LocalEngine.search})])[0] == \
        "add: Partial has no method"
    wrong = Verb("get", Route("GET", "/v1/units/{unit_id}", "admin"), "search", "history")
    assert route_problems([wrong], routes, openapi)[0] == \
        "get: ('GET', '/v1/units/{unit_id}') needs ['ScopeQuery', 'reader'], the table says admin"
    assert tool_problems([wrong], tools)[0] == "get: tool 'search' does not call memory.get"
    assert command_problems([wrong], commands)[0] == "get: omnimem history does not call mem.get"


def test_the_routes_docs_http_api_lists_are_the_apps(openapi) -> None:
    rows = re.findall(r"^\| (GET|POST|PATCH|PUT|DELETE) \| (/\S*) \|", DOCS.read_text(encoding="utf-8"), re.MULTILINE)
    same = lambda path: re.sub(r"\{[^}]*\}", "{}", path)  # noqa: E731 - {id} in the docs, {unit_id} in the app
    assert {(method, same(path)) for method, path in rows} == {(method, same(path)) for method, path in openapi}
