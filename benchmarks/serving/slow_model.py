"""A slow model and another user's searches: plain search latency while planned searches wait for the model.

A real ``omnimem serve`` (``--search-concurrency 2``) on a fresh store seeded with synthetic
dialogue, with an OpenAI-compatible model on loopback that answers every request after
``--model-seconds`` (30). Another user's plain searches (no planner) are timed one at a time, in
``--rounds`` (3) rounds of an idle block and a block while ``--planned`` (6) searches with
``planner="llm"`` are kept in flight, all waiting in the model (each sent again as soon as it
returns), then a last idle block: interleaved, so the shared machine's drift hits both alike.
Reported: p50/p95 of the idle and the loaded searches and the loaded p95 over the idle p95; the
target is within 3x. A planned search takes a search slot only for its ranking and packing
(:mod:`omnimem.contract.caller`), so the model's wait holds none.

    python -m benchmarks slow-model [--planned 6] [--searches 30] [--rounds 3] [--model-seconds 30]

Writes slow-model.json (with the command) and slow-model.md under benchmarks/results/.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from benchmarks.harness import synthetic
from benchmarks.harness.paths import ROOT
from benchmarks.harness.server import create_key, serving

RESULTS = ROOT / "benchmarks" / "results"


def plan_reply(body: dict[str, Any]) -> str:
    """What the model answers a planner: an expansion to the analysis, "adequate" to the check."""
    system = str(body.get("messages", [{}])[0].get("content", ""))
    if "adequate" in system:
        return '{"adequate": true}'
    return json.dumps({"needs": "the people and the events named", "queries": ["what happened", "who was there"]})


class SlowModel:
    """An OpenAI-compatible ``/v1/chat/completions`` on a free loopback port that answers each request after
    ``delay`` seconds, or at once after :meth:`release`. ``in_flight`` counts the requests it holds."""

    def __init__(self, delay: float, reply: Callable[[dict[str, Any]], str] = plan_reply) -> None:
        self.delay, self.reply = delay, reply
        self.in_flight = self.received = 0
        self._released = threading.Event()
        self._changed = threading.Condition()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, name="slow-model", daemon=True)

    def __enter__(self) -> SlowModel:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
        self._server.shutdown()
        self._server.server_close()

    def release(self) -> None:
        """Answer every request held, and every later one, at once."""
        self._released.set()

    def hold(self) -> None:
        """Hold requests again: each is answered after ``delay`` or at the next :meth:`release`."""
        self._released.clear()

    def wait_in_flight(self, count: int, timeout: float) -> bool:
        """Whether ``count`` requests are held at once within ``timeout`` seconds."""
        with self._changed:
            return self._changed.wait_for(lambda: self.in_flight >= count, timeout)

    def _count(self, step: int) -> None:
        with self._changed:
            self.in_flight += step
            self.received += max(step, 0)
            self._changed.notify_all()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        model = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                model._count(1)
                try:
                    model._released.wait(model.delay)
                finally:
                    model._count(-1)
                content = model.reply(body)
                data = json.dumps({
                    "id": "chatcmpl-slow", "object": "chat.completion", "created": 0, "model": "slow-model",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                 "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 50, "completion_tokens": 20, "total_tokens": 70}}).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the caller gave up at its deadline and closed the connection
                    pass

        return Handler


def llm_env(model: SlowModel) -> dict[str, str]:
    """The server's model settings: the slow model, with room for every planned search's call at once."""
    return {"OMNIMEM_LLM_BASE_URL": model.url, "OMNIMEM_LLM_MODEL": "slow-model", "OMNIMEM_LLM_API_KEY": "sk-bench",
            "OMNIMEM_LLM_CONCURRENCY": "16"}


def timed(client: httpx.Client, questions: Sequence[tuple[str, str]], seconds: float) -> list[float]:
    """Plain searches one at a time (ms each), until the questions or ``seconds`` run out."""
    out: list[float] = []
    end = time.monotonic() + seconds
    for user, question in questions:
        if time.monotonic() > end:
            break
        started = time.perf_counter()
        answer = client.post("/v1/search", json={"query": question, "user_id": user})
        answer.raise_for_status()
        out.append((time.perf_counter() - started) * 1000)
    return out


def pcts(ms: list[float]) -> dict[str, float]:
    ordered = sorted(ms)
    return {"n": len(ms), "p50_ms": round(statistics.median(ordered), 2),
            "p95_ms": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 2)}


@contextmanager
def planning(url: str, headers: dict[str, str], count: int, questions: Sequence[tuple[str, str]],
             notes: list[str | None]) -> Iterator[None]:
    """``count`` planned searches kept in flight (each sent again as soon as it returns) until the block ends."""
    stop = threading.Event()

    def keep_planning(user: str, question: str) -> None:
        with httpx.Client(base_url=url, headers=headers, timeout=120) as own:
            while not stop.is_set():
                answer = own.post("/v1/search", json={"query": question, "user_id": user, "planner": "llm"})
                notes.append(answer.json().get("plan", {}).get("note") if answer.is_success
                             else f"HTTP {answer.status_code}")

    threads = [threading.Thread(target=keep_planning, args=questions[i % len(questions)], daemon=True)
               for i in range(count)]
    for thread in threads:
        thread.start()
    try:
        yield
    finally:
        stop.set()
        for thread in threads:
            thread.join(120)


def run(planned: int, searches: int, rounds: int, model_seconds: float, seed_turns: int, embedder: str,
        concurrency: int, phase_seconds: float, warm_seconds: float) -> dict[str, Any]:
    """Rounds of an idle block and a loaded block of plain searches (interleaved, so drift hits both), after
    ``warm_seconds`` of searches not timed, then a last idle block."""
    from omnimem import Memory

    questions = synthetic.queries((2 * rounds + 3) * searches, seed_turns)
    blocks = [questions[i * searches: (i + 1) * searches] for i in range(2 * rounds + 3)]
    idle: list[float] = []
    loaded: list[float] = []
    per_round: list[dict[str, Any]] = []
    notes: list[str | None] = []
    with tempfile.TemporaryDirectory() as tmp, SlowModel(model_seconds) as model:
        store = Path(tmp) / "store"
        with Memory(store, embedder=embedder) as mem:
            for user, session, turns in synthetic.sessions(seed_turns):
                mem.add_dialogue(turns, user_id=user, session_id=session)
        key = create_key(["--store", str(store)], name="bench", role="admin")
        headers = {"Authorization": f"Bearer {key}"}
        options = ("--rate-limit", "0", "--embedder", embedder, "--search-concurrency", str(concurrency))
        with serving(["--store", str(store)], *options, env=llm_env(model)) as port, \
                httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=120) as client:
            # warm, with questions of their own (a question asked before is faster): the first minute is slower
            timed(client, synthetic.queries(10_000, seed_turns, seed=2), warm_seconds)
            for r in range(rounds):
                quiet = timed(client, blocks[2 * r], phase_seconds)
                model.hold()
                with planning(f"http://127.0.0.1:{port}", headers, planned, blocks[-2], notes):
                    reached = model.wait_in_flight(planned, 30)  # every planned search waits in the model
                    busy = timed(client, blocks[2 * r + 1], phase_seconds)
                    held = model.in_flight
                    model.release()
                idle += quiet
                loaded += busy
                per_round.append({"idle": pcts(quiet), "loaded": pcts(busy), "planned_in_model_at_start": reached,
                                  "planned_in_model_at_end": held})
            idle += timed(client, blocks[2 * rounds], phase_seconds)
    idle_p, loaded_p = pcts(idle), pcts(loaded)
    ratio = round(loaded_p["p95_ms"] / idle_p["p95_ms"], 2)
    return {"idle": idle_p, "loaded": loaded_p, "loaded_p95_over_idle_p95": ratio,
            "rounds": per_round, "model_requests": model.received, "planned_notes": sorted({str(n) for n in notes})}


def markdown(doc: dict[str, Any]) -> str:
    r, c = doc["result"], doc["config"]
    lines = [
        "# A slow model and another user's searches", "",
        f"`{doc['command']}`", "",
        f"`omnimem serve --search-concurrency {c['concurrency']}`, embedder {c['embedder']}, {c['seed_turns']} "
        f"seeded turns; a {c['model_seconds']:g} s model; plain searches timed one at a time, {c['rounds']} rounds "
        f"of an idle block and a block with {c['planned']} planned searches in flight, then a last idle block.", "",
        "| plain searches | n | p50 ms | p95 ms |", "|---|---:|---:|---:|",
        f"| idle | {r['idle']['n']} | {r['idle']['p50_ms']} | {r['idle']['p95_ms']} |",
        f"| {c['planned']} planned searches in flight | {r['loaded']['n']} | {r['loaded']['p50_ms']} | "
        f"{r['loaded']['p95_ms']} |", "",
        f"Loaded p95 over idle p95: **{r['loaded_p95_over_idle_p95']}x** (target: within 3x). Planned searches "
        "waiting in the model at the start and the end of each loaded block: "
        + ", ".join(f"{x['planned_in_model_at_start'] and c['planned']}/{x['planned_in_model_at_end']}"
                    for x in r["rounds"]) + ".", "",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks slow-model", description=__doc__.splitlines()[0])
    parser.add_argument("--planned", type=int, default=6, help="planned searches kept in flight")
    parser.add_argument("--searches", type=int, default=30, help="plain searches timed per block")
    parser.add_argument("--rounds", type=int, default=3, help="idle and loaded blocks, interleaved")
    parser.add_argument("--model-seconds", type=float, default=30.0, help="how long the model takes to answer")
    parser.add_argument("--seed-turns", type=int, default=300)
    parser.add_argument("--embedder", default="all-MiniLM-L6-v2")
    parser.add_argument("--concurrency", type=int, default=2, help="the server's --search-concurrency")
    parser.add_argument("--phase-seconds", type=float, default=60.0, help="each block's time limit")
    parser.add_argument("--warm-seconds", type=float, default=60.0, help="searches not timed after the start")
    parser.add_argument("--out", type=Path, default=RESULTS / "slow-model.json")
    args = parser.parse_args(argv)
    command = "python -m benchmarks slow-model " + shlex.join(list(argv if argv is not None else sys.argv[1:]))
    result = run(args.planned, args.searches, args.rounds, args.model_seconds, args.seed_turns, args.embedder,
                 args.concurrency, args.phase_seconds, args.warm_seconds)
    doc = {"benchmark": "slow-model", "command": command.strip(),
           "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
           "config": {"planned": args.planned, "searches": args.searches, "rounds": args.rounds,
                      "model_seconds": args.model_seconds, "seed_turns": args.seed_turns,
                      "warm_seconds": args.warm_seconds, "embedder": args.embedder, "concurrency": args.concurrency},
           "result": result}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    args.out.with_suffix(".md").write_text(markdown(doc), encoding="utf-8")
    print(markdown(doc))


if __name__ == "__main__":
    main()
