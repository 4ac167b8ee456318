"""MCP latency: how long an agent waits for ``add`` and ``search`` over MCP, against the facade in-process.

The store is on disk with the real all-MiniLM-L6-v2 and holds LoCoMo
conversation conv-26; the measured adds are the turns of conv-30 (new
content, each one stored). Every call is timed three ways in the same run,
interleaved so machine load hits all three alike: ``Memory.add`` / ``search``
directly, the MCP tool through fastmcp's in-process Client, and the MCP tool
over streamable HTTP (uvicorn on a loopback port, a bearer key checked on
every request, fastmcp's Client). After the run every acknowledged add must
be retrievable by id (``lost`` must be 0).

    python -m benchmarks mcp-latency [--adds 60] [--searches 60] [--out benchmarks/results]

Writes mcp-latency.json (raw) and mcp-latency.md (table) under --out.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from omnimem import Memory, __version__
from omnimem.contract.loaders import load_locomo

KEY = "omk_bench_secret"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks mcp-latency", description=__doc__.splitlines()[0])
    parser.add_argument("--adds", type=int, default=60, help="adds per way (3 ways)")
    parser.add_argument("--searches", type=int, default=60, help="searches per way")
    parser.add_argument("--data-dir", default=os.environ.get("OMNIMEM_DATA_DIR", "../shared/data"))
    parser.add_argument("--out", default="benchmarks/results")
    args = parser.parse_args(argv)

    from anyio.from_thread import start_blocking_portal
    from fastmcp import Client

    from omnimem.errors import AuthError
    from omnimem.mcp import Caller, create_mcp

    locomo = Path(args.data_dir) / "locomo" / "locomo10.json"
    new_turns = [t for d in load_locomo(locomo, conversation="conv-30") for t in d.turns][: 3 * args.adds]
    questions = [q["question"] for q in json.loads(locomo.read_text())[0]["qa"]][: args.searches]

    def authorize(token: str | None) -> Caller:
        if token != KEY:
            raise AuthError("unknown key")
        return Caller("key:bench", "admin")  # store-wide: it adds to conv-30 and searches conv-26

    timings: dict[str, list[float]] = {f"{op} {way}": [] for op in ("add", "search")
                                       for way in ("facade", "mcp in-process", "mcp http")}
    acknowledged: list[str] = []
    with tempfile.TemporaryDirectory() as tmp, Memory(Path(tmp) / "mem") as mem:
        for d in load_locomo(locomo, conversation="conv-26"):
            mem.add_dialogue(d.turns, user_id=d.user_id, session_id=d.session_id)
        local = create_mcp(mem)
        with serve(create_mcp(mem, authorize=authorize)) as url, start_blocking_portal() as portal:
            in_process: Client[Any] = Client(local)
            over_http: Client[Any] = Client(url, auth=KEY)
            with portal.wrap_async_context_manager(in_process), portal.wrap_async_context_manager(over_http):
                def tool(client: Client[Any], name: str, arguments: dict[str, Any]) -> Any:
                    result = portal.call(lambda: client.call_tool(name, arguments, raise_on_error=False))
                    assert not result.is_error, result.content[0].text
                    return result.structured_content

                ways: dict[str, Callable[[str, dict[str, Any]], Any]] = {
                    "facade": lambda name, a: _facade(mem, name, a),
                    "mcp in-process": lambda name, a: tool(in_process, name, a),
                    "mcp http": lambda name, a: tool(over_http, name, a),
                }
                for way in ways.values():  # warm up: models, BM25, connections
                    way("search", {"query": "warm up", "user_id": "conv-26"})
                for i in range(args.adds):
                    for j, (way, call) in enumerate(ways.items()):
                        turn = new_turns[3 * i + j]
                        arguments = {"text": turn["text"], "speaker": turn["speaker"], "time": turn["time"],
                                     "source_id": turn["id"], "user_id": "conv-30"}
                        started = time.perf_counter()
                        result = call("add", arguments)
                        timings[f"add {way}"].append(time.perf_counter() - started)
                        if result["accepted"]:
                            acknowledged.append(result["id"])
                for question in questions:
                    for way, call in ways.items():
                        started = time.perf_counter()
                        call("search", {"query": question, "user_id": "conv-26"})
                        timings[f"search {way}"].append(time.perf_counter() - started)
        lost = sum(1 for unit in acknowledged if not _exists(mem, unit))

    rows = [{"call": name, "n": len(values), "p50_ms": _ms(statistics.median(values)),
             "p95_ms": _ms(_percentile(values, 0.95)), "mean_ms": _ms(statistics.fmean(values))}
            for name, values in timings.items()]
    base = {r["call"].split()[0]: r["p50_ms"] for r in rows if r["call"].endswith("facade")}
    for row in rows:
        row["p50_vs_facade"] = round(row["p50_ms"] / base[row["call"].split()[0]], 2)
    result = {
        "benchmark": "mcp-latency",
        "command": f"python -m benchmarks mcp-latency --adds {args.adds} --searches {args.searches}",
        "config": {"adds": args.adds, "searches": args.searches, "embedder": "all-MiniLM-L6-v2",
                   "store": "on disk, LoCoMo conv-26 loaded", "added": "LoCoMo conv-30 turns"},
        "results": rows,
        "acknowledged_adds": len(acknowledged),
        "lost": lost,
        "omnimem": __version__,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "load_avg": os.getloadavg()},
        "date": datetime.now(timezone.utc).isoformat(),
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "mcp-latency.json").write_text(json.dumps(result, indent=2) + "\n")
    table = ["| call | n | p50 ms | p95 ms | mean ms | p50 / facade |", "|---|---|---|---|---|---|"]
    table += [f"| {r['call']} | {r['n']} | {r['p50_ms']} | {r['p95_ms']} | {r['mean_ms']} | {r['p50_vs_facade']} |"
              for r in rows]
    load = ", ".join(f"{x:.1f}" for x in result["machine"]["load_avg"])
    (out / "mcp-latency.md").write_text(
        "# MCP latency\n\n"
        "How long an agent waits for `add` and `search`: the facade in-process, the MCP tool through fastmcp's "
        "in-process Client, and over streamable HTTP on loopback with a bearer key; calls interleaved in one run "
        f"(all-MiniLM-L6-v2, store on disk holding LoCoMo conv-26; the adds are conv-30 turns). `add` calls no "
        f"LLM. Acknowledged adds: {len(acknowledged)}, lost: {lost}. Load average during the run: {load} on "
        f"{os.cpu_count()} shared cores, so read the ratios rather than the milliseconds.\n\n"
        + "\n".join(table) + f"\n\nCommand: `{result['command']}`\n"
    )
    for row in rows:
        print(f"{row['call']:<22} p50 {row['p50_ms']:>8} ms  p95 {row['p95_ms']:>8} ms  x{row['p50_vs_facade']}")
    print(f"acknowledged {len(acknowledged)}, lost {lost}")


def _facade(mem: Memory, name: str, arguments: dict[str, Any]) -> Any:
    if name == "add":
        return mem.add(**arguments).to_dict()
    return mem.search(arguments["query"], user_id=arguments["user_id"])


def _exists(mem: Memory, unit_id: str) -> bool:
    from omnimem.errors import NotFoundError

    try:
        mem.get(unit_id)
    except NotFoundError:
        return False
    return True


@contextmanager
def serve(mcp: Any) -> Iterator[str]:
    """The MCP app mounted at /mcp of a FastAPI app, on a free loopback port; yields its URL."""
    import uvicorn
    from fastapi import FastAPI

    mcp_app = mcp.http_app(path="/")
    app = FastAPI(lifespan=mcp_app.lifespan)
    app.mount("/mcp", mcp_app)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}/mcp/"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 2)


if __name__ == "__main__":
    main()
