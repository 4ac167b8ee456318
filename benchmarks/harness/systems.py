"""The systems a benchmark run can measure, by name and by group.

Every omnimem row is ``Memory.search`` under some settings (``Memory(**settings)``):
an idea is measured by adding it to the core as a setting, never by a second
implementation of retrieval here. Baselines over raw turns live in
:mod:`benchmarks.harness.baselines`.
"""

from __future__ import annotations

from benchmarks.harness.baselines import baseline_systems
from benchmarks.harness.retrieval import MemorySystem, System

BEFORE_SIGNALS = {"speaker_weight": 0.0, "speaker_field": False, "time_weight": 0.0}  # the defaults before them
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
        MemorySystem("learnt", "defaults with ranking=learnt (the packaged model trained on the dev splits "
                     "re-orders the fused head)", {"ranking": "learnt"}),
        MemorySystem("rules", "defaults with ranking=rules (the signals' lists fused at their hand-set weights)",
                     {"ranking": "rules"}),
    ]


def image_systems() -> list[System]:
    return [
        MemorySystem("image-units", "Mem-Gallery images as image units carrying their captions (placeholder "
                     "pixels; captions not inlined in the turns)", {"image_units": True}),
    ]


def graph_systems() -> list[System]:
    return [
        MemorySystem("graph", "defaults with the knowledge graph (spaCy extractor)", {"graph": True}),
        MemorySystem("graph-fused-0.5", "defaults with the knowledge graph as one more ranked list in the fusion "
                     "(graph_weight=0.5; nothing appended)", {"graph": True, "graph_weight": 0.5}),
        MemorySystem("graph-fused-1", "defaults with the knowledge graph as one more ranked list in the fusion "
                     "(graph_weight=1)", {"graph": True, "graph_weight": 1.0}),
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
        MemorySystem("x-summary-40", "defaults with summary_words=40 (longer turns cut to a 40-word line)",
                     {"summary_words": 40}),
        MemorySystem("x-summary-100", "defaults with summary_words=100 (longer turns cut to a 100-word line; the "
                     "default since these runs)", {"summary_words": 100}),
        MemorySystem("x-summary-150", "defaults with summary_words=150 (the default before)", {"summary_words": 150}),
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
        MemorySystem("x-stamp-gap-1", "defaults with stamp_gap=1 (day packing writes a line's time of day wherever "
                     "the minute changes: the rendering before)", {"stamp_gap": 1}),
        MemorySystem("x-stamp-gap-60", "defaults with stamp_gap=60 (a line's time of day after an hour's pause)",
                     {"stamp_gap": 60}),
        MemorySystem("x-elide-speakers", "defaults with elide_speakers=True (a day-packed line that goes on from "
                     "the same speaker, without a time stamp, omits the speaker's name)", {"elide_speakers": True}),
        MemorySystem("x-sparse-0.5", "defaults with sparse_weight=0.5", {"sparse_weight": 0.5}),
        MemorySystem("x-sparse-0.6", "defaults with sparse_weight=0.6", {"sparse_weight": 0.6}),
        MemorySystem("x-sparse-0.75", "defaults with sparse_weight=0.75", {"sparse_weight": 0.75}),
        MemorySystem("x-sparse-depth-50", "defaults with sparse_depth=50 (the BM25 list stops at 50 candidates, "
                     "the depth a 1,000-token search reads; dense reads budget // 20)", {"sparse_depth": 50}),
        MemorySystem("x-whole-top-1", "defaults with whole_top=1 (the best hit is shown whole whenever it fits "
                     "the budget, beyond whole_share)", {"whole_top": 1}),
        MemorySystem("x-whole-top-2", "defaults with whole_top=2 (the best two hits whole whenever they fit)",
                     {"whole_top": 2}),
        MemorySystem("x-line-words-0", "defaults with line_words=0 (a long turn not shown whole gets its whole "
                     "summary line: the default before)", {"line_words": 0}),
        MemorySystem("x-line-words-10", "defaults with line_words=10 (a long turn not shown whole says 10 words)",
                     {"line_words": 10}),
        MemorySystem("x-line-words-30", "defaults with line_words=30", {"line_words": 30}),
        MemorySystem("x-line-words-50", "defaults with line_words=50", {"line_words": 50}),
        MemorySystem("x-session-w-0", "defaults with session_weight=0 (no session signal: the default before)",
                     {"session_weight": 0.0}),
        MemorySystem("x-session-w-0.25", "defaults with session_weight=0.25 (units by their session's summed fused "
                     "score among the best 50, at a quarter weight)", {"session_weight": 0.25}),
        MemorySystem("x-session-w-0.5", "defaults with session_weight=0.5", {"session_weight": 0.5}),
        MemorySystem("x-statement-0.25", "defaults with statement_weight=0.25 (units with at least 4 content words "
                     "outside their questions, in fused order, as one more ranked list: a turn that only asks is "
                     "not an answer)", {"statement_weight": 0.25}),
        MemorySystem("x-statement-0.5", "defaults with statement_weight=0.5", {"statement_weight": 0.5}),
        MemorySystem("x-reply-0.5", "defaults with reply_weight=0.5 (the turn after a head unit that asks something, "
                     "in the asking units' order)", {"reply_weight": 0.5}),
        MemorySystem("x-reply-1", "defaults with reply_weight=1", {"reply_weight": 1.0}),
        MemorySystem("x-statement-1", "defaults with statement_weight=1", {"statement_weight": 1.0}),
        MemorySystem("x-signal-depth-100", "defaults with signal_depth=100 (the speaker, session and time signals "
                     "re-order the best 100 fused candidates, not 50)", {"signal_depth": 100}),
        MemorySystem("x-signal-depth-150", "defaults with signal_depth=150", {"signal_depth": 150}),
        MemorySystem("x-speaker-w-1", "defaults with speaker_weight=1 (a named speaker's units at the weight of dense)",
                     {"speaker_weight": 1.0}),
        MemorySystem("x-dates", "defaults with embed_dates=True", {"embed_dates": True}),
        MemorySystem("x-rrf-k20", "defaults with rrf_k=20", {"rrf_k": 20}),
        MemorySystem("x-diversity-0.5", "defaults with diversity=0.5 (one session does not fill the top)",
                     {"diversity": 0.5}),
        MemorySystem("x-no-speaker-time", "defaults with speaker_weight=0, time_weight=0 (the ranking before the "
                     "speaker and time signals)", {"speaker_weight": 0.0, "speaker_field": False, "time_weight": 0.0}),
        MemorySystem("x-no-speaker", "defaults with speaker_weight=0 (no speaker signal)",
                     {"speaker_weight": 0.0, "speaker_field": False}),
        MemorySystem("x-no-time", "defaults with time_weight=0 (no relative-time window)", {"time_weight": 0.0}),
        # measured against the ranking before the signals (BEFORE_SIGNALS), one at a time
        MemorySystem("x-speaker", "before the signals, with speaker_weight=1 (the units of a speaker the query "
                     "names: one more ranked list in the fusion)", {**BEFORE_SIGNALS, "speaker_weight": 1.0}),
        MemorySystem("x-speaker-field", "before the signals, with speaker_weight=1, speaker_field=True (a named "
                     "speaker is matched as the field; dense and BM25 search the rest of the query)",
                     {**BEFORE_SIGNALS, "speaker_weight": 1.0, "speaker_field": True}),
        MemorySystem("x-speaker-field-0.5", "before the signals, with speaker_weight=0.5, speaker_field=True "
                     "(adopted)", {**BEFORE_SIGNALS, "speaker_weight": 0.5, "speaker_field": True}),
        MemorySystem("x-session-0.5", "before the signals, with session_weight=0.5 (units by their session's summed "
                     "fused score among the best 50)", {**BEFORE_SIGNALS, "session_weight": 0.5}),
        MemorySystem("x-session-1", "before the signals, with session_weight=1",
                     {**BEFORE_SIGNALS, "session_weight": 1.0}),
        MemorySystem("x-prf-5", "before the signals, with prf_docs=5 (dense searched again with the query vector "
                     "moved halfway towards the mean of the 5 best candidates' vectors)",
                     {**BEFORE_SIGNALS, "prf_docs": 5}),
        MemorySystem("x-time", "before the signals, with time_weight=1 (units inside the window of a relative time "
                     "in the question, read against the question's date; adopted)",
                     {**BEFORE_SIGNALS, "time_weight": 1.0}),
        MemorySystem("x-ranking", "speaker_weight=0.5, speaker_field=True, session_weight=0.5, time_weight=1 (the "
                     "signals that helped LoCoMo dev, together)",
                     {"speaker_weight": 0.5, "speaker_field": True, "session_weight": 0.5, "time_weight": 1.0}),
        MemorySystem("x-recency-0.3", "before the signals, with recency_weight=0.3 (the best 50 candidates newest "
                     "first, as one more ranked list)", {**BEFORE_SIGNALS, "recency_weight": 0.3}),
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
