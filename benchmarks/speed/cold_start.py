"""Where a cold ``omnimem search`` (and ``omnimem add``) spends its time, phase by phase, in fresh processes.

    python -m benchmarks cold-start [STORE QUERY] [--repeats 5] [--add-only] [--out DIR]

Without STORE, a small store is built first from the first LoCoMo conversation
(419 turns) with the default embedder (the torch MiniLM) and searched once, the
store a user has after ``omnimem ingest locomo`` and a first search (which
saves the indexes a read-only open then loads).

Each repeat runs, in fresh processes (nothing warm but the OS page cache):

- ``python -c pass``: the interpreter alone;
- ``omnimem search QUERY --store STORE --limit 5`` as a user runs it (``python -m omnimem.cli``): whole wall time;
- the same steps timed inside one process with the CLI's own functions: import of ``omnimem.cli``,
  store open (schema check, indexes loaded), model load, the search (query embedded), the table printed,
  and the time from launching the process to the printed result (what the user waits for);
- the same again opening the store the way the CLI did before (writable, with the store's own model),
  for the ratio in the same run;
- ``omnimem add`` of one new text the same two ways: today (the numpy MiniLM, ``cli._writer_embedder``)
  and before (the torch MiniLM): import, store open, the add (model load and embedding included).
  ``--add-only`` measures only this (files ``cold-start-add.json`` / ``.md``).

Prints the medians as JSON; with ``--out`` also writes ``cold-start.json`` and ``cold-start.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

CHILD = r"""
import io, json, sys, time
from contextlib import redirect_stdout
from pathlib import Path
t0 = time.perf_counter()
import omnimem.cli as cli  # what the command imports before it runs
t1 = time.perf_counter()
store, query, mode = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
opened = cli._reader(store) if mode == "cli" else cli._memory(store, existing=True)
with opened as mem:
    t2 = time.perf_counter()
    mem.embedder.embed(["load the model"])
    t3 = time.perf_counter()
    ctx = mem.search(query)
    t4 = time.perf_counter()
with redirect_stdout(io.StringIO()):
    cli._print_context(ctx, as_json=False, context=False, limit=5)
t5 = time.perf_counter()
printed_at = time.time()  # the result is on screen: what the user waited for (exit comes after)
mods = sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "sentence_transformers", "transformers"))
print(json.dumps({"import_s": t1 - t0, "open_s": t2 - t1, "model_load_s": t3 - t2, "search_s": t4 - t3,
                  "print_s": t5 - t4, "hits": len(ctx.hits), "embedder": mem.embedder.name,
                  "read_only": mem.read_only, "torch_imported": bool(mods), "printed_at": printed_at}))
"""

ADD_CHILD = r"""
import json, sys, time
from pathlib import Path
t0 = time.perf_counter()
import omnimem.cli as cli
t1 = time.perf_counter()
store, text, mode = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
with cli._memory(store, cli._writer_embedder(store) if mode == "cli" else None) as mem:
    t2 = time.perf_counter()
    result = mem.add(text)
    t3 = time.perf_counter()
    name = mem.embedder.name + (" (numpy)" if type(mem.embedder).__name__.startswith("Numpy") else " (torch)")
stored_at = time.time()
mods = sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "sentence_transformers", "transformers"))
print(json.dumps({"import_s": t1 - t0, "open_s": t2 - t1, "add_s": t3 - t2, "accepted": result.accepted,
                  "embedder": name, "torch_imported": bool(mods), "printed_at": stored_at}))
"""


NEW_TEXTS = [  # unrelated to each other and to the store, so the novelty filter stores (and embeds) every one
    "Priya repaired the garden fence after the storm on Tuesday.",
    "The bakery on Elm Street started selling rye bread with caraway.",
    "Tomas booked a train to Vienna for the conference in March.",
    "Our cat knocked the blue vase off the kitchen shelf.",
    "Lena's violin recital moved to the community hall downtown.",
    "The marathon route now passes the old lighthouse at mile nine.",
    "Grandpa planted three apple trees behind the barn this spring.",
    "Kofi learned to bake sourdough using a starter from his aunt.",
    "The library will close early on Friday for the roof repairs.",
    "Mei adopted a retired greyhound named Pepper last weekend.",
]


def _add(store: str, text: str, mode: str) -> dict[str, Any]:
    launched, start = time.time(), time.perf_counter()
    out = subprocess.run([sys.executable, "-c", ADD_CHILD, store, text, mode], capture_output=True, text=True,
                         check=True)
    run: dict[str, Any] = json.loads(out.stdout)
    if not run["accepted"]:  # a skipped add embeds nothing: its time would not be an add's
        raise RuntimeError(f"the novelty filter skipped {text!r}; the timing needs texts it stores")
    run["process_wall_s"] = time.perf_counter() - start
    run["to_first_result_s"] = run.pop("printed_at") - launched
    return run


def _wall(cmd: Sequence[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, capture_output=True, text=True, check=True)
    return time.perf_counter() - start


def _phases(store: str, query: str, mode: str) -> dict[str, Any]:
    launched, start = time.time(), time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CHILD, store, query, mode], capture_output=True, text=True, check=True)
    run: dict[str, Any] = json.loads(out.stdout)
    run["process_wall_s"] = time.perf_counter() - start
    run["to_first_result_s"] = run.pop("printed_at") - launched  # launch to the table printed
    return run


def _median(runs: list[dict[str, Any]]) -> dict[str, Any]:
    keys = [k for k in runs[0] if k.endswith("_s")]
    return {**{k: v for k, v in runs[0].items() if not k.endswith("_s")},
            **{k: round(statistics.median(r[k] for r in runs), 3) for k in keys}}


def build_store(folder: Path) -> tuple[str, str]:
    """A store of the first LoCoMo conversation made with the default embedder, and a question about it."""
    from omnimem import Memory
    from omnimem.contract.loaders import load_locomo

    data = Path(os.environ.get("OMNIMEM_DATA_DIR", "../shared/data")) / "locomo" / "locomo10.json"
    dialogues = load_locomo(data, conversation="conv-26")
    with Memory(folder) as mem:
        for d in dialogues:
            mem.add_dialogue(d.turns, user_id=d.user_id, session_id=d.session_id)
        mem.search("What did Caroline research?")  # builds BM25, so closing saves every index (a used store)
    return str(folder), "What did Caroline research?"


def measure(store: str, query: str, repeats: int, add_only: bool = False) -> dict[str, Any]:
    search = [sys.executable, "-m", "omnimem.cli", "search", query, "--store", store, "--limit", "5"]
    runs: dict[str, list[Any]] = {"interpreter": [], "command": [], "cli": [], "own_model": [], "add_cli": [],
                                  "add_torch": []}
    for n in range(repeats):  # interleaved, so load changes hit every variant alike
        runs["interpreter"].append(_wall([sys.executable, "-c", "pass"]))
        if not add_only:
            runs["command"].append(_wall(search))
            runs["cli"].append(_phases(store, query, "cli"))
            runs["own_model"].append(_phases(store, query, "own"))
        runs["add_cli"].append(_add(store, NEW_TEXTS[(2 * n) % len(NEW_TEXTS)], "cli"))
        runs["add_torch"].append(_add(store, NEW_TEXTS[(2 * n + 1) % len(NEW_TEXTS)], "own"))
    add_cli, add_torch = _median(runs["add_cli"]), _median(runs["add_torch"])
    result: dict[str, Any] = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "repeats": repeats,
        "load_average": list(os.getloadavg()),
        "extras_installed": extras_installed(),
        "interpreter_s": round(statistics.median(runs["interpreter"]), 3),
        "add_phases_cli": add_cli, "add_phases_torch": add_torch,
        "add_speedup_vs_torch": round(add_torch["to_first_result_s"] / add_cli["to_first_result_s"], 2),
    }
    if not add_only:
        cli, own = _median(runs["cli"]), _median(runs["own_model"])
        result.update({"omnimem_search_command_wall_s": round(statistics.median(runs["command"]), 3),
                       "phases_cli": cli, "phases_store_model_writable": own,
                       "speedup_vs_store_model": round(own["to_first_result_s"] / cli["to_first_result_s"], 2)})
    return result


EXTRA_MODULES = {"server": "fastapi", "mcp": "fastmcp", "llm": "openai", "graph": "spacy", "vision": "PIL",
                 "audio": "faster_whisper", "postgres": "psycopg", "langchain": "langchain_core",
                 "llamaindex": "llama_index", "otel": "opentelemetry.sdk"}


def extras_installed() -> list[str]:
    """The extras whose main package this interpreter has ([]: the plain ``pip install omnimem``)."""
    import importlib.util

    def found(module: str) -> bool:
        try:
            return importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:  # a parent package is missing
            return False

    return [extra for extra, module in EXTRA_MODULES.items() if found(module)]


def _installed(r: dict[str, Any]) -> str:
    extras = r.get("extras_installed")
    if extras is None:
        return ""
    return ("Installed: the plain `pip install omnimem`, no extra." if not extras
            else f"Installed: omnimem with the extras {', '.join(extras)}.")


def table(r: dict[str, Any]) -> str:
    if "phases_cli" not in r:
        return "\n".join(["# Cold start of `omnimem add`", "",
                          f"`{r['command']}` ({r['date']}, {r['repeats']} repeats, load average "
                          f"{r['load_average'][0]:.2f}). Interpreter alone: {r['interpreter_s']} s.",
                          *_add_table(r)]) + "\n"
    rows = [("`omnimem search` today (read-only, query model: " + r["phases_cli"]["embedder"] + ")", r["phases_cli"]),
            ("before: writable, the store's model (" + r["phases_store_model_writable"]["embedder"] + ")",
             r["phases_store_model_writable"])]
    lines = [
        "# Cold start of `omnimem search`, by phase (medians, seconds)", "",
        f"`{r['command']}` ({r['date']}, {r['repeats']} repeats, load average {r['load_average'][0]:.2f}). "
        f"Interpreter alone (`python -c pass`): {r['interpreter_s']} s. The command as a user runs it "
        f"(`python -m omnimem.cli search ... --limit 5`), whole process: **{r['omnimem_search_command_wall_s']} s**. "
        + _installed(r),
        "",
        "| how the store is opened | launch to result printed | process wall (with exit) | import omnimem.cli | "
        "open store + indexes | model load | search | print | torch imported |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for label, p in rows:
        lines.append(f"| {label} | **{p['to_first_result_s']}** | {p['process_wall_s']} | {p['import_s']} | "
                     f"{p['open_s']} | {p['model_load_s']} | {p['search_s']} | {p['print_s']} | "
                     f"{'yes' if p['torch_imported'] else 'no'} |")
    lines += ["", f"Same run, fresh processes: the read-only ONNX path is {r['speedup_vs_store_model']}x faster to "
              "the printed result. The process then spends a while tearing down its imported modules (interpreter "
              "finalization, after the output): counted in the process wall, not in what the user waits for."]
    return "\n".join([*lines, *_add_table(r)]) + "\n"


def _add_table(r: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    if "add_phases_cli" in r:
        lines += ["", "## `omnimem add` of one new text (medians, seconds)", "",
                  "| embedder | launch to stored | process wall (with exit) | import omnimem.cli | open store | "
                  "add (model load + embed + store) | torch imported |", "|---|---|---|---|---|---|---|"]
        for p in (r["add_phases_cli"], r["add_phases_torch"]):
            lines.append(f"| {p['embedder']} | **{p['to_first_result_s']}** | {p['process_wall_s']} | "
                         f"{p['import_s']} | {p['open_s']} | {p['add_s']} | {'yes' if p['torch_imported'] else 'no'} |")
        lines += ["", f"Same run: `omnimem add` with the numpy MiniLM is {r['add_speedup_vs_torch']}x faster to the "
                  "stored unit than with the torch one (the same vectors to float rounding: tests/cli/test_cli_oneshot.py)."]
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks cold-start", description=__doc__.splitlines()[0])
    parser.add_argument("store", nargs="?", help="A store folder (default: build one from LoCoMo conv-26).")
    parser.add_argument("query", nargs="?", default="What did Caroline research?")
    parser.add_argument("--repeats", type=int, default=5, help="At most 5 (each add needs a new text).")
    parser.add_argument("--add-only", action="store_true", help="Measure only `omnimem add` (cold-start-add.*).")
    parser.add_argument("--out", type=Path, default=None, help="Write cold-start.json and cold-start.md here.")
    args = parser.parse_args(argv)
    if not 1 <= args.repeats <= len(NEW_TEXTS) // 2:
        parser.error(f"--repeats must be 1 to {len(NEW_TEXTS) // 2}")
    with tempfile.TemporaryDirectory(prefix="omnimem-cold-") as tmp:
        store, query = (args.store, args.query) if args.store else build_store(Path(tmp) / "mem")
        result = measure(store, query, args.repeats, add_only=args.add_only)
    result["command"] = "python -m benchmarks cold-start" + (f" {args.store} {args.query!r}" if args.store else "") \
        + (f" --repeats {args.repeats}" if args.repeats != 5 else "") + (" --add-only" if args.add_only else "") \
        + (f" --out {args.out}" if args.out else "")
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        name = "cold-start-add" if args.add_only else "cold-start"
        (args.out / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
        (args.out / f"{name}.md").write_text(table(result))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
