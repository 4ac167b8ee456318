"""Ingest speed with the knowledge graph on and off, on LoCoMo, in the same run.

    python -m benchmarks graph-ingest [--limit N] [--embedder minilm] [--out benchmarks/results]

Each conversation is added one session per ``add_dialogue`` call (how the
loaders and the CLI call it) to an in-memory ``Memory``, first with the graph
off, then with it on (offline spaCy extractor) with the graph work in the add
(``enrich="sync"``), then with it queued (``enrich="async"``, the default:
adds, then ``flush`` until every graph job has landed), so all three see the
same load. Reported per run: turns/s of each and their ratios to graph off,
and the graph's own work in the synchronous run (extraction, and resolution
+ graph rows inside the insert transaction) as turns/s of the wall time and
of the process CPU time spent in it, and as a share of the graph-on ingest
(shares and CPU times move less with the machine's load than wall times).
Writes ``graph-ingest.json`` and ``graph-ingest.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from omnimem import Memory
from omnimem.embed import create_embedder
from omnimem.contract.loaders import Dialogue, load_locomo


class GraphClock:
    """Seconds spent in one ``KnowledgeGraph``'s extraction (the extractor itself, then the name embeddings
    that resolution will compare) and in its row writers (resolution and graph rows)."""

    def __init__(self, mem: Memory) -> None:
        graph = mem.graph
        assert graph is not None
        self.extract_s = self.extractor_s = self.write_s = 0.0
        self.extract_cpu = self.extractor_cpu = self.write_cpu = 0.0  # process CPU seconds
        extract, writer, extractor = graph.extract, graph.writer, graph.extractor.extract

        def timed_extractor(texts: Any) -> Any:
            start, cpu = time.perf_counter(), time.process_time()
            try:
                return extractor(texts)
            finally:
                self.extractor_s += time.perf_counter() - start
                self.extractor_cpu += time.process_time() - cpu

        def timed_extract(units: Any) -> Any:
            start, cpu = time.perf_counter(), time.process_time()
            try:
                return extract(units)
            finally:
                self.extract_s += time.perf_counter() - start
                self.extract_cpu += time.process_time() - cpu

        def timed_writer(units: Any, extractions: Any) -> Callable[[Any], None]:
            write = writer(units, extractions)

            def timed_write(rows: Any) -> None:  # the store's GraphRows
                start, cpu = time.perf_counter(), time.process_time()
                try:
                    write(rows)
                finally:
                    self.write_s += time.perf_counter() - start
                    self.write_cpu += time.process_time() - cpu

            return timed_write

        graph.extractor.extract = timed_extractor  # type: ignore[method-assign]
        graph.extract = timed_extract  # type: ignore[method-assign]
        graph.writer = timed_writer  # type: ignore[method-assign]


def _ingest(mem: Memory, dialogues: Sequence[Dialogue]) -> float:
    start = time.perf_counter()
    for d in dialogues:
        mem.add_dialogue(d.turns, user_id=d.user_id, session_id=d.session_id)
    return time.perf_counter() - start


def run(limit: int | None, embedder: str) -> dict[str, Any]:
    data = Path(os.environ.get("OMNIMEM_DATA_DIR", "../shared/data")) / "locomo" / "locomo10.json"
    dialogues = load_locomo(data)
    users = list(dict.fromkeys(str(d.user_id) for d in dialogues))[:limit]
    model = create_embedder(embedder)
    model.embed(["load the model before timing"])
    off_s = on_s = queued_s = 0.0
    work = dict.fromkeys(("extract_s", "extractor_s", "write_s", "extract_cpu", "extractor_cpu", "write_cpu"), 0.0)
    turns = entities = 0
    for user in users:
        mine = [d for d in dialogues if d.user_id == user]
        turns += sum(len(d.turns) for d in mine)
        with Memory(embedder=model, enrich="sync") as mem:
            off_s += _ingest(mem, mine)
        with Memory(embedder=model, graph=True, enrich="sync") as mem:
            assert mem.graph is not None
            mem.graph.extractor.extract(["load spaCy before timing"])
            clock = GraphClock(mem)
            on_s += _ingest(mem, mine)
            for key in work:
                work[key] += getattr(clock, key)
            entities += len(mem.entities(user_id=user))
        with Memory(embedder=model, graph=True, enrich="async") as mem:
            start = time.perf_counter()
            _ingest(mem, mine)
            if not mem.flush(timeout=3600):
                raise RuntimeError("the graph jobs did not land within an hour")
            queued_s += time.perf_counter() - start
    graph_s = work["extract_s"] + work["write_s"]
    graph_cpu = work["extract_cpu"] + work["write_cpu"]
    names_s, names_cpu = work["extract_s"] - work["extractor_s"], work["extract_cpu"] - work["extractor_cpu"]
    return {
        "command": "python -m benchmarks graph-ingest" + (f" --limit {limit}" if limit else "")
        + (f" --embedder {embedder}" if embedder != "minilm" else ""),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "load_average": list(os.getloadavg()),
        "conversations": len(users), "turns": turns, "embedder": model.name, "entities": entities,
        "graph_off_turns_per_s": round(turns / off_s, 1),
        "graph_on_turns_per_s": round(turns / on_s, 1),
        "on_vs_off": round(off_s / on_s, 3),
        "graph_queued_turns_per_s": round(turns / queued_s, 1),
        "queued_vs_off": round(off_s / queued_s, 3),
        "graph_work_turns_per_s": round(turns / graph_s, 1),
        "extraction_turns_per_s": round(turns / work["extractor_s"], 1),
        "name_embedding_turns_per_s": round(turns / names_s, 1),
        "resolution_and_rows_turns_per_s": round(turns / work["write_s"], 1),
        "graph_work_cpu_turns_per_s": round(turns / graph_cpu, 1),
        "cpu_turns_per_s": {"extraction": round(turns / work["extractor_cpu"], 1),
                            "name_embeddings": round(turns / names_cpu, 1),
                            "resolution_and_rows": round(turns / work["write_cpu"], 1)},
        "graph_share_of_graph_on": {"graph_work": round(graph_s / on_s, 3),
                                    "extraction": round(work["extractor_s"] / on_s, 3),
                                    "name_embeddings": round(names_s / on_s, 3),
                                    "resolution_and_rows": round(work["write_s"] / on_s, 3)},
        "seconds": {"graph_off": round(off_s, 2), "graph_on": round(on_s, 2), "graph_queued": round(queued_s, 2),
                    "extraction": round(work["extractor_s"], 2), "name_embeddings": round(names_s, 2),
                    "resolution_and_rows": round(work["write_s"], 2)},
        "cpu_seconds": {"extraction": round(work["extractor_cpu"], 2), "name_embeddings": round(names_cpu, 2),
                        "resolution_and_rows": round(work["write_cpu"], 2)},
    }


def table(r: dict[str, Any]) -> str:
    cpu, share = r["cpu_turns_per_s"], r["graph_share_of_graph_on"]
    return (
        "# Ingest with the knowledge graph on and off (LoCoMo, one session per add_dialogue, in memory)\n\n"
        f"`{r['command']}` ({r['date']}, load average {r['load_average'][0]:.2f}): {r['conversations']} "
        f"conversations, {r['turns']} turns, embedder {r['embedder']}, {r['entities']} entities.\n\n"
        "| graph off turns/s | graph on (in the add) turns/s | on / off | graph queued (adds + flush) turns/s "
        "| queued / off |\n"
        "|---|---|---|---|---|\n"
        f"| {r['graph_off_turns_per_s']} | {r['graph_on_turns_per_s']} | {r['on_vs_off']:.0%} | "
        f"{r['graph_queued_turns_per_s']} | {r['queued_vs_off']:.0%} |\n\n"
        "Graph work of the in-the-add run (spaCy extraction; name embeddings; resolution + rows):\n\n"
        "| | graph work | spaCy extraction | name embeddings | resolution + rows |\n"
        "|---|---|---|---|---|\n"
        f"| turns/s (wall) | {r['graph_work_turns_per_s']} | {r['extraction_turns_per_s']} | "
        f"{r['name_embedding_turns_per_s']} | {r['resolution_and_rows_turns_per_s']} |\n"
        f"| turns/s (process CPU) | {r['graph_work_cpu_turns_per_s']} | {cpu['extraction']} | "
        f"{cpu['name_embeddings']} | {cpu['resolution_and_rows']} |\n"
        f"| share of graph-on ingest time | {share['graph_work']:.0%} | {share['extraction']:.0%} | "
        f"{share['name_embeddings']:.0%} | {share['resolution_and_rows']:.0%} |\n"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks graph-ingest", description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="Only the first N conversations.")
    parser.add_argument("--embedder", default="minilm", help="A registered embedder name (default: minilm).")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args(argv)
    result = run(args.limit, args.embedder)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "graph-ingest.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / "graph-ingest.md").write_text(table(result))
    sys.stdout.write(table(result))


if __name__ == "__main__":
    main()
