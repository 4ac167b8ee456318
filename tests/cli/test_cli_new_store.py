"""A new user's first servers and messages (issue 36): ``--init`` creates a store, nothing else does, and the
messages of the first hour say what to do.

``serve``, ``mcp`` and ``keys create`` take ``--init``: a path holding no store is then created (one line on
stderr names it), else it is an error whose one line says to add ``--init``.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from typer.testing import Result

from omnimem import Memory, __version__

ROOT = Path(__file__).resolve().parents[2]
Run = Callable[..., Result]


def environment(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "OMNIMEM_EMBEDDER": "fake", "HF_HUB_OFFLINE": "1", **extra}


def omnimem(*args: str) -> list[str]:
    return [sys.executable, "-m", "omnimem.cli", *args]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def served(tmp_path: Path, *args: str) -> Iterator[tuple[int, subprocess.Popen[str]]]:
    """``omnimem serve ARGS --port P`` in a subprocess, until it answers /readyz; stopped afterwards."""
    port = free_port()
    server = subprocess.Popen(omnimem("serve", *args, "--port", str(port)), cwd=tmp_path, env=environment(),
                              text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2):
                    break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, server.communicate()[1]
                time.sleep(0.3)
        yield port, server
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.parametrize("args", [("serve",), ("mcp",), ("keys", "create", "--name", "me", "--role", "admin")],
                         ids=lambda a: " ".join(a[:2]))
def test_without_init_a_new_path_is_an_error_that_names_init(run: Run, tmp_path: Path, args: tuple[str, ...]) -> None:
    new = tmp_path / "mem"
    res = run(*args, "--store", new)
    assert res.exit_code == 2
    assert res.stderr == f"error: {new} holds no omnimem store (add --init to create one)\n"
    assert not new.exists()


def test_keys_create_init_makes_the_store_then_serve_uses_it(run: Run, tmp_path: Path) -> None:
    store = tmp_path / "mem"
    res = run("keys", "create", "--init", "--name", "ann-agent", "--user-id", "ann", "--role", "write",
              "--store", store)
    assert res.exit_code == 0 and res.stdout.startswith("omk_")
    assert res.stderr.splitlines()[0] == f"created a new omnimem store in {store.resolve()}"
    assert Memory.exists(store)
    again = run("keys", "create", "--init", "--name", "bob-agent", "--user-id", "bob", "--role", "read",
                "--store", store)  # --init on a store: it is opened, nothing is created
    assert again.exit_code == 0 and "created a new" not in again.stderr
    key = res.stdout.strip()
    with served(tmp_path, "--store", str(store)) as (port, _):
        request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/units", method="POST",
                                         data=json.dumps({"text": "I bought a red kayak"}).encode(),
                                         headers={"Authorization": f"Bearer {key}", "content-type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as answer:
            assert json.load(answer)["accepted"] is True


def test_serve_init_starts_on_a_new_store_and_says_where(tmp_path: Path) -> None:
    with served(tmp_path, "--init", "--store", "mem", "--no-auth") as (_, server):
        assert Memory.exists(tmp_path / "mem")
    assert f"created a new omnimem store in {tmp_path / 'mem'}" in server.stderr.read()  # type: ignore[union-attr]


def test_serve_graph_serves_the_knowledge_graph(tmp_path: Path) -> None:
    with served(tmp_path, "--init", "--store", "mem", "--no-auth", "--graph") as (port, _):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/entities", timeout=30) as answer:
            assert answer.status == 200 and json.load(answer)["entities"] == []
    graph_tab = (ROOT / "omnimem" / "server" / "console" / "static" / "graph.js").read_text()
    assert "omnimem serve --graph" in graph_tab  # what the console's Graph tab tells a web user when it is off


def test_mcp_init_keeps_stdout_for_the_protocol(tmp_path: Path) -> None:
    done = subprocess.run(omnimem("mcp", "--init", "--store", "mem"), cwd=tmp_path, env=environment(), text=True,
                          capture_output=True, timeout=120, stdin=subprocess.DEVNULL)  # no client: it ends at EOF
    assert done.stdout == ""
    assert f"created a new omnimem store in {tmp_path / 'mem'}" in done.stderr.splitlines()
    assert Memory.exists(tmp_path / "mem")


def test_a_busy_port_is_one_line_and_exit_1(run: Run, tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        res = run("serve", "--init", "--store", tmp_path / "mem", "--port", port)
    assert res.exit_code == 1
    assert res.stderr.splitlines()[-1] == (f"error: port {port} is in use (on 127.0.0.1); stop what listens there "
                                           "or pick another with --port")


def test_version_and_short_help(run: Run) -> None:
    assert run("--version").stdout == f"omnimem {__version__}\n"
    short, long = run("-h"), run("--help")
    assert short.exit_code == long.exit_code == 0 and short.stdout == long.stdout
    assert "Usage" in run("search", "-h").stdout


def test_mcp_help_names_every_tool_it_serves(run: Run, tmp_path: Path) -> None:
    import asyncio

    from fastmcp import Client

    from omnimem.mcp import create_mcp

    async def tools(memory: Memory) -> set[str]:
        async with Client(create_mcp(memory)) as client:
            return {tool.name for tool in await client.list_tools()}

    with Memory(tmp_path / "graph", embedder="fake", graph=True) as memory:
        served_tools = asyncio.run(tools(memory))
    shown = " ".join(run("mcp", "--help").stdout.split())
    assert served_tools and all(f" {name}," in shown or f" {name};" in shown or f" {name})" in shown
                                for name in served_tools), (sorted(served_tools), shown)
    assert "once that engine is installed" not in shown


def test_ingest_without_its_format_says_the_format_is_missing(run: Run, tmp_path: Path) -> None:
    res = run("ingest", "turns.jsonl", "--store", tmp_path / "mem")
    assert res.exit_code == 2
    assert res.stderr == ("error: the format is missing: omnimem ingest FORMAT FILE, FORMAT one of locomo, jsonl "
                          "(e.g. omnimem ingest jsonl turns.jsonl)\n")


def test_import_words_its_errors_as_ingest_does(run: Run, tmp_path: Path) -> None:
    missing = run("import", tmp_path / "nope.jsonl", "--store", tmp_path / "mem")
    assert missing.stderr == f"error: cannot read {tmp_path / 'nope.jsonl'}: No such file or directory\n"
    assert run("ingest", "jsonl", tmp_path / "nope.jsonl").stderr == missing.stderr
    turns = tmp_path / "turns.jsonl"
    turns.write_text(json.dumps({"text": "hello", "speaker": "Ann"}) + "\n")
    wrong = run("import", turns, "--store", tmp_path / "mem")
    assert wrong.exit_code == 2
    assert wrong.stderr.startswith(f"error: {turns} is not an omnimem export") and "ingest jsonl" in wrong.stderr


def test_stats_shows_the_stores_counts_not_an_idle_processs_writer(run: Run, tmp_path: Path) -> None:
    """``stats`` is a new process: its writer wrote nothing, so it shows the store's counts and no writer
    counters (which read 0 after any number of adds); the path is the store's."""
    store = tmp_path / "mem"
    with Memory(store, embedder="fake") as mem:
        for i in range(3):
            mem.add(f"note {i} about the garden number {i}", user_id="ann")
    shown = run("stats", "--store", store)
    lines = shown.stdout.splitlines()
    assert not any(line.startswith("writer") for line in lines)
    assert any(line.startswith(f"path: {store}") for line in lines)
    data = json.loads(run("stats", "--store", store, "--json").stdout)
    assert "writer" not in data and data["path"] == str(store)
    assert data["units"] == 3


INTERRUPTING = """
from omnimem.embed.fake import FakeEmbedder
from omnimem.contract.providers import register_provider


class InterruptedOnTheThirdBatch(FakeEmbedder):  # the user presses Ctrl-C while the third batch is embedded
    calls = 0

    def embed(self, texts):
        type(self).calls += 1
        if type(self).calls == 3:
            raise KeyboardInterrupt
        return super().embed(texts)


register_provider("embedder", "interrupted", lambda **options: InterruptedOnTheThirdBatch(**options))
"""


def test_ctrl_c_during_ingest_says_what_was_stored_and_a_rerun_resumes(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(INTERRUPTING)
    turns = tmp_path / "turns.jsonl"
    things = ["kayak", "violin", "garden", "Lisbon", "bread", "chess", "novel", "bicycle", "tomatoes", "piano",
              "Oslo", "camera", "sailing", "pottery", "coffee", "marathon", "telescope", "quilt", "guitar", "soup",
              "hiking", "Kyoto", "painting", "yoga", "beekeeping", "opera", "surfing", "origami", "salsa", "tennis"]
    turns.write_text("".join(json.dumps({"text": f"Ann talked about {things[5 * s + i]} on day {s}", "speaker": "Ann",
                                         "id": f"D{s}:{i}", "session_id": f"s{s}", "user_id": "ann"}) + "\n"
                             for s in range(6) for i in range(5)))
    args = ("ingest", "jsonl", str(turns), "--store", str(tmp_path / "mem"))
    cut = subprocess.run(omnimem(*args), env=environment(OMNIMEM_EMBEDDER="interrupted", PYTHONPATH=os.pathsep.join(
        [str(site), str(ROOT)])), text=True, capture_output=True, timeout=300)
    assert cut.returncode == 130
    line = cut.stderr.strip().splitlines()[-1]
    with Memory(tmp_path / "mem", embedder="fake") as mem:
        kept = mem.count_units()
    assert 0 < kept < 30
    assert line == (f"interrupted: {kept} of 30 turns stored in {tmp_path / 'mem'}; run the same command again to "
                    "resume (turns already stored are skipped)")
    rerun = subprocess.run(omnimem(*args, "--json"), env=environment(), text=True, capture_output=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    summary = json.loads(rerun.stdout)
    assert summary["skipped"] >= kept and summary["stored"] + summary["skipped"] == 30
    whole = subprocess.run(omnimem("ingest", "jsonl", str(turns), "--store", str(tmp_path / "whole"), "--json"),
                           env=environment(), text=True, capture_output=True, timeout=300, check=True)
    assert summary["units"] == json.loads(whole.stdout)["units"]  # resumed: what one uninterrupted run stores


def test_the_confusing_messages_read_right_in_a_real_process(tmp_path: Path) -> None:
    """Issue 36, item 7, as a user meets them: each is one ``error:`` line (or the answer) and its exit code."""
    turns = tmp_path / "turns.jsonl"
    turns.write_text(json.dumps({"text": "hello", "speaker": "Ann"}) + "\n")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(omnimem(*args), cwd=tmp_path, env=environment(), text=True, capture_output=True,
                              timeout=120, stdin=subprocess.DEVNULL)

    version = cli("--version")
    assert (version.returncode, version.stdout) == (0, f"omnimem {__version__}\n")
    assert cli("-h").stdout == cli("--help").stdout and "Usage" in cli("-h").stdout
    forgot_format = cli("ingest", str(turns))
    assert forgot_format.returncode == 2 and "jsonl" in forgot_format.stderr and "Missing argument" not in \
        forgot_format.stderr
    not_export = cli("import", str(turns), "--store", "mem")
    assert not_export.returncode == 2
    assert not_export.stderr.startswith(f"error: {turns} is not an omnimem export") and len(
        not_export.stderr.splitlines()) == 1
    missing = cli("import", "nope.jsonl", "--store", "mem")
    assert missing.stderr == "error: cannot read nope.jsonl: No such file or directory\n"
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        taken = cli("serve", "--init", "--store", "mem", "--port", str(port))
    assert taken.returncode == 1 and taken.stderr.splitlines()[-1].startswith(f"error: port {port} is in use")
    assert not (tmp_path / "mem").exists() or Memory.exists(tmp_path / "mem")
