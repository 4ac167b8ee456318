"""Every block of README.md and docs/*.md that starts a server runs as printed, in an empty folder.

A new user copies these first (issue 36): ``omnimem serve``, ``omnimem mcp`` and an MCP client's
``mcpServers`` config. The test reads whatever blocks the pages hold today:

- a ``bash``/``sh``/``shell`` block with a line that starts ``omnimem serve`` or ``omnimem mcp``: its lines up
  to that one run verbatim (``bash -e``) in an empty temporary folder, the server on loopback. When the
  server line is backgrounded (``&``), the block's later lines run too if they only call ``curl``,
  ``omnimem`` or loop and sleep (anything else, such as ``npm ci`` in a checkout, is left to its own test).
  The test then waits for the port's ``/readyz`` and stops the server. An ``omnimem mcp`` line is started
  by a real fastmcp client over stdio instead, which adds a memory and finds it again;
- a ``json`` block with ``mcpServers``: each server's ``command`` and ``args`` (and ``env``) are started the
  same way by the fastmcp client, an absolute path in ``args`` re-rooted under the temporary folder (the
  only substitution: a page's ``/home/me/...`` is not created on the test machine).

A block is a synopsis, not a script, when it is fenced as ``text`` (``[--port N]`` optional parts,
``a | b`` alternatives); a server line reaching a remote database (``--url postgresql://...@db``) is not run.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow  # each server loads the default embedding model

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SERVER_LINE = re.compile(r"^\s*(?:[A-Z_]+=\S+\s+)*omnimem\s+(serve|mcp)\b")
FOLLOW_ON = re.compile(r"^\s*(?:[A-Z_]+=\$?\S*\s*)*(curl|omnimem|until|do|done|sleep|echo)\b")


@dataclass(frozen=True)
class ServerBlock:
    page: str
    kind: str  # "serve", "mcp" (a shell line) or "config" (an mcpServers entry)
    script: str  # the shell lines run verbatim; for "mcp"/"config", the ones before the server starts
    command: list[str]  # "mcp"/"config": what the MCP client starts
    env: dict[str, str]
    port: int = 8420

    line: str = ""  # the line (or config entry) that starts the server, as the page prints it

    def __str__(self) -> str:
        return f"{self.page}: {self.line}"


def _blocks(text: str, languages: tuple[str, ...]) -> list[str]:
    return [body for lang, body in re.findall(r"```(\w*)\n(.*?)```", text, re.S) if lang in languages]


def server_blocks() -> list[ServerBlock]:
    found: list[ServerBlock] = []
    for page in PAGES:
        name = page.relative_to(ROOT).as_posix()
        text = page.read_text(encoding="utf-8")
        for body in _blocks(text, ("bash", "sh", "shell")):
            lines = body.replace("\\\n", " ").splitlines()  # a command continued with "\\" is one line
            for i, line in enumerate(lines):
                match = SERVER_LINE.match(line)
                if match is None or re.search(r"--url\s+postgres\S*@", line) or "--help" in line:
                    continue
                before = lines[:i]
                if match.group(1) == "mcp":
                    command = shlex.split(line.split(" #")[0].rstrip(" &"))
                    found.append(ServerBlock(name, "mcp", "\n".join(before), command, {},
                                             line=line.split(" #")[0].strip()))
                else:
                    after = lines[i + 1:]
                    runs_on = line.split(" #")[0].rstrip().endswith("&") and all(
                        FOLLOW_ON.match(rest) or not rest.strip() or rest.lstrip().startswith("#") for rest in after)
                    port = re.search(r"--port\s+(\d+)", line)
                    found.append(ServerBlock(name, "serve", "\n".join(before + [line] + (after if runs_on else [])),
                                             [], {}, int(port.group(1)) if port else 8420,
                                             line=line.split(" #")[0].strip()))
                break  # one server per block: its later lines talk to it
        for body in _blocks(text, ("json", "jsonc")):
            try:
                config = json.loads(body)
            except ValueError:
                continue
            for server in (config.get("mcpServers") or {}).values() if isinstance(config, dict) else []:
                command = [server["command"], *server.get("args", [])]
                found.append(ServerBlock(name, "config", "", command, dict(server.get("env", {})),
                                         line=" ".join(command)))
    return found


BLOCKS = server_blocks()


def environment() -> dict[str, str]:
    """This run's environment with this checkout's ``omnimem`` first on PATH (as after ``pip install``)."""
    bin_dir = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""), "PYTHONPATH": str(ROOT),
            "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def test_the_pages_start_servers_the_test_runs() -> None:
    kinds = {b.kind for b in BLOCKS}
    assert {"serve", "config"} <= kinds, [str(b) for b in BLOCKS]  # docs/serving.md, docs/mcp.md at least


def _ready(port: int, shell: subprocess.Popen[str], deadline: float) -> bool:
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as answer:
                if answer.status == 200:
                    return True
        except OSError:
            pass
        if shell.poll() is not None and shell.returncode != 0:
            return False
        time.sleep(0.5)
    return False


def _port_free(port: int) -> bool:
    import socket

    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: TIME_WAIT is free
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.kind == "serve"], ids=str)
def test_a_serve_block_runs_verbatim_in_an_empty_folder(block: ServerBlock, tmp_path: Path) -> None:
    if not _port_free(block.port):
        pytest.skip(f"port {block.port}, which the page names, is taken on this machine")
    shell = subprocess.Popen(["bash", "-e", "-c", block.script], cwd=tmp_path, env=environment(), text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        assert _ready(block.port, shell, time.monotonic() + 240), f"{block}: the server never got ready"
        shell.wait(timeout=240)  # the block's own lines, after the server started (or the foreground server)
    except subprocess.TimeoutExpired:
        pass  # a foreground `omnimem serve`: it serves until stopped
    finally:
        os.killpg(shell.pid, signal.SIGINT)  # the server the block started (in the block's process group)
        out, err = shell.communicate(timeout=60)
    if shell.returncode not in (0, -signal.SIGINT, 130):  # 130 / SIGINT: stopped by us, as Ctrl-C would
        pytest.fail(f"{block} failed with {shell.returncode}:\n{err[-2000:]}")
    assert '"error"' not in out, out  # the block's curl calls got answers, not error bodies
    assert not [line for line in err.splitlines() if line.startswith("error:")], err


async def _talk(command: list[str], env: dict[str, str], cwd: Path) -> tuple[set[str], str, list[Any]]:
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    transport = StdioTransport(command=command[0], args=command[1:], env=env, cwd=str(cwd))
    async with Client(transport) as client:
        tools = {tool.name for tool in await client.list_tools()}
        added = await client.call_tool("add", {"text": "Kim's flight to Oslo leaves at 7:40", "user_id": "kim"})
        found = await client.call_tool("search", {"query": "when does the flight leave", "user_id": "kim"})
    return tools, str(added.structured_content["id"]), list(found.structured_content["hits"])  # type: ignore[index]


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.kind in ("mcp", "config")], ids=str)
def test_an_mcp_server_of_the_pages_starts_in_an_empty_folder(block: ServerBlock, tmp_path: Path) -> None:
    if block.script.strip():
        subprocess.run(["bash", "-e", "-c", block.script], cwd=tmp_path, env=environment(), check=True,
                       timeout=240, capture_output=True)
    command = [str(tmp_path) + arg if block.kind == "config" and arg.startswith("/") else arg
               for arg in block.command]
    if block.kind == "mcp":  # a shell line: run by the shell, as typed
        command = ["bash", "-c", " ".join(shlex.quote(a) for a in command)]
    tools, added, hits = asyncio.run(_talk(command, {**environment(), **block.env}, tmp_path))
    assert {"add", "search", "recent", "forget"} <= tools
    assert [h["id"] for h in hits][:1] == [added]
