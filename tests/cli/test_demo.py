"""``omnimem demo`` answers its own question: with the real MiniLM, as a new user runs it, from the checkout
and from a wheel installed in a fresh virtual environment."""

from __future__ import annotations

import os
import re
import site
import subprocess
from pathlib import Path

import pytest

from typer.testing import CliRunner

from omnimem.cli import app
from tests.fresh_venv import site_packages, wheel_in_fresh_venv

HIT = re.compile(r"^\s+(?P<fused>#?[0-9.]+)\s+d#(?P<dense>\S+)\s+b#(?P<sparse>\S+)\s+(?P<cosine>[0-9.]+)\s+\[[^\]]+\] "
                 r"(?P<speaker>\w+): (?P<text>.*)$")


def hits(output: str) -> list[dict[str, str]]:
    """The demo's hit lines (rich wraps long lines: a line that is not a hit continues the one before)."""
    found: list[dict[str, str]] = []
    for line in output.splitlines()[2:]:
        if not line.strip():  # the next steps follow the hits after a blank line
            break
        m = HIT.match(line)
        if m:
            found.append(m.groupdict())
        elif found:
            found[-1]["text"] += " " + line.strip()
    return found


def test_what_did_alex_paint_is_answered_by_the_turns_that_say_what_alex_painted(minilm):
    res = CliRunner().invoke(app, ["demo"], env={"COLUMNS": "240"})
    assert res.exit_code == 0, res.output
    shown = hits(res.output)
    assert len(shown) == 5, res.output
    top2 = shown[:2]
    assert all(h["speaker"] == "Alex" for h in top2), res.output  # the speaker the question names
    assert sorted("watercolour of the lighthouse" in h["text"] for h in top2) == [False, True], res.output
    assert sorted("harbour painting" in h["text"] for h in top2) == [False, True], res.output  # both paintings first
    assert not any("What did you make first" in h["text"] for h in shown)  # question words decide no match
    assert all(h["speaker"] == "Alex" for h in shown[:3])  # Sam's "You should paint..." below Alex's turns
    first = [h["fused"] for h in shown]  # what ranked the hits: the fused score, or "#rank" where that is not monotone
    if all(f.startswith("#") for f in first):
        assert first == [f"#{i}" for i in range(1, 6)], res.output
    else:
        fused = [float(f) for f in first]
        assert fused == sorted(fused, reverse=True), res.output  # the order shown is visibly the fused order


def test_a_kept_store_run_again_says_the_turns_are_already_held_and_what_to_do_next(minilm, tmp_path):
    store = tmp_path / "mem"
    first = CliRunner().invoke(app, ["demo", "--store", str(store)], env={"COLUMNS": "240"})
    assert first.exit_code == 0, first.output
    assert first.output.startswith(f"stored 22 of 22 turns from the sample conversation with all-MiniLM-L6-v2 in "
                                   f"{store}\n"), first.output
    again = CliRunner().invoke(app, ["demo", "--store", str(store)], env={"COLUMNS": "240"})
    assert again.output.startswith("stored 0 of 22 turns (22 already held) from the sample conversation"), again.output
    steps = again.output.split("\nnext:\n")[1].splitlines()
    assert steps[0] == f"  omnimem list --store {store}   (what it holds, newest first)"
    assert any(step.startswith("  omnimem search ") for step in steps)


def test_without_a_store_the_demo_says_its_store_is_temporary(minilm):
    res = CliRunner().invoke(app, ["demo"], env={"COLUMNS": "240"})
    assert "in a temporary store, deleted when the demo ends (--store DIR keeps one)" in res.output.splitlines()[0]
    assert "  omnimem demo --store ./mem   (keeps the store to explore)" in res.output.splitlines()



@pytest.mark.slow
def test_the_demo_runs_from_a_wheel_installed_in_a_fresh_venv(tmp_path):
    """The wheel carries the sample conversation: `omnimem demo` from a plain install, not the checkout."""
    fresh = wheel_in_fresh_venv(tmp_path)
    # the dependencies (offline) from this interpreter's site-packages, as plain paths: their .pth files, the
    # checkout's editable finder among them, are not run, so the wheel's omnimem is the only one importable
    fresh_site = site_packages(fresh)
    (fresh_site / "deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"COLUMNS": "240", "HF_HUB_OFFLINE": "1"}
    where = subprocess.run([str(fresh / "bin" / "python"), "-c", "import omnimem; print(omnimem.__file__)"],
                           cwd=tmp_path, env=env, check=True, capture_output=True, text=True).stdout.strip()
    assert Path(where).is_relative_to(fresh_site), where
    res = subprocess.run([str(fresh / "bin" / "omnimem"), "demo"], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("stored 22 of 22 turns from the sample conversation"), res.stdout
    assert hits(res.stdout)[0]["speaker"] == "Alex", res.stdout
