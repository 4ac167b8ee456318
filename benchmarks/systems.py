"""The systems a benchmark run can measure, by name and by group.

Every omnimem row is ``Memory.search`` under some settings (``Memory(**settings)``):
an idea is measured by adding it to the core as a setting, never by a second
implementation of retrieval here. Baselines over raw turns live in
:mod:`benchmarks.baselines`.
"""

from __future__ import annotations

from benchmarks.baselines import baseline_systems
from benchmarks.retrieval import MemorySystem, System

PAPER = {"fusion": "union", "neighbours": 0, "packing": "line", "summary_words": 60, "embed_context": 0,
         "sparse_context": 0}


def ablation_systems() -> list[System]:
    return [
        MemorySystem("omnimem", "omnimem defaults"),
        MemorySystem("omnimem-paper", "the paper's retrieval: top_k 20 per retriever, set union, one line per hit, "
                     "60-word summaries with full text above theta", dict(PAPER)),
        MemorySystem("no-bm25", "defaults with sparse=False", {"sparse": False}),
        MemorySystem("no-dense", "defaults with dense=False", {"dense": False}),
        MemorySystem("line-packing", "defaults with packing=line", {"packing": "line"}),
    ]


def image_systems() -> list[System]:
    return [
        MemorySystem("image-units", "Mem-Gallery images as image units carrying their captions (placeholder "
                     "pixels; captions not inlined in the turns)", {"image_units": True}),
    ]


def graph_systems() -> list[System]:
    return [
        MemorySystem("graph", "defaults with the knowledge graph (spaCy extractor)", {"graph": True}),
    ]


def experiment_systems() -> list[System]:
    """Settings under study; each is a ``Memory`` setting, ablated one at a time against the defaults."""
    return [
        MemorySystem("x-embed-context-2", "defaults with embed_context=2 (each turn embedded after the two before it)",
                     {"embed_context": 2}),
        MemorySystem("x-no-sparse-context", "defaults with sparse_context=0 (BM25 indexes each turn's own words)",
                     {"sparse_context": 0}),
        MemorySystem("x-summary-60", "defaults with summary_words=60 (longer turns cut to a 60-word line)",
                     {"summary_words": 60}),
        MemorySystem("x-short-stop-list", "defaults with query_stop_words=False (BM25 matches question words "
                     "such as what, did, you: the stop list before)", {"query_stop_words": False}),
        MemorySystem("x-summary-2000", "defaults with summary_words=2000 (every turn shown whole)",
                     {"summary_words": 2000}),
        MemorySystem("x-whole-0", "defaults with whole_share=0 (summary lines first, full text only at level 2: "
                     "the default before)", {"whole_share": 0.0}),
        MemorySystem("x-session-packing", "defaults with packing=session (a [time] header per session and time: "
                     "the default before)", {"packing": "session"}),
        MemorySystem("x-whole-0.25", "defaults with whole_share=0.25 (the best hits whole, in rank order, within "
                     "a quarter of the budget; summaries fill the rest)", {"whole_share": 0.25}),
        MemorySystem("x-whole-0.5", "defaults with whole_share=0.5 (the best hits whole within half the budget)",
                     {"whole_share": 0.5}),
        MemorySystem("x-whole-1", "defaults with whole_share=1.0 (every hit whole while it fits, in rank order)",
                     {"whole_share": 1.0}),
        MemorySystem("x-day-packing", "defaults with packing=day (one [time] header per session and day, the time "
                     "of day before a line where it changed)", {"packing": "day"}),
        MemorySystem("x-sparse-0.5", "defaults with sparse_weight=0.5", {"sparse_weight": 0.5}),
        MemorySystem("x-dates", "defaults with embed_dates=True", {"embed_dates": True}),
        MemorySystem("x-rrf-k20", "defaults with rrf_k=20", {"rrf_k": 20}),
        MemorySystem("x-diversity-0.5", "defaults with diversity=0.5 (one session does not fill the top)",
                     {"diversity": 0.5}),
    ]


def default_systems() -> list[System]:
    return [*baseline_systems(), *ablation_systems()]


def groups() -> dict[str, list[System]]:
    named: dict[str, list[System]] = {
        "default": default_systems(), "baselines": list(baseline_systems()), "experiments": experiment_systems(),
        "graph": graph_systems(), "images": image_systems(),
    }
    # the three baselines the issue names beside the default (one embedding per turn: large haystacks)
    named["lean"] = [s for s in named["default"] if s.name in ("naive-dense", "naive-bm25", "plain-fusion", "omnimem")]
    named["all"] = [*named["default"], *named["graph"], *named["images"], *named["experiments"]]
    return named
