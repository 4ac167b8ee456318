"""The writers' section of ``results/RELIABILITY.md``: ``dialogue-stall.json`` and ``ingest-race.json`` as tables.

``python -m benchmarks dialogue-stall`` and ``python -m benchmarks ingest-race`` rewrite the section
after their run; ``python -m benchmarks reliability`` appends it to the page it writes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

START = "<!-- writers: written by benchmarks/reliability/writers_md.py -->"
END = "<!-- /writers -->"


def _load(folder: Path, name: str) -> dict[str, Any] | None:
    path = folder / name
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def section(folder: Path) -> str:
    """The section's markdown (empty when neither result file exists)."""
    stall, race = _load(folder, "dialogue-stall.json"), _load(folder, "ingest-race.json")
    if stall is None and race is None:
        return ""
    lines = [START, "## Writers: no duplicates across processes, no stall behind a large dialogue", ""]
    if stall is not None:
        c = stall["config"]
        lines += [
            f"Another user's adds during a {c['turns']:,}-turn `POST /v1/dialogues` ({stall['when']}, "
            f"{stall['cpus']} CPUs, `omnimem serve` with {c['workers']} worker, {c['embedder']} embedder, "
            f"{c['rounds']} rounds):", "",
            "| adds of user `small` | n | p50 ms | p95 ms |", "|---|---|---|---|",
            f"| lone (before {'' if 'after' in stall else 'and after '}each dialogue) | {stall['lone']['n']} | "
            f"{stall['lone']['p50_ms']} | "
            f"{stall['lone']['p95_ms']} |",
            *([f"| right after each dialogue | {stall['after']['n']} | {stall['after']['p50_ms']} | "
               f"{stall['after']['p95_ms']} |"] if "after" in stall else []),
            f"| during the dialogue | {stall['during']['n']} | {stall['during']['p50_ms']} | "
            f"{stall['during']['p95_ms']} |", "",
            f"p95 during / lone p95: **{stall['p95_ratio']}x** (target <= {stall['target_ratio']}x); dialogue "
            + ", ".join(f"{r['seconds']:.1f} s" for r in stall["rounds"])
            + f"; acknowledged adds lost: {stall['lost']}"
            + (f"; turns the novelty filter refused as redundant: {stall['not_novel']}" if "not_novel" in stall else "")
            + ".", "",
            "```bash", "python -m benchmarks dialogue-stall", "```", "",
        ]
    if race is not None:
        lines += [
            f"Processes ingesting the same file into one embedded store at once ({race['when']}, "
            f"{race['cpus']} CPUs, fake embedder, released together by a start file):", "",
            "| file | interface | processes | turns | units stored | duplicated source ids |",
            "|---|---|---|---|---|---|",
            *(f"| {r['file']} | {r['interface']} | {r['processes']} | {r['turns']} | {r['units']} | "
              f"{r['duplicated_source_ids']} |" for r in race["runs"]),
            "", f"Duplicates in all: **{race['duplicates']}** (target 0).", "",
            "```bash", "python -m benchmarks ingest-race", "```", "",
        ]
    return "\n".join([*lines, END]) + "\n"


def update(folder: Path) -> None:
    """Replace (or append) the section in ``folder/RELIABILITY.md``."""
    page = folder / "RELIABILITY.md"
    text = page.read_text(encoding="utf-8") if page.exists() else "# Reliability\n"
    if START in text and END in text:
        before, rest = text.split(START, 1)
        after = rest.split(END, 1)[1].lstrip("\n")
        text = before.rstrip("\n") + "\n\n" + section(folder) + ("\n" + after if after else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section(folder)
    page.write_text(text, encoding="utf-8")
