"""Where a default search's time goes, stage by stage, at two budgets: what stands between it and 5 ms.

Opens a kept store (``search-speed --keep-store``), embeds every query text a search asks for once
beforehand (the query, and the query without a speaker's name when the search asks for that), so no
model time is counted, then for a 6,000-token and a 1,000-token budget, global and scoped to a user:

- ``--rounds`` rounds of the benchmark queries with tracing off: each search's CPU time
  (``time.process_time``), after a warm round;
- one round with omnimem's OpenTelemetry spans on (:func:`omnimem.otel.set_tracer_provider`, an
  in-memory exporter): the wall time of each stage span, per search.

Stages: ``dense`` and ``sparse`` (the first pass's index lookups), ``signals`` (the ranking signals
over the fused head, with their row reads and any second pass), ``pack`` (packing the context), and
inside it ``fit`` (which candidates fit), ``rows`` (reading the fitting rows and making them units)
and ``finish`` (levels 2-3 and the exact token count); ``pack other`` is the rest of ``pack``
(learning new rows' line costs, building the hits) and ``outside`` the search span less its stages
(fusion, the catch-up check, the facade)::

    python -m benchmarks search-stages --store $TMPDIR/omnimem-speed/speed-10000-minilm --size 10000 \\
        --embedder minilm --out benchmarks/results

Writes ``search-stages-<n>.json`` and ``.md``.
"""

from __future__ import annotations

import os
import statistics
from contextlib import nullcontext
from collections.abc import Sequence
from typing import Any

from benchmarks.harness.perf import TimedEmbedder, cpu_rounds, kept_store_parser, make_embedder, write_doc
from benchmarks.harness.synthetic import queries

SPANS = ("dense", "sparse", "signals", "pack", "fit", "rows", "finish")


class MemoEmbedder(TimedEmbedder):
    """Embeds each single text once and answers it from the cache after: no model time in a search."""

    def embed(self, texts: Sequence[str]) -> Any:
        if len(texts) == 1 and texts[0] not in self.cached:
            self.cached[texts[0]] = self.inner.embed(texts)[0]
        return super().embed(texts)


def stage_times(spans: Sequence[Any]) -> dict[str, float]:
    """Milliseconds per stage in one search's finished spans (a stage that ran twice is summed)."""
    out = {name: 0.0 for name in ("search", *SPANS)}
    for span in spans:
        name = span.name.removeprefix("omnimem.").removeprefix("search.")
        if name in out:
            out[name] += (span.end_time - span.start_time) / 1e6
    out["pack other"] = out["pack"] - out["fit"] - out["rows"] - out["finish"]
    out["outside"] = out["search"] - sum(out[s] for s in ("dense", "sparse", "signals", "pack"))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = kept_store_parser(__doc__, "python -m benchmarks search-stages")
    parser.add_argument("--budgets", default="6000,1000")
    parser.add_argument("--against", metavar="SETTING=VALUE", help="also time a second Memory on the same store "
                        "with this setting changed, in the same process, round by round in turn (what the setting "
                        "costs, measured alike): each run's against_cpu_ms_p50 and ratio (default / against)")
    args = parser.parse_args(argv)
    against: dict[str, Any] = {}
    if args.against:
        key, eq, value = args.against.partition("=")
        if not eq or not key:
            parser.error("--against takes SETTING=VALUE, e.g. elide_speakers=false")
        against = {key: value}
    os.environ.setdefault("OMNIMEM_CONFIG", os.devnull)
    try:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    except ImportError as exc:
        raise SystemExit("search-stages reads omnimem's spans: pip install 'omnimem[otel]' opentelemetry-sdk") from exc
    from omnimem import Memory
    from omnimem.otel import set_tracer_provider

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    load_before = os.getloadavg()
    inner = make_embedder(args.embedder)
    qs = queries(args.queries, args.size, 1)
    emb = MemoEmbedder(inner, dict(zip([q for q, _ in qs], inner.embed([q for q, _ in qs]))))
    doc: dict[str, Any] = {"benchmark": "python -m benchmarks search-stages", "size": args.size,
                           "embedder": inner.name, "runs": {}}
    if against:
        doc["against"] = args.against
    with Memory(args.store, embedder=emb) as m, (Memory(args.store, embedder=emb, **against) if against
                                                  else nullcontext()) as other:
        for budget in (int(b) for b in args.budgets.split(",")):
            for scoped in (False, True):
                def one(q: tuple[str, str], scoped: bool = scoped, budget: int = budget, mem: Any = m) -> Any:
                    return mem.search(q[0], budget=budget, user_id=q[1] if scoped else None)

                contexts = [one(q) for q in qs]  # warm: line facts remembered, every query text embedded once
                model_before = emb.seconds
                twin: dict[str, Any] = {}
                if other is None:
                    cpu = cpu_rounds(one, qs, args.rounds)
                else:  # both warm, then a round of each in turn (the order alternating): the same host for both
                    def two(q: tuple[str, str], scoped: bool = scoped, budget: int = budget) -> Any:
                        return one(q, scoped, budget, other)

                    their = [two(q) for q in qs]
                    cpu = []
                    cpu_other: list[float] = []
                    for r in range(args.rounds):
                        turns = [(one, cpu), (two, cpu_other)]
                        for f, times in turns if r % 2 == 0 else turns[::-1]:
                            times.extend(cpu_rounds(f, qs, 1))
                    twin = {"against_cpu_ms_p50": round(statistics.median(cpu_other) * 1000, 3),
                            "ratio": round(statistics.median(cpu) / statistics.median(cpu_other), 3),
                            "against_hits_mean": round(statistics.fmean(len(c.hits) for c in their), 1)}
                per_search: list[dict[str, float]] = []
                set_tracer_provider(provider)
                try:
                    for q in qs:
                        exporter.clear()
                        one(q)
                        per_search.append(stage_times(exporter.get_finished_spans()))
                finally:
                    set_tracer_provider(None)
                stages = {k: round(statistics.fmean(s[k] for s in per_search), 3) for k in per_search[0]}
                doc["runs"][f"{budget}-{'user' if scoped else 'global'}"] = {
                    "budget": budget, "scoped": scoped, "searches_timed": len(cpu),
                    "cpu_ms_p50": round(statistics.median(cpu) * 1000, 3),
                    "cpu_ms_mean": round(statistics.fmean(cpu) * 1000, 3),
                    "traced_stages_wall_ms_mean": stages,
                    "hits_mean": round(statistics.fmean(len(c.hits) for c in contexts), 1),
                    "tokens_mean": round(statistics.fmean(c.tokens for c in contexts), 1),
                    "candidates_mean": round(statistics.fmean(c.candidates for c in contexts), 1),
                    "model_seconds_in_timed_rounds": round(emb.seconds - model_before, 3),  # 0: all from the cache
                    **twin,
                }
    print(write_doc(doc, command="python -m benchmarks search-stages", argv=argv, load_before=load_before, out=args.out,
                    stem=f"search-stages-{args.size}", markdown=markdown))
    return 0


COLUMNS = ("search", "dense", "sparse", "signals", "pack", "fit", "rows", "finish", "pack other", "outside")


def markdown(doc: dict[str, Any]) -> str:
    twin = "against" in doc
    head = ["search", "CPU p50 / mean ms (untraced)", *(f"{c} ms" for c in COLUMNS), "hits / tokens / candidates",
            *((f"{doc['against']}: CPU p50 ms", "ratio", "its hits") if twin else ())]
    rows = []
    for r in doc["runs"].values():
        s = r["traced_stages_wall_ms_mean"]
        rows.append("| " + " | ".join([
            f"{r['budget']:,} tokens, {'user' if r['scoped'] else 'global'}", f"{r['cpu_ms_p50']} / {r['cpu_ms_mean']}",
            *(str(s[c]) for c in COLUMNS), f"{r['hits_mean']} / {r['tokens_mean']} / {r['candidates_mean']}",
            *((str(r["against_cpu_ms_p50"]), str(r["ratio"]), str(r["against_hits_mean"])) if twin else ())]) + " |")
    return "\n".join([
        f"# Default search, stage by stage ({doc['size']:,} units, {doc['embedder']})", "",
        f"`{doc['command']}`", "",
        "Every query text embedded beforehand (no model time). CPU time of whole searches with tracing off; then the "
        "mean wall time of each stage from omnimem's OpenTelemetry spans over one traced round (`search` is the whole "
        "traced search, spans included). `fit`, `rows` and `finish` are inside `pack`; `pack other` is the rest of it "
        "(new rows' line costs, building the hits); `outside` is the search less its stages (fusion, the catch-up "
        "check, the facade)." + (f" With `--against {doc['against']}` a second Memory on the same store with that "
                                  "setting was timed in the same process, a round of each in turn; `ratio` is the "
                                  "default's CPU p50 over its." if twin else ""), "",
        "| " + " | ".join(head) + " |", "|" + "---|" * len(head), *rows, "",
        f"Load average {doc['load_average_before']} before, {doc['load_average_after']} after; {doc['date']}.", "",
    ])


if __name__ == "__main__":
    raise SystemExit(main())
