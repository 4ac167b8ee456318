"""An MCP server for agents: memory tools over stdio or streamable HTTP (needs the ``mcp`` extra: fastmcp).

- :func:`create_mcp` (``omnimem.mcp.server``): the fastmcp server over one ``Memory``;
- :class:`Caller` (``omnimem.mcp.caller``): who calls, with a role and an optional bound scope;
- ``omnimem mcp --store DIR`` (``omnimem.cli.mcp``): the same server on stdio.

``Caller`` imports without fastmcp; ``create_mcp`` needs it and says which
extra to install when it is missing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from omnimem.errors import missing_extra
from omnimem.mcp.caller import ROLES, Caller

if TYPE_CHECKING:
    from omnimem.mcp.server import create_mcp


def __getattr__(name: str) -> Any:
    if name != "create_mcp":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        importlib.import_module("fastmcp")
    except ImportError:
        raise missing_extra("fastmcp", "mcp") from None
    return importlib.import_module("omnimem.mcp.server").create_mcp


__all__ = ["ROLES", "Caller", "create_mcp"]
