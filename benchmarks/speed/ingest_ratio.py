"""Ingest speed against the raw embedder on the same texts, in the same run, the way users call it.

    python -m benchmarks ingest-ratio [--limit N] [--single 300] [--embedder minilm] [--path]

Two call patterns, LoCoMo turns (``speaker: text``, what omnimem embeds by default):

- ``session``: one ``add_dialogue`` per session (10-30 turns), against the raw
  encoder embedding each session's texts in one call;
- ``single``: one ``add`` per turn (the first ``--single`` turns of each
  conversation), against the raw encoder embedding one text per call.

Each conversation goes into a fresh ``Memory`` (in memory, or with ``--path``
a store folder on disk). Raw and omnimem passes alternate per conversation
(raw, omnimem, raw: the raw speed is the mean of the two around each omnimem
pass), so load changes on a shared machine hit both alike. Token counting and
the model are loaded before timing on both sides. Writes ``ingest-ratio.json``
and ``ingest-ratio.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from omnimem import Memory
from omnimem.embed import create_embedder
from omnimem.embed.base import Embedder
from omnimem.contract.loaders import Dialogue, load_locomo
from omnimem.mau import search_text


class TimedEmbedder:
    """The embedder Memory uses, with the seconds spent in it counted (same name and vectors)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.seconds = 0.0

    def embed(self, texts: Sequence[str]) -> Any:
        start = time.perf_counter()
        try:
            return self.inner.embed(texts)
        finally:
            self.seconds += time.perf_counter() - start


def _raw(embedder: Embedder, batches: Sequence[Sequence[str]]) -> float:
    start = time.perf_counter()
    for batch in batches:
        embedder.embed(list(batch))
    return time.perf_counter() - start


def _texts(dialogues: Sequence[Dialogue]) -> list[list[str]]:
    return [[search_text(t.get("speaker"), str(t["text"])) for t in d.turns] for d in dialogues]


def _measure(pattern: str, groups: Sequence[list[Dialogue]], model: Embedder, single: int,
             folder: Callable[[], Path | None]) -> dict[str, Any]:
    raw_s = mem_s = in_embedder_s = 0.0
    turns = stored = 0
    for dialogues in groups:
        if pattern == "session":
            batches = _texts(dialogues)
        else:
            dialogues = _first_turns(dialogues, single)
            batches = [[t] for session in _texts(dialogues) for t in session]
        turns += sum(map(len, batches))
        before = _raw(model, batches)
        timed = TimedEmbedder(model)
        with Memory(folder(), embedder=timed) as mem:
            start = time.perf_counter()
            for d in dialogues:
                if pattern == "session":
                    stored += sum(r.accepted for r in mem.add_dialogue(d.turns, user_id=d.user_id,
                                                                       session_id=d.session_id))
                else:
                    for t in d.turns:
                        stored += mem.add(str(t["text"]), speaker=t.get("speaker"), time=t.get("time"),
                                          source_id=t.get("id"), user_id=d.user_id, session_id=d.session_id).accepted
            mem_s += time.perf_counter() - start
        in_embedder_s += timed.seconds
        raw_s += (before + _raw(model, batches)) / 2
    return {
        "turns": turns, "stored": stored,
        "omnimem_turns_per_s": round(turns / mem_s, 1), "raw_embedder_turns_per_s": round(turns / raw_s, 1),
        "ratio": round(raw_s / mem_s, 3),
        "embedder_share_of_ingest": round(in_embedder_s / mem_s, 3),
        "overhead_ms_per_turn": round((mem_s - in_embedder_s) / turns * 1000, 3),
        "seconds": {"omnimem": round(mem_s, 2), "raw": round(raw_s, 2), "omnimem_in_embedder": round(in_embedder_s, 2)},
    }


def _first_turns(dialogues: Sequence[Dialogue], n: int) -> list[Dialogue]:
    out, left = [], n
    for d in dialogues:
        if left <= 0:
            break
        out.append(Dialogue(d.turns[:left], d.user_id, d.agent_id, d.session_id))
        left -= len(out[-1].turns)
    return out


def run(limit: int | None, single: int, embedder: str, on_disk: bool) -> dict[str, Any]:
    data = Path(os.environ.get("OMNIMEM_DATA_DIR", "../shared/data")) / "locomo" / "locomo10.json"
    dialogues = load_locomo(data)
    users = list(dict.fromkeys(str(d.user_id) for d in dialogues))[:limit]
    groups = [[d for d in dialogues if d.user_id == u] for u in users]
    model = create_embedder(embedder)
    model.embed(["load the model before timing"])
    with Memory(embedder="fake") as warm:  # the token counter and omnimem's modules, before timing
        warm.add("load the token counter before timing")
        warm.search("and the search path")
    with ExitStack() as stack:
        counter = [0]

        def folder() -> Path | None:
            if not on_disk:
                return None
            counter[0] += 1
            return Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="omnimem-ingest-"))) / "mem"

        result = {
            "command": "python -m benchmarks ingest-ratio" + (f" --limit {limit}" if limit else "")
            + (f" --single {single}" if single != 300 else "") + (f" --embedder {embedder}" if embedder != "minilm" else "")
            + (" --path" if on_disk else ""),
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "load_average_before": list(os.getloadavg()),
            "conversations": len(users), "embedder": model.name, "store": "folder" if on_disk else "in memory",
            "session": _measure("session", groups, model, single, folder),
            "single": _measure("single", groups, model, single, folder),
        }
    result["load_average_after"] = list(os.getloadavg())
    return result


def table(r: dict[str, Any]) -> str:
    lines = [
        "# Ingest against the raw embedder (LoCoMo turns, same run)", "",
        f"`{r['command']}` ({r['date']}, load average {r['load_average_before'][0]:.2f} before, "
        f"{r['load_average_after'][0]:.2f} after): {r['conversations']} conversations, {r['embedder']}, "
        f"store {r['store']}.", "",
        "| call pattern | turns | omnimem turns/s | raw embedder turns/s | omnimem / raw | in embedder | "
        "overhead ms/turn |",
        "|---|---|---|---|---|---|---|",
    ]
    for key, label in (("session", "add_dialogue per session"), ("single", "one add per turn")):
        m = r[key]
        lines.append(f"| {label} | {m['turns']} | {m['omnimem_turns_per_s']} | {m['raw_embedder_turns_per_s']} | "
                     f"{m['ratio']:.1%} | {m['embedder_share_of_ingest']:.1%} | {m['overhead_ms_per_turn']} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks ingest-ratio", description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="Only the first N conversations.")
    parser.add_argument("--single", type=int, default=300, help="Turns per conversation added one at a time.")
    parser.add_argument("--embedder", default="minilm", help="A registered embedder name (default: minilm).")
    parser.add_argument("--path", action="store_true", help="Stores in folders on disk instead of in memory.")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args(argv)
    result = run(args.limit, args.single, args.embedder, args.path)
    args.out.mkdir(parents=True, exist_ok=True)
    name = "ingest-ratio-disk" if args.path else "ingest-ratio"
    (args.out / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / f"{name}.md").write_text(table(result))
    sys.stdout.write(table(result))


if __name__ == "__main__":
    main()
