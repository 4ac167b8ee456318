"""The graph built from a fixed set of turns is the same as the one recorded before the speed work.

``data/resolution_turns.jsonl`` holds 366 turns (deterministic synthetic dialogue
with names, places and dates, and a hand-written session of aliases: "Mel",
"Dr. Smith", "J. Smith", "Route 66"/"Route 67"). ``data/resolution_golden.json``
is the graph that ingest built from them before extraction was batched and name
embeddings prefetched (the code of commit c60123d), recorded by running this module
as a script. Unit ids are random, so entities are compared by name, type,
aliases and the turn ids of their evidence, and relations (by their ends' names) through
a digest of their sorted list, which keeps the file small.

Regenerate (only when a change of the graph is intended):
``PYTHONPATH=. python tests/graph/test_graph_golden.py``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from omnimem import Memory

DATA = Path(__file__).parent / "data"
TURNS = DATA / "resolution_turns.jsonl"
GOLDEN = DATA / "resolution_golden.json"


def build_graph(enrich: str = "sync") -> dict[str, Any]:
    """Ingest the fixed turns (one session per call) and describe every user's graph without ids.

    ``sync``: extraction in each add; ``async``: queued, one job per batch, waited for with ``flush``.
    """
    sessions = [json.loads(line) for line in TURNS.read_text().splitlines()]
    out: dict[str, Any] = {}
    with Memory(embedder="fake", graph=True, enrich=enrich) as mem:
        for s in sessions:
            mem.add_dialogue(s["turns"], user_id=s["user_id"], session_id=s["session_id"])
        assert mem.flush(timeout=300)
        for user in sorted({s["user_id"] for s in sessions}):
            graph = json.loads(mem.export_graph(user_id=user))
            turn_ids = {}
            for node in graph["nodes"]:
                for unit_id in node["units"]:
                    if unit_id not in turn_ids:
                        turn_ids[unit_id] = mem.get(unit_id).source_ids[0]
            names = {n["id"]: f"{n['name']} ({n['type']})" for n in graph["nodes"]}
            out[user] = {
                "entities": sorted(
                    [n["name"], n["type"], sorted(n["aliases"]), sorted(turn_ids[u] for u in n["units"])]
                    for n in graph["nodes"]
                ),
                "relations": _digest(sorted(
                    [names[e["source"]], names[e["target"]], e["label"], round(e["confidence"], 6)]
                    for e in graph["edges"]
                )),
            }
    return out


def _digest(rows: list[list[Any]]) -> dict[str, Any]:
    return {"count": len(rows), "sha256": hashlib.sha256(json.dumps(rows).encode()).hexdigest()}


@pytest.mark.parametrize("enrich", ["sync", "async"])
def test_graph_equals_the_recorded_one(enrich: str) -> None:
    want = json.loads(GOLDEN.read_text())
    got = build_graph(enrich)
    assert got.keys() == want.keys()
    for user in want:
        assert got[user]["entities"] == want[user]["entities"], user
        assert got[user]["relations"] == want[user]["relations"], user


if __name__ == "__main__":
    GOLDEN.write_text("{\n" + ",\n".join(
        f"{json.dumps(user)}: {{\"entities\": [\n" + ",\n".join(json.dumps(e, ensure_ascii=False) for e in graph["entities"])
        + f"],\n \"relations\": {json.dumps(graph['relations'])}}}" for user, graph in build_graph().items()
    ) + "\n}\n")
