"""The verb table: one row per public ``Memory`` verb, naming each surface that carries it.

A verb reaches callers through up to five mirrors: the facade, the engine contract
(:class:`omnimem.contract.Engine`, which both engines implement), an HTTP
route, an MCP tool and a CLI command. Each row says which route (method,
path, role), which tool and which command carry the verb, or why a surface leaves
it out (an :class:`Excluded` with its reason). ``tests/architecture/test_surfaces.py``
checks every surface against this table: a verb without a row, a row whose route,
tool or command is missing or calls another verb, and a route, tool or command no
row or :data:`OTHER_ROUTES` / :data:`OTHER_COMMANDS` entry accounts for all fail.

The table is data only (strings): the shells stand above the engine and are checked
against it, not registered from it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Excluded:
    """A surface that deliberately does not carry a verb, and why."""

    reason: str


@dataclass(frozen=True, slots=True)
class Route:
    """An HTTP route: method, path (as the app declares it) and the least role that may call it."""

    method: str
    path: str
    role: str  # "reader", "writer" or "admin" (server/auth.py)


@dataclass(frozen=True, slots=True)
class Verb:
    """One facade verb and its surfaces."""

    name: str  # the Memory method
    route: Route | Excluded
    tool: str | Excluded  # the MCP tool's name
    command: str | Excluded  # the CLI command, a group's as "graph show"
    local_only: bool = False  # exists only in this process: a LocalMemory method, not an Engine one
    composed: bool = False  # built on other verbs in Memory itself, for every engine: not an Engine method


UPLOAD = Excluded("MCP tools take JSON arguments, not file uploads")
ADMIN_CLI = Excluded("not a CLI command: the CLI runs it inside the commands that need it")
NO_TOOL = Excluded("not an agent tool: an operator's verb (CLI and HTTP)")
IN_PROCESS = Excluded("works on this process's own engine; a server keeps its own")
FAN_OUT = Excluded("a client-side fan-out of one-query calls on a thread pool")

VERBS: tuple[Verb, ...] = (
    Verb("add", Route("POST", "/v1/units", "writer"), "add", "add"),
    Verb("put", Route("POST", "/v1/put", "writer"),
         Excluded("not an agent tool: a framework store's write (LangGraph, CrewAI, OpenAI Agents); agents add"),
         Excluded("a framework store's write; the CLI writes with add and ingest")),
    Verb("update", Route("PATCH", "/v1/units/{unit_id}", "writer"), "update", "update"),
    Verb("add_dialogue", Route("POST", "/v1/dialogues", "writer"), "add_dialogue", "ingest"),
    Verb("add_image", Route("POST", "/v1/images", "writer"), UPLOAD, "add-image"),
    Verb("add_audio", Route("POST", "/v1/audio", "writer"), UPLOAD, "add-audio"),
    Verb("add_video", Route("POST", "/v1/videos", "writer"), UPLOAD, "add-video"),
    Verb("delete", Route("DELETE", "/v1/units/{unit_id}", "writer"), "delete", "delete"),
    Verb("set_trust", Route("POST", "/v1/units/{unit_id}/trust", "admin"), NO_TOOL, "trust"),
    Verb("forget", Route("POST", "/v1/forget", "admin"), "forget", "forget"),
    Verb("preview_forget", Route("POST", "/v1/forget", "admin"),
         Excluded("not an agent tool: the preview serves the console's confirmation"),
         Excluded("omnimem forget removes; the console previews over HTTP")),
    Verb("units", Route("GET", "/v1/units", "reader"), "recent", "list"),
    Verb("count_units", Route("GET", "/v1/units", "reader"), Excluded("the recent tool reports the total with its page"),
         "list"),
    Verb("get", Route("GET", "/v1/units/{unit_id}", "reader"), "get", "get"),
    Verb("raw", Route("GET", "/v1/units/{unit_id}/raw", "reader"),
         Excluded("served as the MCP resource omnimem://units/{id}/raw, not as a tool"),
         Excluded("omnimem get prints the unit; raw bytes are not terminal output")),
    Verb("full_text", Route("GET", "/v1/units/{unit_id}", "reader"), "get",
         Excluded("omnimem get prints the unit as stored (its summary and metadata)")),
    Verb("search", Route("POST", "/v1/search", "reader"), "search", "search"),
    Verb("ask", Route("POST", "/v1/ask", "reader"), "ask", "ask"),
    Verb("history", Route("GET", "/v1/units/{unit_id}/history", "reader"), "history", "history"),
    Verb("log", Route("GET", "/v1/log", "reader"), NO_TOOL, "log"),
    Verb("export", Route("GET", "/v1/export", "reader"), NO_TOOL, "export"),
    Verb("import_records", Route("POST", "/v1/import", "writer"), NO_TOOL, "import"),
    Verb("import_mem0", Excluded("the caller's Memory turns it into a dump and sends POST /v1/import"), NO_TOOL,
         "import", composed=True),
    Verb("entities", Route("GET", "/v1/entities", "reader"), "entities", Excluded("the CLI shows one entity by name: graph show")),
    Verb("entity_details", Route("GET", "/v1/entities/{name}", "reader"),
         Excluded("the entities and neighbors tools carry what an agent needs"), "graph show"),
    Verb("neighbors", Route("GET", "/v1/entities/{name}/neighbors", "reader"), "neighbors",
         Excluded("graph show prints an entity's relations")),
    Verb("export_graph", IN_PROCESS, NO_TOOL, "graph export", local_only=True),
    Verb("reembed", IN_PROCESS, NO_TOOL, "reembed", local_only=True),
    Verb("stats", Route("GET", "/v1/stats", "reader"), NO_TOOL, "stats"),
    Verb("flush", Route("POST", "/v1/flush", "reader"), NO_TOOL, ADMIN_CLI),
    Verb("close", Excluded("a client closes its own connections"), Excluded("the MCP server owns its Memory"),
         Excluded("every command closes the store it opened")),
    Verb("search_many", FAN_OUT, FAN_OUT, FAN_OUT, composed=True),
    Verb("ask_many", FAN_OUT, FAN_OUT, FAN_OUT, composed=True),
)

# Routes that carry no facade verb.
OTHER_ROUTES: dict[tuple[str, str], str] = {
    ("POST", "/v1/session"): "console login: a session cookie for an API key",
    ("GET", "/v1/session"): "who the session or key is",
    ("DELETE", "/v1/session"): "console logout",
    ("GET", "/healthz"): "liveness and read-only state, no auth",
    ("GET", "/readyz"): "readiness: the embedding model has answered, no auth",
    ("GET", "/metrics"): "Prometheus metrics",
}

# CLI commands that carry no facade verb.
OTHER_COMMANDS: dict[str, str] = {
    "demo": "ingests the sample conversation and searches it",
    "bench": "the benchmarks of a source checkout",
    "serve": "runs the HTTP server",
    "mcp": "runs the MCP server on stdio",
    "hook": "a coding agent's hook: recall before a prompt, capture a session (search and add_dialogue)",
    "worker": "runs enrichment workers",
    "queue": "shows the enrichment queue",
    "migrate": "brings a PostgreSQL database to this schema",
    "pg-load": "copies a store into PostgreSQL",
    "pg-start": "starts (or reuses) a local PostgreSQL + pgvector for trying and prints its URL",
    "pg-stop": "stops that local PostgreSQL",
    "keys create": "API keys live in the server wing",
    "keys list": "API keys live in the server wing",
    "keys revoke": "API keys live in the server wing",
}
