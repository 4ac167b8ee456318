"""What ``omnimem hook claude-code`` costs: a prompt's recall and a session's capture, in fresh processes.

    python -m benchmarks hook-cost [--turns 400] [--prompts 8] [--data-dir DIR] [--out benchmarks/results]

Claude Code starts the hook as a new process for every event, so every number here is a whole process,
launch to exit, as Claude Code waits for it (``python -m omnimem.cli hook claude-code``, the event JSON on
stdin, the default embedder):

- a session is written as a Claude Code transcript: the first ``--turns`` turns of LoCoMo's first
  conversation as user and assistant entries, with a tool call and a 3,000-character tool result after
  every 20th turn; ``SessionEnd`` stores it into a new store (``capture, new store``), again
  (``capture, nothing new``: the idempotent path) and after 10 more entries (``capture, 10 new turns``);
- ``UserPromptSubmit`` then recalls for ``--prompts`` of the conversation's questions from the folder
  store: the first prompt after the capture (``cold``: the saved indexes and the query model read for the
  first time) and the median of the others (``warm``: each a new process, the OS file cache warm);
- the same prompts through a running ``omnimem serve`` (``--url``): the server holds the model and the
  indexes, so a prompt costs a process start, the CLI's imports and one HTTP search.

Writes ``hook-cost.json`` (with the command) and ``hook-cost.md`` under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from benchmarks.harness.datasets import load_locomo
from benchmarks.harness.server import cli_env, serving

USER, PROJECT = "bench", "/work/acme"
TOOL_EVERY, TOOL_CHARS, GROWN = 20, 3_000, 10


def transcript_entries(turns: Sequence[tuple[str, str]], start: datetime) -> list[dict[str, Any]]:
    """Claude Code transcript entries for (speaker role, text) turns, a tool call and result every 20th turn."""
    entries: list[dict[str, Any]] = []
    for n, (role, text) in enumerate(turns):
        when = (start + timedelta(seconds=30 * n)).isoformat().replace("+00:00", "Z")
        ident = str(uuid.uuid5(uuid.NAMESPACE_URL, f"hook-cost/{n}"))
        content: Any = text if role == "user" else [{"type": "text", "text": text}]
        entries.append({"type": role, "uuid": ident, "timestamp": when, "sessionId": "bench-session",
                        "isSidechain": False, "message": {"role": role, "content": content}})
        if n % TOOL_EVERY == TOOL_EVERY - 1:
            call = f"toolu_{n}"
            entries.append({"type": "assistant", "uuid": f"{ident}-call", "timestamp": when, "message": {
                "role": "assistant", "content": [{"type": "tool_use", "id": call, "name": "Bash",
                                                  "input": {"command": f"grep -rn note-{n} notes/"}}]}})
            entries.append({"type": "user", "uuid": f"{ident}-result", "timestamp": when, "message": {
                "role": "user", "content": [{"type": "tool_result", "tool_use_id": call,
                                             "content": (f"notes/{n}.md: {text} " * 60)[:TOOL_CHARS]}]}})
    return entries


def conversation(data_dir: Path, turns: int) -> tuple[list[tuple[str, str]], list[str]]:
    """LoCoMo conv-26's first ``turns`` turns (its first speaker as the user) and its questions."""
    sample = load_locomo(data_dir / "locomo" / "locomo10.json")[0]
    said = [("user" if t.speaker == sample.speaker_a else "assistant", t.text)
            for s in sample.sessions for t in s.turns][:turns]
    return said, [q.question for q in sample.qa]


def hook(event: dict[str, Any], args: list[str], env: dict[str, str]) -> tuple[float, str, float]:
    """One hook process: its wall time (launch to exit), stdout, and the CPU time it used (user + system: what
    it costs whatever else the machine runs)."""
    before, start = _children_cpu(), time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "omnimem.cli", "hook", "claude-code", *args],
                          input=json.dumps(event), capture_output=True, text=True, env=env, timeout=600)
    wall, cpu = time.perf_counter() - start, _children_cpu() - before
    if done.returncode != 0 or "error:" in done.stderr or "no memory recalled" in done.stderr:
        raise RuntimeError(f"the hook failed: {done.stderr.strip()[-500:]}")
    return wall, done.stdout, cpu


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def recalls(prompts: Sequence[str], args: list[str], env: dict[str, str]) -> dict[str, Any]:
    walls, cpus, chars = [], [], []
    for n, prompt in enumerate(prompts):
        event = {"session_id": f"prompt-{n}", "cwd": PROJECT, "hook_event_name": "UserPromptSubmit",
                 "prompt": prompt}
        wall, out, cpu = hook(event, args, env)
        walls.append(wall)
        cpus.append(cpu)
        chars.append(len(json.loads(out)["hookSpecificOutput"]["additionalContext"]) if out.strip() else 0)
    return {"cold_s": round(walls[0], 3), "warm_median_s": round(statistics.median(walls[1:]), 3),
            "warm_max_s": round(max(walls[1:]), 3), "cold_cpu_s": round(cpus[0], 3),
            "warm_cpu_median_s": round(statistics.median(cpus[1:]), 3), "prompts": len(walls),
            "context_chars_median": int(statistics.median(chars)), "empty": sum(c == 0 for c in chars)}


def measure(data_dir: Path, turns: int, prompts: int, work: Path) -> dict[str, Any]:
    said, questions = conversation(data_dir, turns + GROWN)
    start = datetime(2026, 12, 1, 10, tzinfo=timezone.utc)
    entries = transcript_entries(said, start)
    cut = next(i for i, e in enumerate(entries) if e["uuid"] == str(uuid.uuid5(uuid.NAMESPACE_URL,
                                                                                   f"hook-cost/{turns}")))
    transcript, store = work / "transcript.jsonl", work / "store"
    transcript.write_text("".join(json.dumps(e) + "\n" for e in entries[:cut]))
    env = {**cli_env(), "OMNIMEM_USER_ID": USER}
    end = {"session_id": "bench-session", "transcript_path": str(transcript), "cwd": PROJECT,
           "hook_event_name": "SessionEnd", "reason": "other"}
    local = ["--store", str(store)]
    first, told, first_cpu = hook(end, local, env)
    again, _, again_cpu = hook(end, local, env)
    with transcript.open("a") as out:
        out.write("".join(json.dumps(e) + "\n" for e in entries[cut:]))
    grown, grew, grown_cpu = hook(end, local, env)
    interpreter = statistics.median(_wall([sys.executable, "-c", "pass"]) for _ in range(5))
    asked = questions[:prompts]
    local_recall = recalls(asked, local, env)
    with serving(["--store", str(store)], "--no-auth", "--rate-limit", "0") as port:
        server_recall = recalls(asked, ["--url", f"http://127.0.0.1:{port}"], env)
    return {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "load_average": list(os.getloadavg()),
            "turns": turns, "grown_new_turns": GROWN, "transcript_entries": cut, "capture_stored": told.strip(),
            "grown_stored": grew.strip(),
            "capture_new_store_s": round(first, 3), "capture_nothing_new_s": round(again, 3),
            "capture_grown_s": round(grown, 3), "capture_new_store_cpu_s": round(first_cpu, 3),
            "capture_nothing_new_cpu_s": round(again_cpu, 3), "capture_grown_cpu_s": round(grown_cpu, 3),
            "interpreter_s": round(interpreter, 3),
            "recall_folder": local_recall, "recall_server": server_recall}


def _wall(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - start


def table(r: dict[str, Any]) -> str:
    f, s = r["recall_folder"], r["recall_server"]
    return "\n".join([
        "# What `omnimem hook claude-code` costs (seconds, whole processes)", "",
        f"`{r['command']}` ({r['date']}, load average {r['load_average'][0]:.2f}, 2 shared cores). Every number "
        "is one process, launch to exit, as Claude Code starts it for each event; the interpreter alone "
        f"(`python -c pass`) takes {r['interpreter_s']} s.", "",
        "## Before each prompt (`UserPromptSubmit`)", "",
        "| where the memory is | cold (first prompt) | warm (median) | warm (slowest) | CPU cold | CPU warm "
        "(median) | prompts | context characters (median) |", "|---|---|---|---|---|---|---|---|",
        f"| a store folder (`--store`) | {f['cold_s']} | **{f['warm_median_s']}** | {f['warm_max_s']} | "
        f"{f['cold_cpu_s']} | {f['warm_cpu_median_s']} | {f['prompts']} | {f['context_chars_median']} |",
        f"| a running `omnimem serve` (`--url`) | {s['cold_s']} | **{s['warm_median_s']}** | {s['warm_max_s']} | "
        f"{s['cold_cpu_s']} | {s['warm_cpu_median_s']} | {s['prompts']} | {s['context_chars_median']} |", "",
        "Wall time is what the prompt waits for; CPU time (user + system of the hook's process) is what it "
        "costs, whatever else the machine runs (the server's own search time is not in the `--url` CPU).", "",
        "## At the end of a session (`SessionEnd`, `PreCompact`)", "",
        f"A transcript of {r['turns']} turns ({r['transcript_entries']} entries, tool calls and results among "
        "them).", "",
        "| capture | wall | CPU | what it stored |", "|---|---|---|---|",
        f"| into a new store | {r['capture_new_store_s']} | {r['capture_new_store_cpu_s']} | "
        f"{_stored(r['capture_stored'])} |",
        f"| the same transcript again | {r['capture_nothing_new_s']} | {r['capture_nothing_new_cpu_s']} | "
        "nothing new |",
        f"| after {GROWN} more turns | {r['capture_grown_s']} | {r['capture_grown_cpu_s']} | "
        f"{_stored(r['grown_stored'])} |", "",
    ]) + "\n"


def _stored(line: str) -> str:
    """The hook's line without the paths: ``12 of 44 turns stored (...)``."""
    return line.removeprefix("omnimem: ").split(" from ")[0]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks hook-cost", description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=400, help="Turns of the captured session.")
    parser.add_argument("--prompts", type=int, default=8, help="Prompts recalled for (the first is the cold one).")
    parser.add_argument("--data-dir", type=Path, default=Path(os.environ.get("OMNIMEM_DATA_DIR", "../shared/data")))
    parser.add_argument("--out", type=Path, default=None, help="Write hook-cost.json and hook-cost.md here.")
    args = parser.parse_args(argv)
    if args.turns < 1 or args.prompts < 2:
        parser.error("--turns must be at least 1 and --prompts at least 2")
    with tempfile.TemporaryDirectory(prefix="omnimem-hook-") as tmp:
        result = measure(args.data_dir, args.turns, args.prompts, Path(tmp))
    result["command"] = "python -m benchmarks hook-cost" + (f" --turns {args.turns}" if args.turns != 400 else "") \
        + (f" --prompts {args.prompts}" if args.prompts != 8 else "") + (f" --out {args.out}" if args.out else "")
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "hook-cost.json").write_text(json.dumps(result, indent=2) + "\n")
        (args.out / "hook-cost.md").write_text(table(result))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
