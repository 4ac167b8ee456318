"""Reliability summary: the nightly-size reliability tests, with their numbers written down.

    python -m benchmarks reliability            # nightly sizes (about 5 minutes on 2 cores)
    python -m benchmarks reliability --mode ci  # the CI sizes, for a quick look

Runs ``pytest tests/reliability`` with ``OMNIMEM_RELIABILITY=<mode>`` (>= 50
SIGKILLed ingest processes, then every user forgotten and the whole store
grepped for their text, two writers and two readers for 30 s, 400 rounds of
add-then-forget while two threads search the same units, a larger
hypothesis state machine, larger negative-eval corpora). The tests record what
they measured; this script adds the configuration, versions, machine and date
and writes ``results/reliability.json`` (raw) and ``results/RELIABILITY.md``
(the table). Known bugs are tests marked ``xfail(strict=True)``: they are
listed, not hidden.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from benchmarks.harness.paths import RESULTS, ROOT
from benchmarks.reliability import writers_md

PACKAGES = ("omnimem", "numpy", "faiss-cpu", "bm25s", "hypothesis", "pytest", "spacy")


def versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "sqlite": sqlite3.sqlite_version}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def machine() -> dict[str, Any]:
    mem_kb = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_kb = int(line.split()[1])
    except OSError:
        pass
    return {"platform": platform.platform(), "machine": platform.machine(), "cpus": os.cpu_count(),
            "memory_gib": round(mem_kb / 2**20, 1) if mem_kb else None}


def outcomes(junit: Path) -> list[dict[str, Any]]:
    tests = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        outcome, message = "passed", None
        for child in case:
            if child.tag in ("failure", "error"):
                outcome, message = "failed", (child.get("message") or "")[:300]
            elif child.tag == "skipped":
                kind = child.get("type", "")
                outcome = "xfailed" if "xfail" in kind else "skipped"
                message = child.get("message")
        tests.append({"test": f"{case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name')}",
                      "outcome": outcome, "seconds": round(float(case.get("time", 0)), 1), "message": message})
    return tests


def run(mode: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        report, junit = Path(tmp) / "report.json", Path(tmp) / "junit.xml"
        env = {**os.environ, "OMNIMEM_RELIABILITY": mode, "OMNIMEM_RELIABILITY_REPORT": str(report)}
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rxXf", "tests/reliability",
               f"--junitxml={junit}"]
        started = time.perf_counter()
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - started
        results = json.loads(report.read_text()) if report.exists() else {}
        tests = outcomes(junit) if junit.exists() else []
    return {"exit_code": proc.returncode, "wall_s": round(wall, 1), "results": results, "tests": tests,
            "pytest_tail": proc.stdout[-2000:]}


def table(data: dict[str, Any]) -> str:
    r = data["results"]
    crash, conc, fs = r.get("crash", {}), r.get("concurrency", {}), r.get("forget_search", {})
    neg, graph, sm = r.get("negative", {}), r.get("negative_graph", {}), r.get("state_machine", {})
    rows = [
        ("Crash: ingest processes SIGKILLed, store reopened and checked",
         f"{crash.get('kills')} of {crash.get('iterations')} survived "
         f"({', '.join(f'{k} {v}' for k, v in crash.get('kills_by_point', {}).items())})"),
        ("Crash: units reported committed / later forgotten", f"{crash.get('units_reported_committed')} / "
                                                               f"{crash.get('units_forgotten')}"),
        ("Crash: writes lost, half-present units, index or integrity problems",
         crash.get("writes_lost_or_inconsistent")),
        ("Crash: forgotten content left outside the cold tier (after reopen)",
         crash.get("forgotten_residue_outside_cold_tier")),
        ("Crash: forgotten content left in the cold tier after an interrupted forget + retry",
         crash.get("forgotten_residue_in_cold_tier")),
        ("Crash: cold-tier files without a unit after reopen (writes killed before COMMIT)",
         crash.get("cold_files_without_a_unit_after_reopen")),
        ("Crash + forget: files holding any forgotten text after forgetting every user (whole store grepped)",
         f"{crash.get('files_with_forgotten_text_after_forgetting_all')} "
         f"({crash.get('units_forgotten_at_the_end')} units forgotten at the end)"),
        ("Concurrency: 2 writer + 2 reader processes, seconds", conc.get("seconds")),
        ("Concurrency: writes / forgotten under load / searches",
         f"{conc.get('writes')} / {conc.get('forgotten_under_load')} / {conc.get('searches')}"),
        ("Concurrency: errors reaching the user", conc.get("errors")),
        ("Concurrency: writes lost", conc.get("writes_lost")),
        ("Concurrency: units of another user seen by a reader", conc.get("leaks_across_users")),
        ("Forget during search: add-then-forget rounds / searches (2 threads, second handle) / hits read in full",
         f"{fs.get('forget_rounds')} / {fs.get('searches')} / {fs.get('hits_with_full_text')}"),
        ("Forget during search: errors reaching the user (was about 3% NotFoundError)", fs.get("errors")),
        ("Negative evals (dense, BM25, hybrid, as_of, include_superseded): searches",
         f"{neg.get('searches')} over {neg.get('units')} units, {neg.get('forgotten')} forgotten"),
        ("Negative evals: forgotten units returned (search and export)",
         (neg.get("forgotten_returned") or 0) + len(neg.get("export_problems", []))),
        ("Negative evals: units returned for another scope", neg.get("leaks_across_scopes")),
        ("Negative evals, knowledge graph: searches", f"{graph.get('searches')} over {graph.get('units')} units"),
        ("Negative evals, knowledge graph: forgotten returned / other scopes",
         f"{graph.get('forgotten_returned')} / {graph.get('leaks_across_scopes')}"),
        ("State machine (hypothesis): runs / checked steps / failures",
         f"{sm.get('runs')} / {sm.get('checked_steps')} / {sm.get('failures')}"),
    ]
    lines = [
        "# Reliability", "",
        f"{data['date'][:10]}, mode `{data['config']['mode']}`, {data['machine']['cpus']} CPUs, "
        f"omnimem {data['versions']['omnimem']}, SQLite {data['versions']['sqlite']}; "
        f"wall time {data['wall_s']} s; pytest exit code {data['exit_code']}.", "",
        "| check | result |", "|---|---|", *[f"| {k} | {v} |" for k, v in rows], "",
    ]
    known = [t for t in data["tests"] if t["outcome"] == "xfailed"]
    if known:
        lines += ["Known bugs, each a failing test marked `xfail(strict=True)` until fixed:", "",
                  *[f"- `{t['test']}`: {t['message']}" for t in known], ""]
    failed = [t for t in data["tests"] if t["outcome"] == "failed"]
    if failed:
        lines += ["Failed:", "", *[f"- `{t['test']}`: {t['message']}" for t in failed], ""]
    lines += ["Command:", "", "```bash", data["command"], "```", "",
              "Raw numbers, versions and per-test times: `reliability.json`.", ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks reliability", description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("nightly", "ci"), default="nightly")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    outcome = run(args.mode)
    data = {
        "command": "python -m benchmarks reliability" + ("" if args.mode == "nightly" else " --mode ci"),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "config": {"mode": args.mode, "sizes": outcome["results"].get("sizes")},
        "versions": versions(), "machine": machine(), **outcome,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "reliability.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    (args.out / "RELIABILITY.md").write_text(table(data), encoding="utf-8")
    writers_md.update(args.out)  # the writers' section (dialogue-stall, ingest-race) from their own result files
    print(table(data))
    sys.exit(outcome["exit_code"])


if __name__ == "__main__":
    main()
