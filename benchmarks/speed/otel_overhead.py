"""OpenTelemetry overhead: what the spans cost a search, with no tracer provider and with the SDK recording.

A store in memory on the fake embedder (the cheapest search there is, so the
ratios are an upper bound for real stores) holds ``--units`` short texts.
Phase 1, no tracer provider configured: ``Memory.search`` (its tracing check
included) against the same method unwrapped (``Memory.search.__wrapped__``),
interleaved call by call. Phase 2, the OpenTelemetry SDK configured (a
``TracerProvider`` with a ``SimpleSpanProcessor`` into an in-memory exporter):
the traced search (one ``omnimem.search`` span and four stage spans) against
the unwrapped method with tracing off (``omnimem.otel`` made to see no
provider around each baseline call). Each figure is a ratio of medians to the baseline
timed in the same phase. A fresh interpreter also reports which
``opentelemetry`` modules ``import omnimem`` and a first search load (none).

    python -m benchmarks otel-overhead [--units 500] [--searches 200] [--out benchmarks/results]

Writes otel-overhead.json (raw) and otel-overhead.md (table) under --out.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from omnimem import Memory, __version__

WORDS = "tram hill lisbon march painting sunset office lease roadmap hiring budget garden".split()


def _interleaved(ways: dict[str, Callable[[str], Any]], queries: Sequence[str]) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in ways}
    order = list(ways.items())
    for i, query in enumerate(queries):
        for name, fn in order if i % 2 == 0 else order[::-1]:  # alternate who goes first (warm caches)
            started = time.perf_counter()
            fn(query)
            times[name].append(time.perf_counter() - started)
    return times


def _imports_without_provider() -> list[str]:
    code = ("import sys, omnimem; m = omnimem.Memory(embedder='fake'); m.add('hello there');"
            "m.search('hello'); print(sorted(n for n in sys.modules if n.startswith('opentelemetry')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return list(json.loads(out.stdout.strip().replace("'", '"')))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks otel-overhead", description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=500)
    parser.add_argument("--searches", type=int, default=200, help="searches per way and phase")
    parser.add_argument("--out", default="benchmarks/results")
    args = parser.parse_args(argv)

    mem = Memory(embedder="fake", novelty=False)
    mem.add_dialogue([{"text": f"note {i}: {WORDS[i % 12]} {WORDS[(i * 7) % 12]} {WORDS[(i * 5) % 12]} {i}",
                       "speaker": "a", "time": "2024-01-01T10:00"} for i in range(args.units)], user_id="u")
    queries = [f"{WORDS[i % 12]} {WORDS[(i * 3) % 12]}" for i in range(args.searches)]
    unwrapped = Memory.search.__wrapped__  # type: ignore[attr-defined]

    def plain(q: str) -> Any:
        return unwrapped(mem, q, user_id="u")

    def traced(q: str) -> Any:
        return mem.search(q, user_id="u")

    _interleaved({"plain": plain, "traced": traced}, queries[:20])  # warm-up
    off = _interleaved({"unwrapped": plain, "no provider": traced}, queries)

    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    _interleaved({"plain": plain, "traced": traced}, queries[:20])
    exporter.clear()
    def untraced(q: str) -> Any:  # the unwrapped method with tracing off: omnimem.otel sees no provider
        api = sys.modules.pop("opentelemetry.trace")
        try:
            return plain(q)
        finally:
            sys.modules["opentelemetry.trace"] = api

    on = _interleaved({"unwrapped": untraced, "SDK recording": traced}, queries)
    spans_per_search = len(exporter.get_finished_spans()) / len(queries)
    mem.close()

    med = {**{f"off/{k}": statistics.median(v) for k, v in off.items()},
           **{f"on/{k}": statistics.median(v) for k, v in on.items()}}
    ratio_off = med["off/no provider"] / med["off/unwrapped"]
    ratio_on = med["on/SDK recording"] / med["on/unwrapped"]
    imported = _imports_without_provider()
    result = {
        "benchmark": "otel-overhead",
        "command": f"python -m benchmarks otel-overhead --units {args.units} --searches {args.searches}",
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"), "omnimem": __version__,
        "python": platform.python_version(), "units": args.units, "searches": args.searches,
        "median_seconds": med, "ratio_no_provider": ratio_off, "ratio_sdk_recording": ratio_on,
        "spans_per_search": spans_per_search, "opentelemetry_modules_imported_without_provider": imported,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "otel-overhead.json").write_text(json.dumps(result, indent=2) + "\n")
    (out / "otel-overhead.md").write_text(
        f"# OpenTelemetry overhead per search\n\n`{result['command']}` ({result['when']}; fake embedder, "
        f"{args.units} units in memory: the cheapest search, so an upper bound)\n\n"
        "| tracing | median search vs the unwrapped method, same phase |\n|---|---|\n"
        f"| no tracer provider | {ratio_off:.3f}x |\n"
        f"| SDK recording ({spans_per_search:.0f} spans per search, in-memory exporter) | {ratio_on:.3f}x |\n\n"
        f"`opentelemetry` modules loaded by `import omnimem` and a search without a provider: "
        f"{len(imported)}\n")
    print(json.dumps({k: result[k] for k in ("ratio_no_provider", "ratio_sdk_recording", "spans_per_search",
                                             "opentelemetry_modules_imported_without_provider")}))


if __name__ == "__main__":
    main()
