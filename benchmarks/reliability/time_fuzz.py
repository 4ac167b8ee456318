"""Relative times read against a ``now`` at the edges of the calendar, through a real ``omnimem serve``.

Every combination of a query phrase naming a time ("last week", "two months
ago", "in March", "in 9999", ...) and a ``now`` from year 1 to 9999 (naive,
UTC and far offsets) is sent as ``POST /v1/search``, one after another on one
kept-alive connection, to an ``omnimem serve`` process over a store holding
notes dated at both ends of the calendar: on SQLite and, with the
``postgres`` extra, on a private pgserver PostgreSQL. Counted per backend:
answers by status, 5xx answers, and connection failures (a request that met
a closed, reset or silent connection; the probe then sends it again on a new one, and status
``0`` counts those that got no answer there either). Before the fix
each of these windows was an ``OverflowError`` and a 500, after which the
server closed the connection.

    python -m benchmarks time-fuzz                  # writes results/time-fuzz.json
    python -m benchmarks time-fuzz --backends sqlite
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.harness import rawhttp
from benchmarks.harness.backends import database_server
from benchmarks.harness.paths import RESULTS
from benchmarks.harness.server import create_key, serving
from omnimem import Memory

PHRASES = ("what did we do last week", "this week", "this month", "the past year", "previous weekend",
           "yesterday", "today", "a day ago", "two days ago", "a week ago", "two months ago",
           "a couple of weeks ago", "a few years ago", "999 years ago", "12 days ago", "in March", "during may",
           "since December", "of feb", "in jan 0001", "in December 9999", "in March 2023", "in 0000", "in 9999",
           "in 2023", "last month", "last year", "three years ago", "notes from last weekend")
NOWS = ("0001-01-01", "0001-01-01T00:00:00Z", "0001-01-01T00:00:00+14:00", "0001-01-01T23:59:59-12:00",
        "0001-01-08", "0001-03-01T00:00:00+05:30", "2024-03-10T15:30:00Z", "9999-12-01", "9999-12-31",
        "9999-12-31T23:59:59.999999Z", "9999-12-31T23:59:59-12:00", "9999-12-31T00:00:00+14:00")
NOTES = (("The first note of the calendar", "0001-01-01T12:00:00Z"),
         ("A note from early in year one", "0001-02-15T08:00:00+05:00"),
         ("We hiked the ridge trail", "2024-03-04T10:00:00Z"),
         ("The last note of the calendar", "9999-12-31T00:00:00Z"))


def _seed(memory: Memory, target: list[str]) -> str:
    """The notes, and a key for user ``u`` (made with ``omnimem keys create`` in the store the server opens)."""
    for text, when in NOTES:
        memory.add(text, user_id="u", time=when)
    return create_key(target, name="time-fuzz", role="write", user_id="u")


def _exchange(sock: socket.socket, request: bytes) -> int:
    """Send ``request`` and read its answer whole; its status, or 0 when the connection failed or fell silent."""
    try:
        sock.sendall(request)
        buffer = b""
        while b"\r\n\r\n" not in buffer:
            chunk = sock.recv(65536)
            if not chunk:
                return 0
            buffer += chunk
        head, _, body = buffer.partition(b"\r\n\r\n")
        fields = (line.partition(b":") for line in head.split(b"\r\n")[1:])
        length = next((int(v) for n, _, v in fields if n.strip().lower() == b"content-length"), 0)
        while len(body) < length:
            chunk = sock.recv(65536)
            if not chunk:
                return 0
            body += chunk
        return int(head.split(b" ", 2)[1])
    except OSError:  # reset, or no answer within the socket's timeout
        return 0


def _probe(port: int, key: str) -> dict[str, Any]:
    """Every phrase x now on one kept-alive connection (a new one after a failure)."""
    bodies = [{"query": q, "now": n, "user_id": "u"} for q in PHRASES for n in NOWS]
    statuses: Counter[int] = Counter()
    failures = 0
    examples: list[dict[str, Any]] = []
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    for body in bodies:
        status = _exchange(sock, rawhttp.encode("POST", "/v1/search", port, key, body))
        if status == 0:  # the request met a broken connection: counted, and sent again on a new one
            failures += 1
            sock.close()
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            status = _exchange(sock, rawhttp.encode("POST", "/v1/search", port, key, body))
        statuses[status] += 1
        if status >= 500 and len(examples) < 5:
            examples.append(body)
    sock.close()
    return {"requests": len(bodies), "statuses": {str(s): n for s, n in sorted(statuses.items())},
            "server_errors": sum(n for s, n in statuses.items() if s >= 500), "connection_failures": failures,
            "server_error_examples": examples}


def run(backends: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"phrases": len(PHRASES), "nows": list(NOWS), "combinations": len(PHRASES) * len(NOWS),
                           "backends": {}}
    folder = Path(tempfile.mkdtemp(prefix="omnimem-time-fuzz-"))
    try:
        if "sqlite" in backends:
            target = ["--store", str(folder / "store")]
            with Memory(folder / "store", embedder="fake") as memory:
                key = _seed(memory, target)
            with serving(target, "--rate-limit", "0") as port:
                out["backends"]["sqlite"] = _probe(port, key)
        if "postgresql" in backends:
            with database_server("pgserver") as databases:
                assert databases is not None
                url = databases.fresh()
                with Memory(url=url, embedder="fake") as memory:
                    key = _seed(memory, ["--url", url])
                with serving(["--url", url], "--rate-limit", "0") as port:
                    out["backends"]["postgresql"] = _probe(port, key)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    out["server_errors"] = sum(b["server_errors"] for b in out["backends"].values())
    out["connection_failures"] = sum(b["connection_failures"] for b in out["backends"].values())
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks time-fuzz", description=__doc__.split("\n")[0])
    parser.add_argument("--backends", default="sqlite,postgresql", help="comma-separated: sqlite, postgresql")
    parser.add_argument("--out", type=Path, default=RESULTS / "time-fuzz.json")
    args = parser.parse_args(argv)
    result = run([b.strip() for b in args.backends.split(",") if b.strip()])
    result["command"] = " ".join(["python -m benchmarks time-fuzz", *(argv or [])])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("combinations", "server_errors", "connection_failures")}))


if __name__ == "__main__":
    main()
