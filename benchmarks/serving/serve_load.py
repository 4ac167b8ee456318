"""Loopback load test of ``omnimem serve``: N concurrent clients, a mix of search and add, for S seconds.

The server is a real ``omnimem serve`` process on a fresh store (seeded with
synthetic dialogue), reached with an API key over 127.0.0.1. Each client is a
kept-alive connection that sends ``/v1/search`` or ``/v1/units`` (an add;
``--add-share``, 20%) as soon as its previous answer is in. All clients run in
one thread of raw sockets with prepared requests (:mod:`benchmarks.harness.rawhttp`):
the clients share the server's cores, so a thread with an ``httpx.Client``
per client spent on them CPU that the timings then counted as the server's.
Reported: requests/s, p50/p95/p99 latency per kind, errors (any non-2xx or
transport failure), and, after the run, how many acknowledged adds are
missing (each is fetched back by id). For ratios measured in the same run
(the machine is shared, so absolute times drift): before the load, the same
searches (``--one-at-a-time``, 200) are timed one at a time in-process through
the facade and then one at a time over HTTP (the server's overhead per
request: the ratio of the two p50s), and the p50 under load is given relative
to the in-process one.
Also before the load, with ``--burst N``: lone adds one at a time, then
bursts of N adds written out at the same moment on N connections opened before,
and the burst p95 relative to the lone p95 (concurrent adds are written as
one group, :mod:`omnimem.engine.writer`; each burst add is fetched back too).

    python -m benchmarks serve-load --clients 32 --seconds 60
    python -m benchmarks serve-load --clients 32 --seconds 45 --add-share 0.3 --burst 24
    python -m benchmarks serve-load --clients 32 --seconds 45 --add-share 0.3 --burst 24 --storm-seconds 30

After the load, with ``--storm-seconds``: a write storm, all clients but one adding
without pause while one searches at a steady pace (:mod:`benchmarks.serving.write_storm`).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx

from benchmarks.harness import rawhttp, synthetic
from benchmarks.harness.paths import RESULTS, ROOT
from benchmarks.harness.server import create_key, free_port
from benchmarks.serving import write_storm
from omnimem.server.app import DEFAULT_SEARCH_CONCURRENCY


@dataclass
class Tally:
    """What one client saw."""

    search_ms: list[float] = field(default_factory=list)
    add_ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    acknowledged: list[str] = field(default_factory=list)
    not_novel: int = 0


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))], 2)


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}


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


def _load(port: int, key: str, clients: int, deadline: float, add_share: float, users: int,
          questions: list[tuple[str, str]]) -> Tally:
    """``clients`` kept-alive connections, each sending its next request as soon as its answer is in."""
    tally = Tally()
    rngs = [random.Random(seed) for seed in range(clients)]
    counts = [0] * clients
    adding = [False] * clients

    def next_request(conn: rawhttp.Conn) -> bytes | None:
        n = conn.tag
        if time.monotonic() >= deadline:
            return None
        rng = rngs[n]
        counts[n] += 1
        adding[n] = rng.random() < add_share
        if adding[n]:
            text = synthetic.turn_text(rng, rng.sample(synthetic.NOUNS, 3), datetime(2023, 1, 1))
            body: dict[str, Any] = {"text": f"{text} (client {n} note {counts[n]})", "user_id": f"user-{rng.randrange(users)}"}
            return rawhttp.encode("POST", "/v1/units", port, key, body)
        question, user = rng.choice(questions)
        return rawhttp.encode("POST", "/v1/search", port, key, {"query": question, "user_id": user})

    def answered(conn: rawhttp.Conn, answer: rawhttp.Answer) -> bytes | None:
        path = "/v1/units" if adding[conn.tag] else "/v1/search"
        if not 200 <= answer.status < 300:
            tally.errors.append(f"{path}: {answer.status} {answer.body[:120]!r}")
        elif adding[conn.tag]:
            tally.add_ms.append(answer.ms)
            result = answer.json()
            if result["accepted"]:
                tally.acknowledged.append(result["id"])
            else:
                tally.not_novel += 1
        else:
            tally.search_ms.append(answer.ms)
        return next_request(conn)

    conns = rawhttp.connect(port, clients, warm=rawhttp.encode("GET", "/healthz", port, key))
    try:
        rawhttp.run(conns, answered, first=next_request)
    finally:
        for conn in conns:
            conn.close()
    return tally


def _one_at_a_time(port: int, key: str, questions: list[tuple[str, str]]) -> list[float]:
    """The searches over one kept-alive connection, one after the other (milliseconds each)."""
    times: list[float] = []

    def note(conn: rawhttp.Conn, answer: rawhttp.Answer) -> None:
        if answer.status != 200:
            raise RuntimeError(f"search failed: {answer.status} {answer.body[:200]!r}")
        times.append(answer.ms)

    conns = rawhttp.connect(port, 1)
    for question, user in questions:
        request = rawhttp.encode("POST", "/v1/search", port, key, {"query": question, "user_id": user})
        rawhttp.run(conns, note, first=lambda conn: request)
    conns[0].close()
    return times


def _model_floor(lone: list[str], bursts: list[list[str]], embedder: str) -> dict[str, Any]:
    """The model alone, in this process, after the burst (the server idle): one embedding call per lone add's
    text and one per burst's texts, as the server's writer makes them. A burst's adds cannot return before
    their group's call, so ``ratio`` bounds what any batching gets from this model on this machine."""
    from omnimem.embed import create_embedder

    model = create_embedder(embedder)
    model.embed(lone[:2] + bursts[0][:2])  # loaded and warm before anything is timed
    one: list[float] = []
    group: list[float] = []
    for n, texts in enumerate(bursts):
        for text in lone[n::len(bursts)]:
            start = time.perf_counter()
            model.embed([text])
            one.append(1000 * (time.perf_counter() - start))
        start = time.perf_counter()
        model.embed(texts)
        group.append(1000 * (time.perf_counter() - start))
    return {"one_text_p50_ms": _percentile(one, 50), "one_text_p95_ms": _percentile(one, 95),
            "burst_texts_p50_ms": _percentile(group, 50), "burst_texts_max_ms": _percentile(group, 100),
            "ratio_burst_to_one_p50": _ratio(_percentile(group, 50), _percentile(one, 50)),
            "burst_size": len(bursts[0]), "calls": {"one_text": len(one), "burst": len(group)}}


def _burst(url: str, port: int, key: str, size: int, rounds: int, lone: int, embedder: str) -> dict[str, Any]:
    """``lone`` adds one at a time, then ``rounds`` bursts of ``size`` adds written out at the same moment."""
    rng = random.Random(7)
    headers = {"Authorization": f"Bearer {key}"}

    texts: dict[str, str] = {}

    def body(tag: str) -> bytes:
        text = synthetic.turn_text(rng, rng.sample(synthetic.NOUNS, 3), datetime(2023, 2, 1))
        texts[tag] = f"{text} ({tag})"
        return rawhttp.encode("POST", "/v1/units", port, key, {"text": texts[tag], "user_id": f"burst-{tag}"})

    acknowledged: list[str] = []
    errors: list[str] = []
    lone_ms: list[float] = []
    burst_ms: list[float] = []

    def answered(into: list[float]) -> Any:
        def note(conn: rawhttp.Conn, answer: rawhttp.Answer) -> None:
            if not 200 <= answer.status < 300:
                errors.append(f"add: {answer.status}")
                return
            into.append(answer.ms)
            if answer.json()["accepted"]:
                acknowledged.append(answer.json()["id"])
        return note

    warm = rawhttp.encode("GET", "/healthz", port, key)
    conns = rawhttp.connect(port, 1, warm=warm)
    for n in range(lone):
        rawhttp.run(conns, answered(lone_ms), first=lambda conn: body(f"lone {n}"))
    conns[0].close()
    for r in range(rounds):
        conns = rawhttp.connect(port, size, warm=warm)  # connected first: the burst times adds, not connects
        bodies = [body(f"burst {r}.{i}") for i in range(size)]
        rawhttp.run(conns, answered(burst_ms), first=lambda conn: bodies[conn.tag])
        for conn in conns:
            conn.close()
    with httpx.Client(base_url=url, headers=headers, timeout=60) as check:
        lost = [i for i in acknowledged if check.get(f"/v1/units/{i}").status_code != 200]
        writer = check.get("/v1/stats").json().get("writer")
    floor = _model_floor([texts[f"lone {n}"] for n in range(lone)],
                         [[texts[f"burst {r}.{i}"] for i in range(size)] for r in range(rounds)], embedder)
    return {
        "size": size, "rounds": rounds,
        "lone_add": {"count": len(lone_ms), "p50_ms": _percentile(lone_ms, 50), "p95_ms": _percentile(lone_ms, 95)},
        "burst_add": {"count": len(burst_ms), "p50_ms": _percentile(burst_ms, 50),
                      "p95_ms": _percentile(burst_ms, 95), "max_ms": _percentile(burst_ms, 100)},
        "ratio_burst_to_lone_p95": _ratio(_percentile(burst_ms, 95), _percentile(lone_ms, 95)),
        "acknowledged": len(acknowledged), "lost": len(lost), "errors": errors[:10],
        "writer_after": writer, "model_alone": floor,
    }


def run(clients: int, seconds: float, seed_turns: int, workers: int, embedder: str, add_share: float,
        command: str = "", burst: int = 0, burst_rounds: int = 3, one_at_a_time: int = 200,
        storm_seconds: float = 0.0, storm_pace: float = 0.1) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix="omnimem-serve-load-"))
    try:
        return _run_in(folder, clients, seconds, seed_turns, workers, embedder, add_share, command, burst,
                       burst_rounds, one_at_a_time, storm_seconds, storm_pace)
    finally:  # the store is the run's scratch: nothing of it is kept (the figures are in the JSON)
        shutil.rmtree(folder, ignore_errors=True)


def _run_in(folder: Path, clients: int, seconds: float, seed_turns: int, workers: int, embedder: str,
            add_share: float, command: str, burst: int, burst_rounds: int, one_at_a_time: int,
            storm_seconds: float = 0.0, storm_pace: float = 0.1) -> dict[str, Any]:
    from omnimem import Memory

    store = folder / "store"
    with Memory(store, embedder=embedder) as mem:  # seed before the server starts
        for user, session, turns in synthetic.sessions(seed_turns):
            mem.add_dialogue(turns, user_id=user, session_id=session)
        seeded = mem.count_units()
    key = create_key(["--store", str(store)], name="load", role="admin")  # as an operator makes one
    users = synthetic.users_for(seed_turns)
    questions = synthetic.queries(500, seed_turns)
    load_before = os.getloadavg()[0]
    inproc = _in_process_search(store, embedder, questions[:one_at_a_time])
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = _start_server(store, port, workers, embedder)
    try:
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=300) as one:
            for question, user in questions[:20]:  # load the model and the indexes before timing
                one.post("/v1/search", json={"query": question, "user_id": user}).raise_for_status()
        sequential = _one_at_a_time(port, key, questions[:one_at_a_time])
        bursts = _burst(url, port, key, burst, burst_rounds, lone=20, embedder=embedder) if burst else None
        started = time.monotonic()
        cpu_before = time.process_time()
        tallies = [_load(port, key, clients, started + seconds, add_share, users, questions)]
        wall = time.monotonic() - started
        client_cpu = time.process_time() - cpu_before
        load_during = os.getloadavg()[0]
        acknowledged = [i for t in tallies for i in t.acknowledged]
        storm = None
        if storm_seconds > 0:  # one client searching at a steady pace while all the others add
            storm = write_storm.storm(port, key, clients - 1, storm_seconds, storm_pace, users, questions, _percentile)
            storm_ids = storm.pop("acknowledged_ids")
            acknowledged = acknowledged + storm_ids  # fetched back with the load's
        lost = []
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as check:
            for unit_id in acknowledged:
                if check.get(f"/v1/units/{unit_id}").status_code != 200:
                    lost.append(unit_id)
            final_units = check.get("/v1/units", params={"limit": 1}).json()["total"]
            if storm is not None:
                storm["lost"] = len(set(lost) & set(storm_ids))
                storm["ratio_search_p95_to_idle_p95"] = _ratio(storm["search"]["p95_ms"], _percentile(sequential, 95))
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
                   "add_share": add_share, "seed_turns": seed_turns, "seeded_units": seeded, "auth": "API key",
                   "search_concurrency": DEFAULT_SEARCH_CONCURRENCY},
        "requests": len(search) + len(adds) + len(errors),
        "client": {"kind": "one thread of raw sockets, kept-alive connections, prepared requests (benchmarks/harness/rawhttp.py)",
                   "cpu_s_during_load": round(client_cpu, 2),
                   "cpu_ms_per_request": round(1000 * client_cpu / max(1, len(search) + len(adds) + len(errors)), 3)},
        "requests_per_s": round((len(search) + len(adds)) / wall, 1),
        "wall_s": round(wall, 1),
        "search": {"count": len(search), "p50_ms": http_p50, "p95_ms": _percentile(search, 95),
                   "p99_ms": _percentile(search, 99), "mean_ms": round(statistics.fmean(search), 2) if search else None},
        "add": {"count": len(adds), "p50_ms": _percentile(adds, 50), "p95_ms": _percentile(adds, 95),
                "p99_ms": _percentile(adds, 99), "acknowledged": sum(len(t.acknowledged) for t in tallies),
                "not_novel": sum(t.not_novel for t in tallies)},
        "errors": len(errors), "error_samples": errors[:10], "writer_after_load": writer,
        "lost_adds": len(lost), "units_after": final_units,
        "in_process_search": inproc,
        "http_search_one_at_a_time": {"count": len(sequential), "p50_ms": _percentile(sequential, 50),
                                      "p95_ms": _percentile(sequential, 95)},
        "ratio_http_one_at_a_time_to_in_process_p50": _ratio(_percentile(sequential, 50), inproc["p50_ms"]),
        "ratio_http_under_load_to_in_process_p50": _ratio(http_p50, inproc["p50_ms"]),
        "burst": bursts,
        "storm": storm,
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
        f"{c['seeded_units']} units seeded, every request with an API key; the server's defaults"
        + (f" (at most {c['search_concurrency']} searches at once, adds never wait for them)."
           if c.get("search_concurrency") else ".") + f" {_client_line(result)}",
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
        *write_storm.lines(result.get("storm")),
        "",
    ])


def _client_line(result: dict[str, Any]) -> str:
    client = result.get("client")
    if not client:
        return ""
    return (f"Clients: {client['kind']} (CPU of the client process during the load: {client['cpu_s_during_load']} s "
            f"for {result['requests']} requests, {client['cpu_ms_per_request']} ms each).")


def _floor_lines(floor: dict[str, Any] | None) -> list[str]:
    if not floor:
        return []
    return [f"- the model alone, same run, in the client process with the server idle: one call embedding a lone "
            f"add's text p50 {floor['one_text_p50_ms']} ms, one call embedding a burst's {floor['burst_size']} "
            f"texts p50 {floor['burst_texts_p50_ms']} ms: **{floor['ratio_burst_to_one_p50']}x** (a burst's adds "
            "return after their group's call, so this bounds the burst ratio from below on this machine)"]


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
        *_floor_lines(burst.get("model_alone")),
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
    parser.add_argument("--storm-seconds", type=float, default=0.0,
                        help="after the load: this long, all clients but one add while one searches at a steady pace")
    parser.add_argument("--storm-pace", type=float, default=0.1, help="the steady client's pause between searches")
    parser.add_argument("--out", type=Path, default=RESULTS / "serve-load.json")
    args = parser.parse_args(argv)
    if args.storm_seconds < 0 or args.storm_pace < 0:
        parser.error("--storm-seconds and --storm-pace must be 0 or more")
    given = sys.argv[1:] if argv is None else argv
    command = "python -m benchmarks serve-load " + shlex.join(given)
    result = run(args.clients, args.seconds, args.seed_turns, args.workers, args.embedder, args.add_share, command,
                 args.burst, args.burst_rounds, args.one_at_a_time, args.storm_seconds, args.storm_pace)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    args.out.with_suffix(".md").write_text(table(result))
    print(table(result))
    if result["errors"] or result["lost_adds"] or (result["burst"] and (result["burst"]["lost"]
                                                                         or result["burst"]["errors"])) or (
            result["storm"] and result["storm"]["error_count"]):
        sys.exit(1)


if __name__ == "__main__":
    main()
