"""Reads during a write storm: one client searching at a steady pace while every other client adds.

The closed-loop load of ``serve-load`` (every client sends its next request as
soon as its answer is in) measures throughput: with 32 clients a request waits
behind the others whatever the server does (mean latency = clients / requests
per second), so its searches cannot come near their idle latency. This phase
asks what a storm of writes does to the reads of a client that is not itself
part of the flood: ``adders`` kept-alive connections add without pause
(closed loop, as in the load), and one more connection sends one search, waits
for its answer, pauses ``pace`` seconds, and searches again. Reported: that
client's search p50/p95 and the ratio of its p95 to the p95 of the same
server's searches one at a time with no load (measured in the same run, before
the load), the adds' p50/p95 and how many were acknowledged (each is fetched
back afterwards with the load's).
"""

from __future__ import annotations

import random
import threading
import time
from datetime import datetime
from typing import Any, Callable

from benchmarks.harness import rawhttp, synthetic


def storm(port: int, key: str, adders: int, seconds: float, pace: float, users: int,
          questions: list[tuple[str, str]], percentile: Callable[[list[float], float], float | None]) -> dict[str, Any]:
    """Run the storm for ``seconds``; what the searching client and the adders saw."""
    deadline = time.monotonic() + seconds
    add_ms: list[float] = []
    acknowledged: list[str] = []
    errors: list[str] = []
    rngs = [random.Random(1000 + n) for n in range(adders)]
    counts = [0] * adders

    def next_add(conn: rawhttp.Conn) -> bytes | None:
        n = conn.tag
        if time.monotonic() >= deadline:
            return None
        counts[n] += 1
        rng = rngs[n]
        text = synthetic.turn_text(rng, rng.sample(synthetic.NOUNS, 3), datetime(2023, 3, 1))
        return rawhttp.encode("POST", "/v1/units", port, key,
                              {"text": f"{text} (storm {n} note {counts[n]})", "user_id": f"user-{rng.randrange(users)}"})

    def added(conn: rawhttp.Conn, answer: rawhttp.Answer) -> bytes | None:
        if not 200 <= answer.status < 300:
            errors.append(f"add: {answer.status} {answer.body[:120]!r}")
        else:
            add_ms.append(answer.ms)
            result = answer.json()
            if result["accepted"]:
                acknowledged.append(result["id"])
        return next_add(conn)

    warm = rawhttp.encode("GET", "/healthz", port, key)
    add_conns = rawhttp.connect(port, adders, warm=warm)
    search_conn = rawhttp.connect(port, 1, warm=warm)
    flood = threading.Thread(target=rawhttp.run, args=(add_conns, added, next_add), daemon=True)
    search_ms: list[float] = []
    rng = random.Random(5)

    def searched(conn: rawhttp.Conn, answer: rawhttp.Answer) -> None:
        if not 200 <= answer.status < 300:
            errors.append(f"search: {answer.status} {answer.body[:120]!r}")
        else:
            search_ms.append(answer.ms)

    flood.start()
    try:
        time.sleep(min(1.0, seconds / 10))  # the storm is under way before the first timed search
        while time.monotonic() < deadline:
            question, user = rng.choice(questions)
            request = rawhttp.encode("POST", "/v1/search", port, key, {"query": question, "user_id": user})
            rawhttp.run(search_conn, searched, first=lambda conn: request)
            time.sleep(pace)
    finally:
        flood.join(timeout=seconds + 120)
        for conn in add_conns + search_conn:
            conn.close()
    return {"adders": adders, "seconds": seconds, "pace_s": pace,
            "search": {"count": len(search_ms), "p50_ms": percentile(search_ms, 50), "p95_ms": percentile(search_ms, 95)},
            "add": {"count": len(add_ms), "p50_ms": percentile(add_ms, 50), "p95_ms": percentile(add_ms, 95),
                    "acknowledged": len(acknowledged)},
            "acknowledged_ids": acknowledged, "errors": errors[:10], "error_count": len(errors)}


def lines(result: dict[str, Any] | None) -> list[str]:
    """The storm's part of the serve-load table."""
    if not result:
        return []
    s, a = result["search"], result["add"]
    return [
        "",
        f"Same run, after the load, a write storm: {result['adders']} clients adding without pause for "
        f"{result['seconds']:g} s while one more client searches, waits for the answer and pauses "
        f"{result['pace_s']:g} s:",
        "",
        "| | requests | p50 ms | p95 ms |",
        "|---|---:|---:|---:|",
        f"| search (the steady client) | {s['count']} | {s['p50_ms']} | {s['p95_ms']} |",
        f"| add (the storm) | {a['count']} | {a['p50_ms']} | {a['p95_ms']} |",
        "",
        f"- the steady client's search p95 is **{result['ratio_search_p95_to_idle_p95']}x** the p95 of searches one "
        f"at a time with no load (same run, before the load); storm adds acknowledged {a['acknowledged']}, "
        f"**lost {result['lost']}**, errors {result['error_count']}",
    ]
