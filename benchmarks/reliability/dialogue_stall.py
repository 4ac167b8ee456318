"""Another user's adds while one user's large dialogue is written, through a real ``omnimem serve``.

A fresh store on disk is served by ``omnimem serve`` (one worker) on a free
loopback port. Each round times ``--lone`` adds of user ``small`` one after
the other (``POST /v1/units``, one kept-alive connection), then posts one
``--turns``-turn dialogue for user ``big`` (``POST /v1/dialogues``) from a
second connection and, while it runs, sends ``small``'s adds back to back;
then ``--lone`` more adds right after it (reported apart: the store is still
catching up on the dialogue). The figures to read: ``small``'s add p50 and
p95 during the dialogue against its lone p95 before the dialogues in the same
run (the ratio; the target is at most 3x), and how many of those adds
returned before the dialogue did (they were written between its batches).
Turns the novelty filter refused as redundant are counted (``not_novel``). Every acknowledged add
must be found by id afterwards (``lost`` must be 0).

    python -m benchmarks dialogue-stall                 # 20,000 turns, 2 rounds
    python -m benchmarks dialogue-stall --turns 5000 --rounds 1

Writes ``results/dialogue-stall.json`` and its section of ``results/RELIABILITY.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx

from benchmarks.harness.paths import RESULTS
from benchmarks.harness.server import create_key, serving
from benchmarks.reliability import writers_md
from omnimem import Memory, __version__

WORDS = ("harbour lantern meadow orbit puzzle quartz river saddle thunder umbrella velvet walnut kayak garden "
         "piano recipe violin museum coffee winter beach library bicycle painting").split()


@contextmanager
def _serving(store: Path, embedder: str) -> Iterator[tuple[int, str]]:
    """``omnimem serve`` on ``store`` (``embedder``, one worker) and a store-wide admin key."""
    Memory(store, embedder=embedder).close()
    key = create_key(["--store", str(store)], name="stall", role="admin")
    with serving(["--store", str(store)], "--rate-limit", "0", "--embedder", embedder) as port:
        yield port, key


def _pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _dialogue(round_no: int, turns: int) -> dict[str, Any]:
    lines = [{"text": f"round {round_no} turn {i}: the {WORDS[i % len(WORDS)]} by the {WORDS[(i * 7) % len(WORDS)]}",
              "speaker": ("Ann", "Bob")[i % 2], "id": f"r{round_no}t{i}"} for i in range(turns)]
    return {"turns": lines, "user_id": "big", "session_id": f"round-{round_no}"}


class Adder:
    """``small``'s adds on one kept-alive connection, each timed; every acknowledged id kept."""

    def __init__(self, client: httpx.Client) -> None:
        self.client = client
        self.ids: list[str] = []
        self.n = 0

    def add(self) -> float:
        self.n += 1
        body = {"text": f"note {self.n}: small keeps the {WORDS[self.n % len(WORDS)]} number {self.n}",
                "user_id": "small"}
        start = time.perf_counter()
        answer = self.client.post("/v1/units", json=body)
        took = time.perf_counter() - start
        answer.raise_for_status()
        self.ids.append(answer.json()["id"])
        return took


def run(turns: int, rounds: int, lone: int, embedder: str = "minilm") -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix="omnimem-dialogue-stall-"))
    lone_s: list[float] = []  # before each dialogue: what an add costs with no other writer
    after_s: list[float] = []  # right after each dialogue: the store catching up on it
    during_s: list[float] = []
    per_round: list[dict[str, Any]] = []
    try:
        with _serving(folder / "store", embedder) as (port, key):
            headers = {"Authorization": f"Bearer {key}"}
            base = f"http://127.0.0.1:{port}"
            with httpx.Client(base_url=base, headers=headers, timeout=600) as small, \
                    httpx.Client(base_url=base, headers=headers, timeout=600) as big:
                adder = Adder(small)
                for _ in range(5):  # warm-up: the first adds load what a lone add needs
                    adder.add()
                for r in range(rounds):
                    lone_s += [adder.add() for _ in range(lone)]
                    body = _dialogue(r, turns)
                    outcome: dict[str, Any] = {}

                    def post(body: dict[str, Any] = body, outcome: dict[str, Any] = outcome) -> None:
                        start = time.perf_counter()
                        answer = big.post("/v1/dialogues", json=body)
                        outcome["seconds"] = time.perf_counter() - start
                        outcome["status"] = answer.status_code
                        outcome["stored"] = sum(x["accepted"] for x in answer.json()["results"])

                    writer = threading.Thread(target=post)
                    writer.start()
                    time.sleep(0.5)  # the dialogue is parsed and its first batch under way
                    these: list[float] = []
                    while writer.is_alive():
                        these.append(adder.add())
                    writer.join()
                    during_s += these
                    after_s += [adder.add() for _ in range(lone)]
                    per_round.append({**outcome, "adds_during": len(these),
                                      "during_p95_ms": round(_pct(these, 0.95) * 1e3, 2) if these else None})
                found = small.get("/v1/units", params={"user_id": "small", "limit": 1}).json()["total"]
                lost = len(adder.ids) - min(found, len(adder.ids))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    lone_p95 = _pct(lone_s, 0.95)
    during_p50, during_p95 = (_pct(during_s, 0.5), _pct(during_s, 0.95)) if during_s else (float("nan"),) * 2
    return {
        "benchmark": "dialogue-stall",
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "omnimem": __version__, "python": platform.python_version(), "cpus": os.cpu_count(),
        "config": {"turns": turns, "rounds": rounds, "lone_per_round": lone, "embedder": embedder, "workers": 1},
        "rounds": per_round,
        "lone": {"n": len(lone_s), "p50_ms": round(_pct(lone_s, 0.5) * 1e3, 2), "p95_ms": round(lone_p95 * 1e3, 2)},
        "after": {"n": len(after_s), "p50_ms": round(_pct(after_s, 0.5) * 1e3, 2),
                  "p95_ms": round(_pct(after_s, 0.95) * 1e3, 2), "max_ms": round(max(after_s) * 1e3, 2)},
        "not_novel": sum(turns - r["stored"] for r in per_round),
        "during": {"n": len(during_s), "p50_ms": round(during_p50 * 1e3, 2), "p95_ms": round(during_p95 * 1e3, 2),
                   "max_ms": round(max(during_s) * 1e3, 2) if during_s else None},
        "p95_ratio": round(during_p95 / lone_p95, 2),
        "target_ratio": 3.0,
        "lost": lost,
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks dialogue-stall", description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20_000, help="turns of the large dialogue")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--lone", type=int, default=20, help="lone adds before and after each dialogue")
    parser.add_argument("--embedder", default="minilm",
                        help="the store's embedder: minilm (the default model, what users run) or fake (writer cost only)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    data = run(args.turns, args.rounds, args.lone, args.embedder)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "dialogue-stall.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    writers_md.update(args.out)
    print(json.dumps({k: data[k] for k in ("lone", "during", "p95_ratio", "lost")}, indent=2))


if __name__ == "__main__":
    main()
