"""What a time header costs when every message carries its own time: session vs day packing.

Real chat logs stamp each message; LoCoMo, LongMemEval and Mem-Gallery give a
whole session one time, so their recall cannot show it. Here the synthetic
corpus (:mod:`benchmarks.synthetic`: a turn a minute within each session) is
searched under ``packing="session"`` (a ``[time]`` header per distinct time,
so nearly one per turn) and ``packing="day"`` (one header per session and
day, a line's time of day only where it changed), and each context's hits,
tokens and header lines are counted::

    python -m benchmarks.packing_cost --out benchmarks/results/packing-cost.json

The same ranking feeds both (only the rendering differs), so more hits in the
same budget means deeper reading of that ranking.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from benchmarks.synthetic import queries, sessions
from omnimem import Memory

PACKINGS = ("session", "day")
BUDGETS = (1000, 6000)


def measure(turns: int, count: int) -> dict[str, object]:
    rows: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="omnimem-packing-") as folder:
        for packing in PACKINGS:
            with Memory(Path(folder) / packing, embedder="fake-exact", packing=packing) as mem:
                for user, session, dialogue in sessions(turns):
                    mem.add_dialogue(dialogue, user_id=user, session_id=session)
                for budget in BUDGETS:
                    hits, tokens, headers = [], [], []
                    for text, user in queries(count, turns):
                        ctx = mem.search(text, budget=budget, user_id=user)
                        hits.append(len(ctx.hits))
                        tokens.append(ctx.tokens)
                        headers.append(sum(line.startswith("[") for line in ctx.lines()))
                    rows[f"{packing} {budget}"] = {
                        "hits": statistics.mean(hits), "tokens": statistics.mean(tokens),
                        "header_lines": statistics.mean(headers),
                        "tokens_per_hit": sum(tokens) / max(sum(hits), 1),
                    }
    return {"turns": turns, "queries": count, "embedder": "fake-exact", "rows": rows}


def table(data: dict[str, object]) -> str:
    rows = data["rows"]
    assert isinstance(rows, dict)
    lines = ["| packing, budget | hits | tokens | header lines | tokens per hit |", "|---|---|---|---|---|"]
    for name, row in rows.items():
        lines.append(f"| {name} | {row['hits']:.1f} | {row['tokens']:.0f} | {row['header_lines']:.1f} | "
                     f"{row['tokens_per_hit']:.1f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    data = measure(args.turns, args.queries)
    data["command"] = f"python -m benchmarks.packing_cost --turns {args.turns} --queries {args.queries} --out {args.out}"
    data["date"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    args.out.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    md = args.out.with_suffix(".md")
    md.write_text(f"# Time headers per message vs per day\n\n`{data['command']}`\n\n{data['turns']} synthetic turns "
                  f"(a turn a minute within each session), {data['queries']} user-scoped queries, the same ranking "
                  f"under both packings.\n\n{table(data)}\n", encoding="utf-8")
    print(md.read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
