"""The graph LoCoMo builds, without ids, so two versions of the code can be compared for equality.

    python -m benchmarks graph-snapshot --out FILE [--limit N] [--embedder minilm]
    python -m benchmarks graph-snapshot --compare A.json B.json

Each conversation is added one session per ``add_dialogue`` to an in-memory
``Memory`` with the graph on, once with the graph work in the add
(``enrich="sync"``) and once queued (``enrich="async"``, then ``flush``).
Every user's graph is described as ``tests/graph/test_graph_golden.py`` does
(name, type, aliases, evidence turn ids, confidence; relations by their ends'
names), which the speed work on graph ingest must leave unchanged. The golden
test checks this on 366 fixed turns with the fake embedder in every test run;
this command checks it on real conversations with the real embedder.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omnimem import Memory
from omnimem.embed import create_embedder
from omnimem.contract.loaders import load_locomo


def snapshot(limit: int | None, embedder: str) -> dict[str, Any]:
    data = Path(os.environ.get("OMNIMEM_DATA_DIR", "../shared/data")) / "locomo" / "locomo10.json"
    dialogues = load_locomo(data)
    users = list(dict.fromkeys(str(d.user_id) for d in dialogues))[:limit]
    model = create_embedder(embedder)
    out: dict[str, Any] = {}
    for enrich in ("sync", "async"):
        for user in users:
            with Memory(embedder=model, graph=True, enrich=enrich) as mem:
                for d in dialogues:
                    if d.user_id == user:
                        mem.add_dialogue(d.turns, user_id=d.user_id, session_id=d.session_id)
                if not mem.flush(timeout=3600):
                    raise RuntimeError("the graph jobs did not land within an hour")
                graph = json.loads(mem.export_graph(user_id=user))
                turn = {u: mem.get(u).source_ids[0] for node in graph["nodes"] for u in node["units"]}
                names = {n["id"]: f"{n['name']} ({n['type']})" for n in graph["nodes"]}
                out[f"{enrich}:{user}"] = {
                    "entities": sorted([n["name"], n["type"], sorted(n["aliases"]), sorted(turn[u] for u in n["units"]),
                                        n["confidence"]] for n in graph["nodes"]),
                    "relations": sorted([names[e["source"]], names[e["target"]], e["label"], round(e["confidence"], 6)]
                                        for e in graph["edges"]),
                }
    return out


def compare(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """One line per graph: equal or not, with its entity and relation counts."""
    lines = []
    for key in sorted(set(a) | set(b)):
        left, right = a.get(key), b.get(key)
        same = left == right
        counts = [f"{len(g['entities'])} entities, {len(g['relations'])} relations" if g else "missing"
                  for g in (left, right)]
        lines.append(f"{key}: {'identical' if same else 'DIFFERENT'} ({counts[0]} / {counts[1]})")
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks graph-snapshot", description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=2, help="Only the first N conversations (default 2).")
    parser.add_argument("--embedder", default="minilm", help="A registered embedder name (default: minilm).")
    parser.add_argument("--out", type=Path, help="Write the snapshot here.")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"), help="Compare two snapshots.")
    args = parser.parse_args(argv)
    if args.compare:
        lines = compare(*(json.loads(p.read_text()) for p in args.compare))
        sys.stdout.write("\n".join(lines) + "\n")
        raise SystemExit(0 if all(line.split(": ")[1].startswith("identical") for line in lines) else 1)
    if args.out is None:
        parser.error("--out or --compare is required")
    args.out.write_text(json.dumps(snapshot(args.limit, args.embedder), sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
