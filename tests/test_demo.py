"""``omnimem demo`` answers its own question: with the real MiniLM, as a new user runs it."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from omnimem.cli import app

HIT = re.compile(r"^\s+(?P<fused>[0-9.]+)\s+d#(?P<dense>\S+)\s+b#(?P<sparse>\S+)\s+(?P<cosine>[0-9.]+)\s+\[[^\]]+\] "
                 r"(?P<speaker>\w+): (?P<text>.*)$")


def hits(output: str) -> list[dict[str, str]]:
    """The demo's hit lines (rich wraps long lines: a line that is not a hit continues the one before)."""
    found: list[dict[str, str]] = []
    for line in output.splitlines()[2:]:
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
    fused = [float(h["fused"]) for h in shown]
    assert fused == sorted(fused, reverse=True)  # the order shown is visibly the fused order
