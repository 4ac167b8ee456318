"""``omnimem graph show`` and ``omnimem graph export``: the knowledge graph of a store.

:mod:`.commands` calls :func:`register` with its app.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from omnimem.cli.common import errors as _errors, fail as _fail, print_json as _print_json, \
    scope_words as _scope_words, store_path as _store_path
from omnimem.cli.opening import AgentOpt, JsonOpt, StoreOpt, UserOpt, _memory, out

graph_app = typer.Typer(help="The knowledge graph (entities, relations, the units behind them).", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(graph_app, name="graph")


@graph_app.command("show")
def graph_show(
    name: Annotated[str, typer.Argument(help="Entity name or alias.")],
    store: StoreOpt = None,
    user_id: UserOpt = None,
    agent_id: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """An entity: its aliases, relations and the units that mention it."""
    with _errors(), _memory(store, existing=True, graph=True) as mem:
        details = mem.entity_details(name, user_id=user_id, agent_id=agent_id)
        graph_empty = not details and not mem.entities(user_id=user_id, agent_id=agent_id)
    if graph_empty:
        scope = f" {_scope_words(user_id, agent_id, None)}" if user_id or agent_id else ""
        _fail(f"the knowledge graph is off: no entities in {_store_path(store)}{scope}; build it with "
              "`omnimem ingest --graph` or `omnimem worker --graph`")
    if not details:
        _fail(f"no entity called {name!r}")
    if as_json:
        _print_json(details)
        return
    for d in details:
        others = [a for a in d["aliases"] if a != d["name"]]
        aliases = f" (aka {', '.join(others)})" if others else ""
        out.print(f"{d['name']}{aliases}  {d['type']}  confidence {d['confidence']:.2f}", markup=False, highlight=False)
        for r in d["relations"]:
            out.print(f"  {r['source']} -[{r['label']}]-> {r['target']}  ({r['confidence']:.2f})", markup=False,
                      highlight=False)
        out.print(f"  units: {', '.join(d['units'])}", markup=False, highlight=False)


@graph_app.command("export")
def graph_export(
    fmt: Annotated[str, typer.Option("--format", help="graphml or json.")] = "json",
    store: StoreOpt = None,
    user_id: UserOpt = None,
    agent_id: AgentOpt = None,
) -> None:
    """Write the graph (entities, relations, evidence units) to stdout."""
    if fmt not in ("graphml", "json"):
        _fail(f"unknown format {fmt!r}; use graphml or json")
    with _errors(), _memory(store, existing=True, graph=True) as mem:
        text = mem.export_graph(format=fmt, user_id=user_id, agent_id=agent_id)
    sys.stdout.write(text + "\n")
