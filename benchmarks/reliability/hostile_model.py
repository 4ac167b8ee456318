"""A hostile model endpoint: long replies, malformed replies and a model that stops answering.

The model is the tests' OpenAI-compatible fake (``tests/llm/fake_openai.py``) on loopback; omnimem
talks to it through the real ``openai`` SDK. Four measurements:

* **long replies**: a planned search (``planner="llm"``, ``plan_deadline`` 3 s) through a real
  server whose model answers 1 MB of ``{`` or of ``<think>``: the search's wall time and the slowest
  ``/healthz`` answered meanwhile (polled every 50 ms: a parse that holds the GIL shows here); an
  enrichment parse (``complete_json``, one repair) given the same replies; and ``extract_json`` on the
  whole, uncut 1 MB, 256 KB and 64 KB (the parse itself, to read linearity off);
* **malformed replies** (a 200 whose body is not JSON, cut off, nested 100,000 deep, of the wrong
  shape): every kind through HTTP (``/v1/search`` planner llm, ``/v1/ask``), MCP (``search``,
  ``ask``) and the CLI (``omnimem ask``, ``omnimem search --planner llm`` in a child process):
  5xx answers, untyped MCP errors and CLI tracebacks (target 0 each);
* **abandoned calls**: ``--abandoned`` planned searches against a model that answers after 60 s
  (``plan_deadline`` 1 s, the provider's 60 s timeout and 3 retries): the server's threads before,
  right after and 2 s after, then the model recovers: a planned search's note and ``/v1/ask``'s time.

    python -m benchmarks hostile-model [--abandoned 8]

Writes ``results/hostile-model.json`` (with its command) and ``results/hostile-model.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx
from pydantic import BaseModel

from benchmarks.harness.paths import RESULTS
from benchmarks.harness.server import cli_env
from omnimem import Memory, __version__
from omnimem.llm import LLMConfig, OpenAICompatibleLLM, extract_json
from tests.llm.fake_openai import FakeOpenAIServer, Reply, chat, cut_off, raw  # the tests' fake model
from tests.serving import LiveServer

QUESTION = "What does Ann's daughter like?"
TURNS = [
    {"speaker": "Ann", "text": "My daughter Lily started piano lessons this spring.", "time": "2024-05-01T10:00"},
    {"speaker": "Ann", "text": "Lily adores painting sunflowers and horses.", "time": "2024-05-09T10:00"},
    {"speaker": "Bob", "text": "Fishing at the lake is my other weekend thing.", "time": "2024-05-20T10:01"},
]
ANALYSIS = json.dumps({"needs": "the daughter, then her likes", "queries": ["Ann daughter", "Lily likes"]})
MEGABYTE = 1_000_000
LONG = {"{": "{" * MEGABYTE, "<think>": "<think>" * (MEGABYTE // 7)}
MALFORMED: dict[str, Callable[[], Reply]] = {
    "not-json": lambda: raw(b"<html><body>502 Bad Gateway</body></html>"),
    "cut-off": lambda: raw(cut_off(ANALYSIS)),
    "nested-100000": lambda: raw(b"[" * 100_000 + b"]" * 100_000),
    "nested-object": lambda: raw(b'{"choices": ' * 100_000 + b"1" + b"}" * 100_000),
    "wrong-shape": lambda: raw(b'{"choices": "none", "usage": {"prompt_tokens": "many"}}'),
    "content-not-text": lambda: raw(b'{"object": "chat.completion", "choices": [{"message": {"content": 7}}]}'),
}


class Summary(BaseModel):
    """What an enrichment call asks for (the shape of omnimem's own summary reply)."""

    summary: str


def plan_reply(body: dict[str, Any]) -> Reply:
    """A well-behaved planner model: an expansion to the analysis, "adequate" to the check."""
    return chat(ANALYSIS) if "You plan searches" in body["messages"][0]["content"] else chat('{"adequate": true}')


@contextmanager
def served(model: FakeOpenAIServer, folder: Path, **llm: Any) -> Iterator[tuple[LiveServer, Memory]]:
    """A real server (in this process, to count its threads) over a store whose model is ``model``."""
    deadline = llm.pop("plan_deadline", 3.0)
    config = LLMConfig(base_url=model.url, model="test-model", api_key="sk-test", **llm)
    mem = Memory(folder, embedder="fake", llm=OpenAICompatibleLLM(config), novelty=False, enrich="off",
                 llm_summaries=False, plan_deadline=deadline)
    mem.add_dialogue(TURNS, user_id="ann")
    live = LiveServer(mem, auth=False, rate_limit=None)
    try:
        yield live, mem
    finally:
        live.stop()
        mem.close()


def _search(client: httpx.Client) -> httpx.Response:
    return client.post("/v1/search", json={"query": QUESTION, "user_id": "ann", "planner": "llm"})


def long_replies(model: FakeOpenAIServer, folder: Path) -> dict[str, Any]:
    out: dict[str, Any] = {"planned_search": {}, "enrichment_parse": {}, "extract_json_uncut": {}}
    with served(model, folder / "long") as (live, mem), httpx.Client(base_url=live.url, timeout=120) as client:
        for filler, reply in LONG.items():
            model.reset()
            model.default = chat(reply)
            slowest, stop = [0.0], threading.Event()

            def poll() -> None:
                with httpx.Client(base_url=live.url, timeout=120) as probe:
                    while not stop.is_set():
                        started = time.perf_counter()
                        probe.get("/healthz")
                        slowest[0] = max(slowest[0], time.perf_counter() - started)
                        time.sleep(0.05)

            poller = threading.Thread(target=poll)
            poller.start()
            started = time.perf_counter()
            answer = _search(client)
            wall = time.perf_counter() - started
            stop.set()
            poller.join()
            out["planned_search"][filler] = {"status": answer.status_code, "s": round(wall, 3),
                                             "healthz_max_s": round(slowest[0], 3),
                                             "note": answer.json()["plan"]["note"], "deadline_s": 3.0}
            assert mem.llm is not None
            started = time.perf_counter()
            try:
                mem.llm.complete_json([{"role": "user", "content": "summarise"}], Summary)
                outcome = "parsed"
            except Exception as exc:  # measured, not raised: the kind of error is the figure
                outcome = type(exc).__name__
            out["enrichment_parse"][filler] = {"s": round(time.perf_counter() - started, 3), "outcome": outcome,
                                               "requests": len(model.requests) - 1}
    for filler, reply in LONG.items():
        for size in (MEGABYTE // 16, MEGABYTE // 4, MEGABYTE):
            text = reply[:size]
            started = time.perf_counter()
            try:
                extract_json(text)
            except ValueError:  # no JSON in it: the expected outcome
                pass
            out["extract_json_uncut"].setdefault(filler, {})[str(size)] = round(time.perf_counter() - started, 3)
    return out


def _cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "omnimem.cli", *args], env=env, capture_output=True, text=True,
                          timeout=300)


def malformed_replies(model: FakeOpenAIServer, folder: Path) -> dict[str, Any]:
    from anyio.from_thread import start_blocking_portal
    from fastmcp import Client

    from omnimem.mcp import create_mcp

    kinds: dict[str, Any] = {}
    store = folder / "cli-store"
    with Memory(store, embedder="fake", llm=False) as seed:
        seed.add_dialogue(TURNS, user_id="ann")
    env = {**cli_env(), "OMNIMEM_EMBEDDER": "fake", "OMNIMEM_LLM_BASE_URL": model.url, "OMNIMEM_LLM_MODEL": "m",
           "OMNIMEM_LLM_MAX_RETRIES": "0", "OMNIMEM_ENRICH": "off"}
    with served(model, folder / "malformed", max_retries=0) as (live, mem), \
            httpx.Client(base_url=live.url, timeout=60) as client, start_blocking_portal() as portal:
        mcp: Client[Any] = Client(create_mcp(mem))
        with portal.wrap_async_context_manager(mcp):
            for kind, reply in MALFORMED.items():
                model.reset()
                model.default = reply()
                found, asked = _search(client), client.post("/v1/ask", json={"question": QUESTION, "user_id": "ann"})
                mcp_ask = portal.call(lambda: mcp.call_tool("ask", {"question": QUESTION, "user_id": "ann"},
                                                            raise_on_error=False))
                mcp_search = portal.call(lambda: mcp.call_tool("search", {"query": QUESTION, "user_id": "ann",
                                                                          "planner": "llm"}, raise_on_error=False))
                cli_ask = _cli(["ask", QUESTION, "--store", str(store), "--user-id", "ann"], env)
                cli_search = _cli(["search", QUESTION, "--store", str(store), "--user-id", "ann", "--planner", "llm",
                                   "--json"], env)
                mcp_code = json.loads(mcp_ask.content[0].text).get("error") if mcp_ask.is_error else None
                kinds[kind] = {
                    "http_search": found.status_code, "http_search_note": found.json().get("plan", {}).get("note"),
                    "http_ask": asked.status_code, "http_ask_error": asked.json().get("error"),
                    "mcp_ask_error": mcp_code, "mcp_search_ok": not mcp_search.is_error,
                    "cli_ask_exit": cli_ask.returncode, "cli_ask_stderr": cli_ask.stderr.strip()[-300:],
                    "cli_search_exit": cli_search.returncode,
                    "cli_tracebacks": ("Traceback" in cli_ask.stderr) + ("Traceback" in cli_search.stderr),
                }
    values = list(kinds.values())
    return {"kinds": kinds, "totals": {
        "http_5xx": sum((k["http_search"] >= 500) + (k["http_ask"] >= 500 and k["http_ask_error"] != "LLMError")
                        for k in values),  # a 5xx other than /v1/ask's typed 502 LLMError
        "http_ask_not_502_llm_error": sum(not (k["http_ask"] == 502 and k["http_ask_error"] == "LLMError")
                                          for k in values),
        "http_search_not_200_with_note": sum(not (k["http_search"] == 200 and k["http_search_note"]) for k in values),
        "mcp_untyped_errors": sum(k["mcp_ask_error"] != "LLMError" or not k["mcp_search_ok"] for k in values),
        "cli_tracebacks": sum(k["cli_tracebacks"] for k in values),
        "cli_ask_not_one_line_non_zero": sum(not (k["cli_ask_exit"] != 0 and len(k["cli_ask_stderr"].splitlines())
                                                  == 1) for k in values),
        "cli_search_failed": sum(k["cli_search_exit"] != 0 for k in values),
    }}


def abandoned_calls(model: FakeOpenAIServer, folder: Path, n: int) -> dict[str, Any]:
    model.reset()
    with served(model, folder / "abandoned", timeout=60.0, max_retries=3, plan_deadline=1.0) as (live, mem), \
            httpx.Client(base_url=live.url, timeout=120) as client:
        model.responder = plan_reply
        _search(client)  # warm: the server's own threads are up
        before, sent = threading.active_count(), len(model.requests)
        model.responder = lambda body: chat(ANALYSIS, delay=60.0)
        notes = []
        started = time.perf_counter()
        for _ in range(n):
            notes.append(_search(client).json()["plan"]["note"])
        searches_s = time.perf_counter() - started
        right_after = threading.active_count()
        time.sleep(2.0)
        later = threading.active_count()
        requests = len(model.requests) - sent
        model.responder = plan_reply  # the model recovers
        started = time.perf_counter()
        recovered = _search(client).json()["plan"]
        recovered_s = time.perf_counter() - started
        model.responder = lambda body: chat("Lily likes painting sunflowers and horses.")
        started = time.perf_counter()
        asked = client.post("/v1/ask", json={"question": QUESTION, "user_id": "ann"})
        ask_s = time.perf_counter() - started
        model.reset()  # the slow replies still sleeping end now
    return {"searches": n, "plan_deadline_s": 1.0, "searches_s": round(searches_s, 3),
            "notes": sorted(set(notes)), "model_requests": requests,
            "threads": {"before": before, "right_after": right_after, "after_2s": later},
            "recovered_search": {"s": round(recovered_s, 3), "note": recovered["note"], "calls": recovered["calls"]},
            "recovered_ask": {"s": round(ask_s, 3), "status": asked.status_code}}


def table(data: dict[str, Any]) -> list[str]:
    long, bad, gone = data["long_replies"], data["malformed_replies"]["totals"], data["abandoned_calls"]
    lines = ["| figure | value | target |", "|---|---|---|"]
    for filler, run in long["planned_search"].items():
        lines.append(f"| planned search, model answers 1 MB of `{filler}` (HTTP {run['status']}) | {run['s']} s, "
                     f"slowest /healthz meanwhile {run['healthz_max_s']} s | <= deadline {run['deadline_s']} s "
                     f"+ a linear parse |")
    for filler, run in long["enrichment_parse"].items():
        lines.append(f"| enrichment parse (`complete_json`, one repair), 1 MB of `{filler}` | {run['s']} s "
                     f"({run['outcome']}) | linear |")
    for filler, sizes in long["extract_json_uncut"].items():
        shown = ", ".join(f"{int(size) // 1000} KB {s} s" for size, s in sizes.items())
        lines.append(f"| `extract_json` on the uncut reply of `{filler}` | {shown} | linear |")
    lines += [
        f"| malformed replies ({len(data['malformed_replies']['kinds'])} kinds): HTTP 5xx other than /v1/ask's "
        f"502 LLMError | {bad['http_5xx']} | 0 |",
        f"| ... `/v1/ask` not a 502 `LLMError`; `/v1/search` not a 200 with `plan.note` | "
        f"{bad['http_ask_not_502_llm_error']}; {bad['http_search_not_200_with_note']} | 0 |",
        f"| ... MCP untyped errors | {bad['mcp_untyped_errors']} | 0 |",
        f"| ... CLI tracebacks; `omnimem ask` not one line and non-zero; `omnimem search --planner llm` failed | "
        f"{bad['cli_tracebacks']}; {bad['cli_ask_not_one_line_non_zero']}; {bad['cli_search_failed']} | 0 |",
        f"| {gone['searches']} planned searches at a 60 s model (deadline {gone['plan_deadline_s']} s): server threads "
        f"before / right after / 2 s after | {gone['threads']['before']} / {gone['threads']['right_after']} / "
        f"{gone['threads']['after_2s']} | bounded |",
        f"| ... model requests (no retries after a deadline) | {gone['model_requests']} | {gone['searches']} |",
        f"| ... then the model recovers: a planned search; `/v1/ask` | {gone['recovered_search']['s']} s, note "
        f"{gone['recovered_search']['note']}; {gone['recovered_ask']['s']} s (HTTP "
        f"{gone['recovered_ask']['status']}) | note None; fast |",
    ]
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks hostile-model", description=__doc__.splitlines()[0])
    parser.add_argument("--abandoned", type=int, default=8, help="planned searches abandoned at the deadline")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    model = FakeOpenAIServer()
    model.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            data: dict[str, Any] = {
                "command": " ".join(["python -m benchmarks hostile-model",
                                      *(sys.argv[2:] if argv is None else argv)]),
                "when": datetime.now(timezone.utc).isoformat(timespec="seconds"), "cpus": os.cpu_count(),
                "python": platform.python_version(), "omnimem": __version__,
                "long_replies": long_replies(model, folder),
                "malformed_replies": malformed_replies(model, folder),
                "abandoned_calls": abandoned_calls(model, folder, args.abandoned),
            }
    finally:
        model.reset()
        model.stop()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "hostile-model.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    md = [f"# Hostile model ({data['when']}, {data['cpus']} CPUs, omnimem {data['omnimem']})", "",
          f"`{data['command'].strip()}` (benchmarks/reliability/hostile_model.py); the model is the tests' fake "
          "OpenAI-compatible server on loopback, through the real `openai` SDK.", "", *table(data), ""]
    (args.out / "hostile-model.md").write_text("\n".join(md), encoding="utf-8")
    print("\n".join(md))


if __name__ == "__main__":
    main()
