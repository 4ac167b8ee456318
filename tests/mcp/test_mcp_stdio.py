"""stdio: fastmcp's Client starts a real ``omnimem mcp --store DIR`` subprocess and talks to it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import connect
from fastmcp.client.transports import StdioTransport

from omnimem import Memory

ROOT = Path(__file__).resolve().parents[2]


def environment() -> dict[str, str]:
    """This test run's environment (its OMNIMEM_CONFIG included), importing this checkout, offline."""
    return {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def omnimem(*args: str) -> list[str]:
    return [sys.executable, "-m", "omnimem.cli", *args]


def test_an_agent_uses_the_store_over_stdio(tmp_path: Path) -> None:
    store = tmp_path / "agent-store"
    with Memory(store, embedder="fake"):  # `omnimem mcp` serves a store, it does not create one
        pass
    command = omnimem("mcp", "--store", str(store))
    transport = StdioTransport(command=command[0], args=command[1:], env=environment(), cwd=str(tmp_path))
    with connect(transport) as agent:
        assert "add" in agent.tools()
        unit = agent.call("add", text="Kim's flight to Oslo leaves at 7:40", time="2024-09-02", user_id="kim")["id"]
        hits = agent.call("search", query="when does the flight leave", user_id="kim")["hits"]
        assert hits[0]["id"] == unit
        assert agent.fail("get", unit_id="nope") == {"error": "NotFoundError", "message": "no unit with id 'nope'"}
        actor = agent.call("history", unit_id=unit)["events"][0]["actor"]

    with Memory(store) as memory:  # the subprocess has exited: what it stored is on disk
        assert memory.get(unit).summary == "Kim's flight to Oslo leaves at 7:40"
        assert memory.history(unit)[0].actor == actor and actor.startswith("local")


def test_a_bad_store_is_one_line_and_a_non_zero_exit(tmp_path: Path) -> None:
    not_a_folder = tmp_path / "file.txt"
    not_a_folder.write_text("hello")
    done = subprocess.run(omnimem("mcp", "--store", str(not_a_folder)), env=environment(), capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode != 0 and done.stdout == ""
    assert done.stderr.startswith("error: ") and len(done.stderr.strip().splitlines()) == 1

    both = subprocess.run(omnimem("mcp", "--store", str(tmp_path), "--url", "postgresql://localhost/x"),
                          env=environment(), capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert both.returncode == 2 and both.stderr == "error: pass either --store or --url, not both\n"
