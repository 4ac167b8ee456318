"""docs/mcp-clients.md's configs work: each starts ``omnimem mcp`` as the client would and serves every tool.

fastmcp's ``Client`` over ``StdioTransport`` plays the client: it starts the config's ``command`` with its
``args`` and ``env`` (on top of the environment, as the clients do) in an empty folder, lists the server's
tools and calls each one. A tool the server lists that this walk does not call fails the test.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "mcp-clients.md"
DESKTOP_STORE = "/Users/you/omnimem-data"  # the page's example path, put in a temporary folder here


def configs() -> dict[str, dict[str, Any]]:
    """The omnimem server of each JSON block of the page, by the client heading it stands under."""
    found: dict[str, dict[str, Any]] = {}
    for section in re.split(r"^## ", PAGE.read_text(), flags=re.M)[1:]:
        heading = section.splitlines()[0].strip()
        for block in re.findall(r"```json\n(.*?)```", section, re.S):
            found[heading] = json.loads(block)["mcpServers"]["omnimem"]
    return found


def test_the_page_has_a_config_for_each_client() -> None:
    assert set(configs()) == {"Claude Code", "Claude Desktop", "Cursor"}
    assert {c["command"] for c in configs().values()} == {"omnimem"}


def launch(config: dict[str, Any], folder: Path) -> StdioTransport:
    """The subprocess the client starts for ``config``, in ``folder``: what a client fills in, filled in."""
    args = [a.replace("${workspaceFolder}", str(folder)).replace(DESKTOP_STORE, str(folder / "omnimem-data"))
            for a in config["args"]]
    bin_dir = str(Path(sys.executable).parent)  # where pip put the `omnimem` command
    path = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
    command = shutil.which(config["command"], path=path)
    assert command, f"{config['command']} is not on PATH"
    env = {**os.environ, "PATH": path, **config.get("env", {})}
    return StdioTransport(command=command, args=args, env=env, cwd=str(folder))


async def walk(transport: StdioTransport) -> dict[str, Any]:
    """List the tools and call every one; returns what each answered."""
    async with Client(transport) as client:
        listed = {t.name for t in await client.list_tools()}

        async def call(tool: str, **arguments: Any) -> Any:
            result = await client.call_tool(tool, arguments, raise_on_error=False)
            assert not result.is_error, f"{tool}: {result.content[0].text}"
            called.add(tool)
            return result.structured_content

        called: set[str] = set()
        out: dict[str, Any] = {}
        unit = (await call("add", text="Kim's flight to Oslo leaves at 7:40", time="2024-09-02T08:00",
                           user_id="kim"))["id"]
        turns = [{"speaker": "kim", "text": "I asked for a window seat.", "time": "2024-09-02T08:05"}]
        seat = (await call("add_dialogue", turns=turns, user_id="kim"))["results"][0]["id"]
        out["search"] = await call("search", query="when does the flight leave", user_id="kim")
        out["other user"] = await call("search", query="when does the flight leave", user_id="lee")
        out["recent"] = await call("recent", user_id="kim")
        out["ask"] = await call("ask", question="When does Kim's flight leave?", user_id="kim")
        out["get"] = await call("get", unit_id=unit)
        out["update"] = await call("update", unit_id=unit, text="Kim's flight to Oslo leaves at 8:10",
                                   reason="moved", user_id="kim")
        out["history"] = await call("history", unit_id=unit)
        out["delete"] = await call("delete", unit_id=seat, user_id="kim")
        if "entities" in listed:  # a store with the knowledge graph on
            out["entities"] = await call("entities", user_id="kim")
            out["neighbors"] = await call("neighbors", name="Kim", user_id="kim")
        out["forget"] = await call("forget", user_id="kim")
        assert called == listed, f"tools the walk does not call: {sorted(listed - called)}"
        out["unit"] = unit
        return out


@pytest.mark.slow
@pytest.mark.parametrize("client", ["Claude Code", "Claude Desktop", "Cursor"])
def test_the_config_starts_a_server_whose_every_tool_works(client: str, tmp_path: Path) -> None:
    folder = tmp_path / "empty"
    folder.mkdir()
    out = asyncio.run(walk(launch(configs()[client], folder)))

    unit = out["unit"]
    assert out["search"]["hits"][0]["id"] == unit and "7:40" in out["search"]["context"]
    assert out["other user"]["hits"] == []
    assert out["recent"]["total"] == 2 and out["get"]["summary"] == "Kim's flight to Oslo leaves at 7:40"
    assert unit in [e["id"] for e in out["ask"]["evidence"]]
    assert out["update"]["accepted"] and [e["action"] for e in out["history"]["events"]][:1] == ["add"]
    assert out["delete"]["deleted"] and out["forget"]["forgotten"] >= 1
    stores = [p.parent for p in folder.rglob("omnimem.db")]  # --init made the store where the config says
    assert stores == [folder / ("omnimem-data" if client == "Claude Desktop" else "mem")]
