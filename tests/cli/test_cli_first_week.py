"""Small things a new user meets in the first week: counts in the singular, an empty file refused, a declined
wipe that is no error, a typo's suggestion read as a sentence, the model's loading shown as its own phase."""

from __future__ import annotations

import asyncio
import json
import os
import pty
import re
import subprocess
import sys
import time
from pathlib import Path

from typer.testing import CliRunner

from omnimem import Memory
from omnimem.cli import app
from omnimem.mcp import create_mcp

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "examples" / "sample_conversation.jsonl"


def run(*args: object) -> object:
    return CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": "200", "OMNIMEM_EMBEDDER": "fake"})


def test_an_empty_jsonl_file_is_refused_in_one_line_and_creates_no_store(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    res = run("ingest", "jsonl", empty, "--store", tmp_path / "mem")
    assert res.exit_code == 2
    assert res.output == (f"error: {empty} holds no turns, so nothing was stored (a JSONL file has one JSON object "
                          "with a \"text\" per line)\n")
    assert not (tmp_path / "mem").exists()


def test_one_turn_and_one_unit_are_counted_in_the_singular(tmp_path: Path) -> None:
    one = tmp_path / "one.jsonl"
    one.write_text(json.dumps({"speaker": "Ann", "text": "I bought a red kayak"}) + "\n")
    store = tmp_path / "mem"
    assert run("ingest", "jsonl", one, "--store", store).stdout == (
        f"1 turn: 1 stored, 0 skipped (duplicate or redundant) -> {store}\n")
    dump = tmp_path / "dump.jsonl"
    dump.write_text(run("export", "--all", "--store", store).output)
    assert run("import", dump, "--store", tmp_path / "copy").stdout == (
        "1 unit: 1 stored, 0 skipped (0 forgotten here; --allow-forgotten restores them)\n")


def test_a_mistyped_command_gets_its_suggestion_as_a_sentence() -> None:
    res = run("serach", "kayak")
    assert res.exit_code == 2
    said = res.output.replace("`root ", "`omnimem ")  # the test runner's program name
    assert said == "error: No such command 'serach'. Did you mean 'search'? (see `omnimem --help`)\n"


def test_declining_a_wipe_is_an_answer_not_an_error(tmp_path: Path) -> None:
    store = tmp_path / "mem"
    with Memory(store, embedder="fake") as mem:
        mem.add("I bought a red kayak", user_id="ann")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMNIMEM_EMBEDDER": "fake"}
    controller, terminal = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "omnimem.cli", "forget", "--all", "--store", str(store)],
                            stdin=terminal, stdout=terminal, stderr=terminal, env=env)
    os.close(terminal)
    seen = b""
    deadline = time.monotonic() + 120
    while b"[y/N]: " not in seen and time.monotonic() < deadline:  # the whole prompt, so the echo comes after it
        seen += os.read(controller, 1024)
    os.write(controller, b"n\n")
    assert proc.wait(timeout=120) == 1
    while True:
        try:
            chunk = os.read(controller, 1024)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        seen += chunk
    os.close(controller)
    said = seen.decode().replace("\r", "")
    assert said.rstrip().endswith("\nnothing was forgotten") and "error:" not in said
    with Memory(store, embedder="fake") as mem:
        assert mem.count_units() == 1


def test_ingest_shows_the_model_loading_before_the_bar_counts_turns(tmp_path: Path) -> None:
    """On a terminal (rich told so by TTY_COMPATIBLE/TTY_INTERACTIVE), the bar's first frame names the model
    (the turns follow as soon as it has loaded; a fake model loads before the next frame is drawn)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TTY_COMPATIBLE": "1", "TTY_INTERACTIVE": "1", "COLUMNS": "120"}
    res = subprocess.run([sys.executable, "-m", "omnimem.cli", "ingest", "jsonl", str(SAMPLE), "--store",
                          str(tmp_path / "mem"), "--embedder", "fake"], env=env, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    frames = [re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", frame).strip() for frame in re.split(r"[\r\n]", res.stderr)]
    drawn = [frame for frame in frames if frame]
    assert drawn[0].startswith("loading the embedding model (fake) ") and drawn[0].endswith(" 0/22 0:00:00")


def test_the_mcp_add_tool_says_its_first_call_waits_for_the_model(tmp_path: Path) -> None:
    with Memory(tmp_path / "mem", embedder="fake") as mem:
        tools = {tool.name: tool for tool in asyncio.run(create_mcp(mem).list_tools())}
    said = " ".join((tools["add"].description or "").split())
    assert "the first call after the server starts also waits, several seconds, while the embedding model loads" \
        in said
