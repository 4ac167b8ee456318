"""``create_mcp(memory)``: an MCP server (fastmcp) over one :class:`omnimem.Memory`.

Over stdio (``omnimem mcp --store DIR``) or in-process, with no ``authorize``,
every call is the store owner's (a local admin). Over HTTP, mount
``create_mcp(memory, authorize=...).http_app(path="/")`` at ``/mcp`` of a
Starlette or FastAPI app and run its ``lifespan`` in the outer app's (the
streamable-HTTP session manager runs in it; Starlette does not run a mounted
app's lifespan by itself): ``FastAPI(lifespan=mcp_app.lifespan)``, or ``async
with mcp_app.lifespan(app): yield`` inside a lifespan of its own. Clients
send their API key as ``Authorization: Bearer <key>`` to ``/mcp/``.

The tools are in :mod:`omnimem.mcp.tools`; the unit's raw content (an image,
an audio clip, a long text) is the resource ``omnimem://units/{id}/raw``,
returned with its own content type.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastmcp import FastMCP
from fastmcp.resources import ResourceContent, ResourceResult

from omnimem.errors import NotFoundError
from omnimem.mau import Modality
from omnimem.mcp.gate import Authorize, Gate, InvalidArguments, KeyVerifier, NumericStrings
from omnimem.mcp.results import RAW_URI
from omnimem.mcp.tools import register_tools

if TYPE_CHECKING:
    from omnimem.memory import LocalMemory

INSTRUCTIONS = """\
Long-term memory for this conversation's user. Call `search` before answering anything that may depend on what \
you were told before (preferences, facts, past events) and use its `context`; call `add` for each new fact, \
preference or event worth keeping (one self-contained statement, with its time if known), `update` to correct \
one, `delete` to remove one the user wants gone; `recent` lists the latest memories. Ids come from `search` hits, \
`recent` and `add` results. Errors are JSON \
{"error": code, "message": ...}: InvalidInputError (fix the arguments), NotFoundError (no such memory in your \
scope), ForbiddenError/ScopeError (your key may not do this), AuthError (no valid key)."""


def create_mcp(memory: LocalMemory, *, authorize: Authorize | None = None, name: str = "omnimem") -> FastMCP:
    """An MCP server whose tools call ``memory``.

    ``authorize(token)`` says who calls (a :class:`~omnimem.mcp.caller.Caller`)
    given the bearer token of an HTTP request, or ``None`` on stdio and
    in-process; it raises :class:`~omnimem.errors.AuthError` to refuse. With
    it, HTTP requests without an accepted key are refused with 401 before any
    tool runs. Without it (local use) every call is an admin acting as
    ``memory.actor``.
    """
    from omnimem.config import VERSION as __version__

    gate = Gate(authorize, memory.actor)
    mcp = FastMCP(
        name,
        instructions=INSTRUCTIONS,
        version=__version__,  # serverInfo.version: omnimem's, not fastmcp's
        auth=KeyVerifier(authorize) if authorize is not None else None,
        middleware=[InvalidArguments(), NumericStrings()],
        mask_error_details=True,  # an unexpected exception reaches the client as "Error calling tool", no details
        strict_input_validation=True,  # the schema the agent read is the one enforced (NumericStrings: "3" -> 3)
    )
    register_tools(mcp, memory, gate)

    @mcp.resource(RAW_URI, name="unit_raw", mime_type="application/octet-stream", description=(
        "The raw content of a memory (the bytes of an image or an audio clip, a long text in full), with its own "
        "content type (image/png, audio/wav, text/plain, ...). The URI comes from get or search (raw_uri). A "
        "memory with no raw content, or outside your scope, is not found. Needs the read role."))
    def unit_raw(id: str) -> ResourceResult:
        with gate.resource("read") as caller:
            data, mime = raw_content(memory, id, **caller.scope(None, None, None))
            return ResourceResult([ResourceContent(data, mime_type=mime)])

    return mcp


def raw_content(memory: LocalMemory, unit_id: str, *, user_id: str | None = None, agent_id: str | None = None,
                session_id: str | None = None) -> tuple[bytes, str]:
    """A unit's raw bytes and their content type; NotFoundError when it has none (or is outside ``scope``)."""
    unit = memory.get(unit_id, user_id=user_id, agent_id=agent_id, session_id=session_id)
    if unit.raw_ref is None:
        raise NotFoundError(f"unit {unit_id} has no raw content; its text is all there is (use get)")
    data = memory.store.read_raw(unit.raw_ref)
    if unit.modality is Modality.TEXT:
        return data, "text/plain; charset=utf-8"
    return data, str(unit.metadata.get("mime") or "application/octet-stream")
