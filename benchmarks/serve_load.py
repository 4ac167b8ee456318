"""Loopback load test of ``omnimem serve``: N concurrent clients, a mix of search and add, for S seconds.

The server is a real ``omnimem serve`` process on a fresh store (seeded with
synthetic dialogue), reached with an API key over 127.0.0.1. Each client is a
thread with its own ``httpx.Client`` (kept-alive connection) that sends
``/v1/search`` or ``/v1/units`` (an add; ``--add-share``, 20%) as fast as it is answered.
Reported: requests/s, p50/p95/p99 latency per kind, errors (any non-2xx or
transport failure), and, after the run, how many acknowledged adds are
missing (each is fetched back by id). For ratios measured in the same run
(the machine is shared, so absolute times drift): before the load, the same
searches (``--one-at-a-time``, 200) are timed one at a time in-process through
the facade and then one at a time over HTTP (the server's overhead per
request: the ratio of the two p50s), and the p50 under load is given relative
to the in-process one.
Also before the load, with ``--burst N``: lone adds one at a time, then
bursts of N adds sent at the same moment (N threads released by a barrier),
and the burst p95 relative to the lone p95 (concurrent adds are written as
one group, :mod:`omnimem.engine.writer`; each burst add is fetched back too).

    PYTHONPATH=. python -m benchmarks serve-load --clients 32 --seconds 60
    PYTHONPATH=. python -m benchmarks serve-load --clients 32 --seconds 45 --add-share 0.3 --burst 24
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx

from benchmarks import synthetic

RESULTS = Path(__file__).resolve().parent / "results"


@dataclass
class Tally:
    """What one client saw."""

    search_ms: list[float] = field(default_factory=list)
    add_ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    acknowledged: list[str] = field(default_factory=list)
    not_novel: int = 0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))], 2)


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "HF_HUB_OFFLINE": "1"}


def _create_key(store: Path) -> str:
    """A store-wide admin key, made the way an operator makes one: ``omnimem keys create``."""
    made = subprocess.run([sys.executable, "-m", "omnimem.cli", "keys", "create", "--name", "load", "--role", "admin",
                           "--store", str(store), "--json"], env=_env(), capture_output=True, text=True, check=True)
    return str(json.loads(made.stdout)["api_key"])


def _start_server(store: Path, port: int, workers: int, embedder: str) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "omnimem.cli", "serve", "--store", str(store), "--port", str(port),
               "--workers", str(workers), "--rate-limit", "0", "--embedder", embedder]
    process = subprocess.Popen(command, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return process
        except httpx.TransportError:
            pass
        if process.poll() is not None:
            raise RuntimeError(f"omnimem serve exited: {process.stderr.read().decode() if process.stderr else ''}")
        time.sleep(0.2)
    process.kill()
    raise RuntimeError("omnimem serve did not start within 180 s")


def _client(url: str, key: str, seed: int, deadline: float, add_share: float, users: int,
            questions: list[tuple[str, str]], tally: Tally) -> None:
    rng = random.Random(seed)
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=120) as client:
        n = 0
        while time.monotonic() < deadline:
            n += 1
            adding = rng.random() < add_share
            if adding:
                text = synthetic.turn_text(rng, rng.sample(synthetic.NOUNS, 3), datetime(2023, 1, 1))
                body: dict[str, Any] = {"text": f"{text} (client {seed} note {n})", "user_id": f"user-{rng.randrange(users)}"}
                path = "/v1/units"
            else:
                question, user = rng.choice(questions)
                body, path = {"query": question, "user_id": user}, "/v1/search"
            started = time.perf_counter()
            try:
                response = client.post(path, json=body)
            except httpx.HTTPError as exc:
                tally.errors.append(f"{path}: {type(exc).__name__}")
                continue
            elapsed = (time.perf_counter() - started) * 1000
            if response.is_error:
                tally.errors.append(f"{path}: {response.status_code} {response.text[:120]}")
                continue
            if adding:
                tally.add_ms.append(elapsed)
                result = response.json()
                if result["accepted"]:
                    tally.acknowledged.append(result["id"])
                else:
                    tally.not_novel += 1
            else:
                tally.search_ms.append(elapsed)


def _burst(url: str, key: str, size: int, rounds: int, lone: int) -> dict[str, Any]:
    """``lone`` adds one at a time, then ``rounds`` bursts of ``size`` adds released together by a barrier."""
    rng = random.Random(7)
    headers = {"Authorization": f"Bearer {key}"}

    def body(tag: str) -> dict[str, Any]:
        text = synthetic.turn_text(rng, rng.sample(synthetic.NOUNS, 3), datetime(2023, 2, 1))
        return {"text": f"{text} ({tag})", "user_id": f"burst-{tag}"}

    acknowledged: list[str] = []
    errors: list[str] = []
    lone_ms: list[float] = []
    with httpx.Client(base_url=url, headers=headers, timeout=120) as client:
        for n in range(lone):
            began = time.perf_counter()
            response = client.post("/v1/units", json=body(f"lone {n}"))
            lone_ms.append((time.perf_counter() - began) * 1000)
            if response.is_error:
                errors.append(f"lone: {response.status_code}")
            elif response.json()["accepted"]:
                acknowledged.append(response.json()["id"])
    burst_ms: list[float] = []
    lock = threading.Lock()
    for r in range(rounds):
        barrier = threading.Barrier(size)
        bodies = [body(f"burst {r}.{i}") for i in range(size)]

        def one(payload: dict[str, Any]) -> None:
            with httpx.Client(base_url=url, headers=headers, timeout=120) as own:
                own.get("/healthz")  # connected before the barrier: the burst times adds, not connects
                barrier.wait()
                began = time.perf_counter()
                response = own.post("/v1/units", json=payload)
                elapsed = (time.perf_counter() - began) * 1000
            with lock:
                if response.is_error:
                    errors.append(f"burst: {response.status_code}")
                    return
                burst_ms.append(elapsed)
                if response.json()["accepted"]:
                    acknowledged.append(response.json()["id"])

        threads = [threading.Thread(target=one, args=(b,)) for b in bodies]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    with httpx.Client(base_url=url, headers=headers, timeout=60) as check:
        lost = [i for i in acknowledged if check.get(f"/v1/units/{i}").status_code != 200]
        writer = check.get("/v1/stats").json().get("writer")
    return {
        "size": size, "rounds": rounds,
        "lone_add": {"count": len(lone_ms), "p50_ms": _percentile(lone_ms, 50), "p95_ms": _percentile(lone_ms, 95)},
        "burst_add": {"count": len(burst_ms), "p50_ms": _percentile(burst_ms, 50),
                      "p95_ms": _percentile(burst_ms, 95), "max_ms": _percentile(burst_ms, 100)},
        "ratio_burst_to_lone_p95": _ratio(_percentile(burst_ms, 95), _percentile(lone_ms, 95)),
        "acknowledged": len(acknowledged), "lost": len(lost), "errors": errors[:10],
        "writer_after": writer,
    }


def run(clients: int, seconds: float, seed_turns: int, workers: int, embedder: str, add_share: float,
        command: str = "", burst: int = 0, burst_rounds: int = 3, one_at_a_time: int = 200) -> dict[str, Any]:
    from omnimem import Memory

    folder = Path(tempfile.mkdtemp(prefix="omnimem-serve-load-"))
    store = folder / "store"
    with Memory(store, embedder=embedder) as mem:  # seed before the server starts
        for user, session, turns in synthetic.sessions(seed_turns):
            mem.add_dialogue(turns, user_id=user, session_id=session)
        seeded = mem.count_units()
    key = _create_key(store)
    users = synthetic.users_for(seed_turns)
    questions = synthetic.queries(500, seed_turns)
    load_before = os.getloadavg()[0]
    inproc = _in_process_search(store, embedder, questions[:one_at_a_time])
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    server = _start_server(store, port, workers, embedder)
    tallies = [Tally() for _ in range(clients)]
    try:
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=300) as one:
            for question, user in questions[:20]:  # load the model and the indexes before timing
                one.post("/v1/search", json={"query": question, "user_id": user}).raise_for_status()
            sequential = []
            for question, user in questions[:one_at_a_time]:
                began = time.perf_counter()
                one.post("/v1/search", json={"query": question, "user_id": user}).raise_for_status()
                sequential.append((time.perf_counter() - began) * 1000)
        bursts = _burst(url, key, burst, burst_rounds, lone=20) if burst else None
        started = time.monotonic()
        deadline = started + seconds
        threads = [threading.Thread(target=_client, args=(url, key, i, deadline, add_share, users, questions,
                                                          tallies[i])) for i in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.monotonic() - started
        load_during = os.getloadavg()[0]
        acknowledged = [i for t in tallies for i in t.acknowledged]
        lost = []
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as check:
            for unit_id in acknowledged:
                if check.get(f"/v1/units/{unit_id}").status_code != 200:
                    lost.append(unit_id)
            final_units = check.get("/v1/units", params={"limit": 1}).json()["total"]
            writer = check.get("/v1/stats").json().get("writer")  # how the adds were grouped
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
    search = [v for t in tallies for v in t.search_ms]
    adds = [v for t in tallies for v in t.add_ms]
    errors = [e for t in tallies for e in t.errors]
    http_p50 = _percentile(search, 50)
    return {
        "benchmark": "serve-load",
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": command,
        "machine": f"{os.cpu_count()} CPU cores (shared), loopback, server and clients on the same machine",
        "load_average_1min": {"before": round(load_before, 1), "end_of_load": round(load_during, 1)},
        "config": {"clients": clients, "seconds": seconds, "workers": workers, "embedder": embedder,
                   "add_share": add_share, "seed_turns": seed_turns, "seeded_units": seeded, "auth": "API key"},
        "requests": len(search) + len(adds) + len(errors),
        "requests_per_s": round((len(search) + len(adds)) / wall, 1),
        "wall_s": round(wall, 1),
        "search": {"count": len(search), "p50_ms": http_p50, "p95_ms": _percentile(search, 95),
                   "p99_ms": _percentile(search, 99), "mean_ms": round(statistics.fmean(search), 2) if search else None},
        "add": {"count": len(adds), "p50_ms": _percentile(adds, 50), "p95_ms": _percentile(adds, 95),
                "p99_ms": _percentile(adds, 99), "acknowledged": len(acknowledged),
                "not_novel": sum(t.not_novel for t in tallies)},
        "errors": len(errors), "error_samples": errors[:10], "writer_after_load": writer,
        "lost_adds": len(lost), "units_after": final_units,
        "in_process_search": inproc,
        "http_search_one_at_a_time": {"count": len(sequential), "p50_ms": _percentile(sequential, 50),
                                      "p95_ms": _percentile(sequential, 95)},
        "ratio_http_one_at_a_time_to_in_process_p50": _ratio(_percentile(sequential, 50), inproc["p50_ms"]),
        "ratio_http_under_load_to_in_process_p50": _ratio(http_p50, inproc["p50_ms"]),
        "burst": bursts,
    }


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a and b else None


def _in_process_search(store: Path, embedder: str, questions: list[tuple[str, str]]) -> dict[str, Any]:
    """The same searches through the facade, one at a time, on the same store (no server, no load)."""
    from omnimem import Memory

    with Memory(store, embedder=embedder) as mem:
        for question, user in questions[:20]:
            mem.search(question, user_id=user)
        times = []
        for question, user in questions:
            started = time.perf_counter()
            mem.search(question, user_id=user)
            times.append((time.perf_counter() - started) * 1000)
    return {"count": len(times), "p50_ms": _percentile(times, 50), "p95_ms": _percentile(times, 95)}


def table(result: dict[str, Any]) -> str:
    s, a, c = result["search"], result["add"], result["config"]
    return "\n".join([
        "# serve-load: loopback HTTP load test",
        "",
        f"Command: `{result['command']}` ({result['when']}; {result['machine']}; 1-minute load average "
        f"{result['load_average_1min']['before']} before, {result['load_average_1min']['end_of_load']} at the end "
        "of the load: other work shares the cores, so one request alone waits for CPU too).",
        "",
        f"{c['clients']} clients for {c['seconds']:g} s, {int(100 - 100 * c['add_share'])}% search / "
        f"{int(100 * c['add_share'])}% add, {c['workers']} worker(s), embedder {c['embedder']}, "
        f"{c['seeded_units']} units seeded, every request with an API key.",
        "",
        "| | requests | p50 ms | p95 ms | p99 ms |",
        "|---|---:|---:|---:|---:|",
        f"| search | {s['count']} | {s['p50_ms']} | {s['p95_ms']} | {s['p99_ms']} |",
        f"| add | {a['count']} | {a['p50_ms']} | {a['p95_ms']} | {a['p99_ms']} |",
        "",
        f"- throughput: **{result['requests_per_s']} requests/s**; errors: **{result['errors']}**",
        f"- acknowledged adds: {a['acknowledged']} (+{a['not_novel']} answered 'not novel'), "
        f"**lost after the run: {result['lost_adds']}**",
        f"- writer after the load (adds through its queue, groups written, largest group): "
        f"{result.get('writer_after_load')}",
        f"- same run, before the load, {result['in_process_search']['count']} searches one at a time: in-process `Memory.search` p50 "
        f"{result['in_process_search']['p50_ms']} ms, over HTTP p50 {result['http_search_one_at_a_time']['p50_ms']} ms: "
        f"HTTP / in-process = **{result['ratio_http_one_at_a_time_to_in_process_p50']}**; under load the search "
        f"p50 is **{result['ratio_http_under_load_to_in_process_p50']}x** the in-process one "
        f"(queueing behind {c['clients']} clients)",
        *_burst_lines(result.get("burst")),
        "",
    ])


def _burst_lines(burst: dict[str, Any] | None) -> list[str]:
    if not burst:
        return []
    lone, many = burst["lone_add"], burst["burst_add"]
    return [
        "",
        f"Same run, before the load: {lone['count']} adds one at a time, then {burst['rounds']} bursts of "
        f"{burst['size']} adds released together ("
        f"{'the server writes concurrent adds as one group' if burst['writer_after'] else 'this server has no group commit'}):",
        "",
        "| | adds | p50 ms | p95 ms |",
        "|---|---:|---:|---:|",
        f"| lone add | {lone['count']} | {lone['p50_ms']} | {lone['p95_ms']} |",
        f"| add in a burst of {burst['size']} | {many['count']} | {many['p50_ms']} | {many['p95_ms']} |",
        "",
        f"- burst p95 / lone p95 = **{burst['ratio_burst_to_lone_p95']}x**; acknowledged {burst['acknowledged']}, "
        f"**lost {burst['lost']}**, errors {len(burst['errors'])}; the server's writer afterwards: "
        f"{burst['writer_after']}",
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks serve-load", description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--seed-turns", type=int, default=500)
    parser.add_argument("--add-share", type=float, default=0.2)
    parser.add_argument("--embedder", default="all-MiniLM-L6-v2")
    parser.add_argument("--burst", type=int, default=0, help="before the load: bursts of this many adds at once")
    parser.add_argument("--burst-rounds", type=int, default=3)
    parser.add_argument("--one-at-a-time", type=int, default=200, help="searches timed one at a time before the load")
    parser.add_argument("--out", type=Path, default=RESULTS / "serve-load.json")
    args = parser.parse_args(argv)
    given = sys.argv[1:] if argv is None else argv
    command = "PYTHONPATH=. python -m benchmarks serve-load " + shlex.join(given)
    result = run(args.clients, args.seconds, args.seed_turns, args.workers, args.embedder, args.add_share, command,
                 args.burst, args.burst_rounds, args.one_at_a_time)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    args.out.with_suffix(".md").write_text(table(result))
    print(table(result))
    if result["errors"] or result["lost_adds"] or (result["burst"] and (result["burst"]["lost"]
                                                                         or result["burst"]["errors"])):
        sys.exit(1)


if __name__ == "__main__":
    main()
