"""``omnimem forget``: ``--preview`` lists what would go and changes nothing; ``--all`` asks first on a terminal
(``--yes`` skips the question; with no terminal and no ``--yes`` it refuses in one line). Issue 36."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import Result

from omnimem import Memory

ROOT = Path(__file__).resolve().parents[2]
Run = Callable[..., Result]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "mem"
    with Memory(path, embedder="fake") as mem:
        mem.add("Ann moved to Lisbon in May", user_id="ann", session_id="s1", time="2024-05-01")
        mem.add("Ann adopted a cat called Miso", user_id="ann", session_id="s2", time="2024-06-01")
        mem.add("Bob plays the cello", user_id="bob", session_id="s1", time="2024-05-02")
    return path


def units(store: Path) -> int:
    with Memory(store, embedder="fake") as mem:
        return mem.count_units()


@pytest.mark.parametrize(("criteria", "going"), [
    (("--user-id", "ann"), 2), (("--session-id", "s1", "--all-users"), 2), (("--all",), 3),
    (("--user-id", "ann", "--since", "2024-05-15"), 1),
], ids=lambda c: " ".join(c) if isinstance(c, tuple) else str(c))
def test_preview_lists_what_would_go_and_changes_nothing(run: Run, store: Path, criteria: tuple[str, ...],
                                                         going: int) -> None:
    shown = run("forget", *criteria, "--preview", "--store", store)
    assert shown.exit_code == 0, shown.stderr
    assert shown.stdout.splitlines()[-1].startswith(f"would forget {going} unit(s); nothing was changed")
    listed = json.loads(run("forget", *criteria, "--preview", "--json", "--store", store).stdout)
    assert listed["count"] == len(listed["units"]) == going
    assert units(store) == 3
    with Memory(store, embedder="fake") as mem:
        assert [e.action for e in mem.log()].count("forget") == 0  # a preview is not a forget


def test_the_preview_names_the_units_the_forget_then_removes(run: Run, store: Path) -> None:
    listed = json.loads(run("forget", "--user-id", "ann", "--preview", "--json", "--store", store).stdout)
    assert run("forget", "--user-id", "ann", "--store", store).stdout == "forgot 2 unit(s)\n"
    with Memory(store, embedder="fake") as mem:
        assert mem.store.get([u["id"] for u in listed["units"]]) == []


def test_forget_all_without_a_terminal_needs_yes(run: Run, store: Path) -> None:
    refused = run("forget", "--all", "--store", store)
    assert refused.exit_code == 2
    assert refused.stderr == (f"error: forget --all wipes all 3 unit(s) of {store}; pass --yes to confirm (no terminal "
                              "to ask on), or --preview to list them\n")
    assert units(store) == 3
    assert run("forget", "--all", "--yes", "--store", store).stdout == "forgot 3 unit(s)\n"
    assert units(store) == 0


def _on_a_terminal(store: Path, answer: bytes) -> tuple[int, str]:
    """``omnimem forget --all`` with its stdin a real terminal (a pty), typing ``answer`` at the question."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMNIMEM_EMBEDDER": "fake"}
    controller, terminal = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "omnimem.cli", "forget", "--all", "--store", str(store)],
                            stdin=terminal, stdout=subprocess.PIPE, stderr=terminal, env=env)
    os.close(terminal)
    seen = b""
    deadline = time.monotonic() + 120
    while b"cannot be undone" not in seen and time.monotonic() < deadline:
        seen += os.read(controller, 1024)  # the question, on the terminal
    os.write(controller, answer)
    out, _ = proc.communicate(timeout=120)
    os.close(controller)
    return proc.returncode, seen.decode() + out.decode()


def test_forget_all_on_a_terminal_asks_first(store: Path) -> None:
    code, said = _on_a_terminal(store, b"n\n")
    assert code == 1 and f"forget all 3 unit(s) of {store}? This cannot be undone" in said
    assert units(store) == 3
    code, said = _on_a_terminal(store, b"y\n")
    assert code == 0 and "forgot 3 unit(s)" in said
    assert units(store) == 0
