"""The README and the docs stay true: figures equal the committed results, Python runs, CLI commands exist.

Like sqlite-utils' documentation tests: the pages are read as text and checked.

- **Figures**: each quoted figure is written here as the phrase it sits in, with the
  page that quotes it and the ``benchmarks/results/`` JSON value it comes from; the
  phrase, filled with the JSON values rounded to the digits quoted, must be on that
  page (the README's headline table, ``benchmarks/results/CURRENT.md`` for the current
  figures, ``benchmarks/results/experiments/*.md`` for the experiment logs, the docs).
  A re-run that moves a figure fails here until the page says the new value.
- **Python**: every ``python`` block of the README and of the reference pages in
  ``SESSION`` runs, in that order, in a temporary folder on the fake embedder
  (``OMNIMEM_EMBEDDER=fake``). Blocks are fragments of one session: the names the
  prose around them assumes (``mem``, ``turns``, an LLM, ids) are made in ``GIVEN``,
  visibly; the media block is the one left out (it needs media files and the audio
  models; ``tests/media`` runs those calls). The integration pages' examples run in
  ``tests/integrations/test_docs_examples.py``.
- **CLI**: every ``omnimem ...`` line of the shell blocks of the README, CONTRIBUTING.md
  and docs/ names a command whose ``--help`` works, and every ``--option`` it shows is
  in that help.
- **CONTRIBUTING.md**: every test path, type-check path and ``python -m benchmarks``
  command it names exists, with the options shown.
- **Links**: every relative link of these pages points at a file that exists, and
  docs/index.md links every page under docs/.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from benchmarks.harness import figures
from omnimem.cli import app

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
CONTRIBUTING = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
# every page a user or contributor reads, by its path from the repository root
PAGES = ["README.md", "CONTRIBUTING.md", *(str(p.relative_to(ROOT)) for p in sorted((ROOT / "docs").glob("*.md"))),
         "benchmarks/results/CURRENT.md",
         *(str(p.relative_to(ROOT)) for p in sorted((ROOT / "benchmarks" / "results" / "experiments").glob("*.md")))]
RESULTS = ROOT / "benchmarks" / "results"
TEST, DEV = "archive/locomo-retrieval-test-stoplist.json", "archive/locomo-retrieval-dev-stoplist.json"
BEFORE = "archive/locomo-retrieval-test.json"  # the code before the query stop list
GALLERY = "archive/memgallery-retrieval-test-stoplist.json"
GALLERY_BEFORE, GALLERY_DEV_BEFORE = "archive/memgallery-retrieval-test-custom.json", "archive/memgallery-retrieval-dev-custom.json"
PACK_LME, PACK_LME_DEV = "archive/longmemeval-retrieval-test-packing.json", "archive/longmemeval-retrieval-dev-packing.json"
PG, PG_LITE = "postgres-locomo-test.json", "archive/postgres/locomo-retrieval-test-custom.json"


def overall(system: str, budget: str) -> str:
    return f"systems.{system}.overall.{budget}"


def category(system: str, number: int | str, budget: str) -> str:
    return f"systems.{system}.categories.{number}.{budget}"


RANK_TEST, RANK_DEV, RANK_DEV_X = ("archive/locomo-retrieval-test-ranking.json", "archive/locomo-retrieval-dev-ranking-default.json",
                                   "archive/locomo-retrieval-dev-ranking.json")
LME_DEV, LME_TEST, LME_DEV_X = ("archive/longmemeval-retrieval-dev-ranking-default.json",
                                "archive/longmemeval-retrieval-test-ranking.json", "archive/longmemeval-retrieval-dev-ranking.json")
BOTH = ("1k", "6k")
FINAL_LOCOMO, FINAL_GALLERY = "archive/locomo-retrieval-test-final.json", "archive/memgallery-retrieval-test-final.json"
CUR_LOCOMO, CUR_LOCOMO_DEV, CUR_LME, CUR_LME_DEV, CUR_GALLERY = (  # the current default: the learnt ranking
    f"{name}.json" for name in ("locomo-test", "locomo-dev", "longmemeval-test", "longmemeval-dev",
                                                 "memgallery-test"))
ALL_X, ALL_SUM = "archive/longmemeval-retrieval-dev-all-x.json", "archive/longmemeval-retrieval-dev-all-summary.json"
LME_SUM, LOC_SUM, MG_SUM = ("archive/longmemeval-retrieval-dev-summary.json", "archive/locomo-retrieval-dev-summary.json",
                            "archive/memgallery-retrieval-dev-summary.json")
LME_SPARSE, LOC_SPARSE = "archive/longmemeval-retrieval-dev-sparse.json", "archive/locomo-retrieval-dev-sparse.json"
LME_PACK36, LOC_GRAPH = "archive/longmemeval-retrieval-dev-packing36.json", "archive/locomo-retrieval-dev-graph.json"
LINES, LINES_TEST, LINES_X = ("archive/longmemeval-retrieval-dev-all-lines.json", "archive/longmemeval-retrieval-test-all-lines.json",
                              "archive/longmemeval-retrieval-dev-all-lines-x.json")
LINES_LOC, LINES_MG = "archive/locomo-retrieval-dev-lines.json", "archive/memgallery-retrieval-dev-lines.json"
SESSION_LME, SESSION_LOC, SESSION_MG = ("archive/longmemeval-retrieval-dev-all-session.json", "archive/locomo-retrieval-dev-session.json",
                                       "archive/memgallery-retrieval-dev-session.json")
DEPTH_LOC, DEPTH_LME = "archive/locomo-retrieval-dev-depth.json", "archive/longmemeval-retrieval-dev-depth.json"
SPEAKER_LME = "archive/longmemeval-retrieval-dev-speaker.json"
STATEMENT_LOC, STATEMENT_LME = "archive/locomo-retrieval-dev-statement.json", "archive/longmemeval-retrieval-dev-statement.json"
TARGETS = "retrieval-targets.json"  # python -m benchmarks targets
REPLY_LOC, REPLY_LME, REPLY_MG = ("archive/locomo-retrieval-dev-reply.json", "archive/longmemeval-retrieval-dev-all-reply.json",
                                 "archive/memgallery-retrieval-dev-reply.json")
# (the page, the phrase on it with {n} for the n-th figure, the figures: (results file, dotted path in it))
FIGURES: list[tuple[str, str, list[tuple[Any, ...]]]] = [
    ('benchmarks/results/experiments/locomo.md', "LoCoMo dev within 1k / 6k: {0} / {1} against the default's {2} / {3} in the same run (multi-hop {4} / {5} against {6} / {7}); test {8} / {9} against {10} / {11}. Not adopted: it loses a little on LoCoMo dev within 1k (the paired interval holds zero) while it gains on LongMemEval dev, so it does not win on both dev sets; multi-hop within 1k on test stays at {12}",
     [('archive/locomo-retrieval-dev-planner-offline.json', 'systems.omnimem+offline.overall.1k'), ('archive/locomo-retrieval-dev-planner-offline.json', 'systems.omnimem+offline.overall.6k'), ('archive/locomo-retrieval-dev-planner-offline.json', 'systems.omnimem.overall.1k'), ('archive/locomo-retrieval-dev-planner-offline.json', 'systems.omnimem.overall.6k'), ('archive/locomo-retrieval-dev-planner-offline.json', 'systems.omnimem+offline.categories.1.1k'), ('archive/locomo-retrieval-dev-planner-offline.json', 'systems.omnimem+offline.categories.1.6k'), ('archive/locomo-retrieval-dev-planner-offline.json', 'systems.omnimem.categories.1.1k'), ('archive/locomo-retrieval-dev-planner-offline.json', 'systems.omnimem.categories.1.6k'), ('archive/locomo-retrieval-test-planner-offline.json', 'systems.omnimem+offline.overall.1k'), ('archive/locomo-retrieval-test-planner-offline.json', 'systems.omnimem+offline.overall.6k'), ('archive/locomo-retrieval-test-planner-offline.json', 'systems.omnimem.overall.1k'), ('archive/locomo-retrieval-test-planner-offline.json', 'systems.omnimem.overall.6k'), ('archive/locomo-retrieval-test-planner-offline.json', 'systems.omnimem+offline.categories.1.1k')]),
    ('benchmarks/results/experiments/longmemeval.md', "dev within 1k / 6k: {0} / {1} against the default's {2} / {3} in the same run; test {4} / {5} against {6} / {7} (multi-session within 1k {8} against {9}). Not adopted: it gains here but loses a little on LoCoMo dev, so it does not win on both dev sets",
     [('archive/longmemeval-retrieval-dev-planner-offline.json', 'systems.omnimem+offline.overall.1k'), ('archive/longmemeval-retrieval-dev-planner-offline.json', 'systems.omnimem+offline.overall.6k'), ('archive/longmemeval-retrieval-dev-planner-offline.json', 'systems.omnimem.overall.1k'), ('archive/longmemeval-retrieval-dev-planner-offline.json', 'systems.omnimem.overall.6k'), ('archive/longmemeval-retrieval-test-planner-offline.json', 'systems.omnimem+offline.overall.1k'), ('archive/longmemeval-retrieval-test-planner-offline.json', 'systems.omnimem+offline.overall.6k'), ('archive/longmemeval-retrieval-test-planner-offline.json', 'systems.omnimem.overall.1k'), ('archive/longmemeval-retrieval-test-planner-offline.json', 'systems.omnimem.overall.6k'), ('archive/longmemeval-retrieval-test-planner-offline.json', 'systems.omnimem+offline.categories.multi-session.1k'), ('archive/longmemeval-retrieval-test-planner-offline.json', 'systems.omnimem.categories.multi-session.1k')]),
    ('benchmarks/results/experiments/mem-gallery.md', "dev within 1k / 6k: {0} / {1} against the default's {2} / {3} in the same run; test {4} / {5} against {6} / {7}: no change beyond its paired intervals",
     [('archive/memgallery-retrieval-dev-planner-offline.json', 'systems.omnimem+offline.overall.1k'), ('archive/memgallery-retrieval-dev-planner-offline.json', 'systems.omnimem+offline.overall.6k'), ('archive/memgallery-retrieval-dev-planner-offline.json', 'systems.omnimem.overall.1k'), ('archive/memgallery-retrieval-dev-planner-offline.json', 'systems.omnimem.overall.6k'), ('archive/memgallery-retrieval-test-planner-offline.json', 'systems.omnimem+offline.overall.1k'), ('archive/memgallery-retrieval-test-planner-offline.json', 'systems.omnimem+offline.overall.6k'), ('archive/memgallery-retrieval-test-planner-offline.json', 'systems.omnimem.overall.1k'), ('archive/memgallery-retrieval-test-planner-offline.json', 'systems.omnimem.overall.6k')]),
    ("benchmarks/results/CURRENT.md", "the offline\nplanner (`planner=\"offline\"`, no model) moves LoCoMo test to {0} / {1} and LongMemEval test to {2} / {3}",
     [("archive/locomo-retrieval-test-planner-offline.json", overall("omnimem+offline", k)) for k in ("1k", "6k")]
     + [("archive/longmemeval-retrieval-test-planner-offline.json", overall("omnimem+offline", k)) for k in ("1k", "6k")]),
    ("benchmarks/results/CURRENT.md", "a default context now holds {0}x (1,000 tokens) and {1}x (6,000) the turns of a plain "
     "`speaker: text` list of the same hits, against {2}x / {3}x with every name written and {4}x / {5}x with a time of "
     "day wherever the minute changes",
     [("packing-cost.json", f"short_rows.{r}.ratio") for r in ("day auto 1000", "day auto 6000", "day 1000", "day 6000",
                                                             "day stamp_gap=1 1000", "day stamp_gap=1 6000")]),
    ("benchmarks/results/CURRENT.md", "short messages held {0} turns in {1} tokens before this round's last change "
     "([archive/final/packing-cost-46.md](archive/final/packing-cost-46.md)), {2} in {3} now",
     [("archive/final/packing-cost-46.json", "short_rows.day 1000.hits"), ("archive/final/packing-cost-46.json", "short_rows.day 1000.tokens"),
      ("packing-cost.json", "short_rows.day auto 1000.hits"), ("packing-cost.json", "short_rows.day auto 1000.tokens")]),
    # the offline planner on every split (docs/planner.md)
    ("docs/planner.md", "| LoCoMo dev (997 QA) | {0} / {1} | {2} / {3} |",
     [("archive/locomo-retrieval-dev-planner-offline.json", overall(s, k)) for s in ("omnimem", "omnimem+offline") for k in ("1k", "6k")]),
    ("docs/planner.md", "| LoCoMo dev multi-hop (142) | {0} / {1} | {2} / {3} |",
     [("archive/locomo-retrieval-dev-planner-offline.json", category(s, '1', k)) for s in ("omnimem", "omnimem+offline") for k in ("1k", "6k")]),
    ("docs/planner.md", "| LongMemEval dev (every question, 91) | {0} / {1} | {2} / {3} |",
     [("archive/longmemeval-retrieval-dev-planner-offline.json", overall(s, k)) for s in ("omnimem", "omnimem+offline") for k in ("1k", "6k")]),
    ("docs/planner.md", "| Mem-Gallery dev (695 QA) | {0} / {1} | {2} / {3} |",
     [("archive/memgallery-retrieval-dev-planner-offline.json", overall(s, k)) for s in ("omnimem", "omnimem+offline") for k in ("1k", "6k")]),
    ("docs/planner.md", "| LoCoMo test (985 QA, reported, not chosen on) | {0} / {1} | {2} / {3} |",
     [("archive/locomo-retrieval-test-planner-offline.json", overall(s, k)) for s in ("omnimem", "omnimem+offline") for k in ("1k", "6k")]),
    ("docs/planner.md", "| LoCoMo test multi-hop (140) | {0} / {1} | {2} / {3} |",
     [("archive/locomo-retrieval-test-planner-offline.json", category(s, '1', k)) for s in ("omnimem", "omnimem+offline") for k in ("1k", "6k")]),
    ("docs/planner.md", "| LongMemEval test (every question, 95) | {0} / {1} | {2} / {3} |",
     [("archive/longmemeval-retrieval-test-planner-offline.json", overall(s, k)) for s in ("omnimem", "omnimem+offline") for k in ("1k", "6k")]),
    ("docs/planner.md", "| LongMemEval test multi-session (25) | {0} / {1} | {2} / {3} |",
     [("archive/longmemeval-retrieval-test-planner-offline.json", category(s, 'multi-session', k)) for s in ("omnimem", "omnimem+offline") for k in ("1k", "6k")]),
    ("docs/planner.md", "| Mem-Gallery test (832 QA) | {0} / {1} | {2} / {3} |",
     [("archive/memgallery-retrieval-test-planner-offline.json", overall(s, k)) for s in ("omnimem", "omnimem+offline") for k in ("1k", "6k")]),
    ("docs/configuration.md", "with a cross-encoder of all-MiniLM-L6-v2's size on 2 cores, {0} ms added to a scoped search's p50 at depth 30 ({1}x "
     "the search without it), {2} ms at depth 10",
     [("rerank-cost.json", "runs.30.added_p50_ms"), ("rerank-cost.json", "runs.30.ratio_p50"),
      ("rerank-cost.json", "runs.10.added_p50_ms")]),
    ("benchmarks/results/experiments/longmemeval.md", "LoCoMo dev within 1k / 6k: `reply_weight=0.5` {0} / {1}, `reply_weight=1` {2} / {3}, against the default's {4} / {5}; "
     "LongMemEval dev {6} / {7} and {8} / {9} against {10} / {11}; Mem-Gallery dev {12} / {13} and {14} / {15} against "
     "{16} / {17}. Not adopted: on LongMemEval, where the turns after a user's question are the assistant's long answers, "
     "it loses within 1k on multi-session ({18} against {19} at 0.5)",
     [(f, overall(sys, k)) for f in (REPLY_LOC, REPLY_LME, REPLY_MG) for sys in ("x-reply-0.5", "x-reply-1", "omnimem")
      for k in BOTH]
     + [(REPLY_LME, f"systems.{sys}.categories.multi-session.1k") for sys in ("x-reply-0.5", "omnimem")]),
    ("docs/configuration.md", "at 0.5 LongMemEval dev within 1k falls to {0} from {1}",
     [(REPLY_LME, overall("x-reply-0.5", "1k")), (REPLY_LME, overall("omnimem", "1k"))]),
    # the retrieval targets, their gaps and bootstrap intervals (CURRENT.md "Retrieval targets"), on the current default
    ("benchmarks/results/CURRENT.md", 'Met: every "naive dense + 0.05" target but one (LoCoMo within 1,000 tokens {0} '
     "against naive dense {1}, within 6,000 {2} against {3}; LongMemEval within 1,000 {4} against {5}), LongMemEval's "
     "0.97 within 6,000 ({6}), and Mem-Gallery's 0.85 / 0.98 ({7} / {8}).",
     [(CUR_LOCOMO, overall("omnimem", "1k")), (CUR_LOCOMO, overall("naive-dense", "1k")),
      (CUR_LOCOMO, overall("omnimem", "6k")), (CUR_LOCOMO, overall("naive-dense", "6k")),
      (CUR_LME, overall("omnimem", "1k")), (CUR_LME, overall("naive-dense", "1k")), (CUR_LME, overall("omnimem", "6k")),
      (CUR_GALLERY, overall("omnimem", "1k")), (CUR_GALLERY, overall("omnimem", "6k"))]),
    ("benchmarks/results/CURRENT.md", "**LoCoMo test within 1,000 tokens: {0} (target 0.85, {1} short; interval [{2}, {3}])**. "
     "The target lies inside the interval. Multi-hop within 1,000: {4} (target 0.70, {5} short; interval [{6}, {7}]). "
     "That interval excludes its target: a real gap, and it is ranking. Of the gold turns, {8} are among the candidates "
     "(`cand`), but only {9} rank in the first 20 (`@20`)",
     [(CUR_LOCOMO, overall("omnimem", "1k")), (TARGETS, "targets.0.short_by"),
      (CUR_LOCOMO, "intervals.omnimem.1k.low"), (CUR_LOCOMO, "intervals.omnimem.1k.high"),
      (TARGETS, "targets.4.figure"), (TARGETS, "targets.4.short_by"), (TARGETS, "targets.4.interval.low"),
      (TARGETS, "targets.4.interval.high"), (CUR_LOCOMO, overall("omnimem", "cand")),
      (CUR_LOCOMO, overall("omnimem", "@20"))]),
    ("benchmarks/results/CURRENT.md", "**LoCoMo test within 6,000 tokens: {0} (target 0.97, {1} short; interval [{2}, {3}])**. "
     "The candidates bound it: the gold turns among the candidates of the two retrievers (depth 300 each) are {4} of all.",
     [(CUR_LOCOMO, overall("omnimem", "6k")), (TARGETS, "targets.1.short_by"),
      (CUR_LOCOMO, "intervals.omnimem.6k.low"), (CUR_LOCOMO, "intervals.omnimem.6k.high"),
      (CUR_LOCOMO, overall("omnimem", "cand"))]),
    ("benchmarks/results/CURRENT.md", "**LongMemEval test within 1,000 tokens: {0} (target 0.85, {1} short)**, and **within "
     "6,000 against naive dense + 0.05 ({2}): {3} short; the difference from naive dense is {4} (interval [{5}, {6}])**. "
     "On 95 questions one question moves the mean by about 0.01; the dev split gives {7} / {8}.",
     [(CUR_LME, overall("omnimem", "1k")), (TARGETS, "targets.5.short_by"), (TARGETS, "targets.8.target_value"),
      (TARGETS, "targets.8.short_by"), (CUR_LME, "intervals.omnimem.minus_naive-dense.6k.mean"),
      (CUR_LME, "intervals.omnimem.minus_naive-dense.6k.low"), (CUR_LME, "intervals.omnimem.minus_naive-dense.6k.high"),
      (CUR_LME_DEV, overall("omnimem", "1k")), (CUR_LME_DEV, overall("omnimem", "6k"))]),
] + [
    (page, "What to expect on held-out conversations: from dev to test the default goes from {0} / {1} to {2} / {3} on "
     "LoCoMo and from {4} / {5} to {6} / {7} on LongMemEval (within 1,000 / 6,000), so expect held-out figures a few "
     "points under dev. The lead over naive dense within 1,000 tokens holds on every test split with intervals far from "
     "zero (LongMemEval {8}, interval [{9}, {10}]); within 6,000 tokens on data of long turns it is smaller ({11}, "
     "interval [{12}, {13}]).",
     [(f, overall("omnimem", k)) for f in (CUR_LOCOMO_DEV, CUR_LOCOMO, CUR_LME_DEV, CUR_LME) for k in BOTH]
     + [(CUR_LME, f"intervals.omnimem.minus_naive-dense.{k}.{v}") for k in BOTH for v in ("mean", "low", "high")])
    for page in ("README.md", "benchmarks/results/CURRENT.md")
] + [

    ("benchmarks/results/experiments/locomo.md", "dev: LongMemEval {0} / {1} against {2} / {3} (at 0.25: {4} / {5}), LoCoMo {6} / {7} against {8} / {9} (0.25: "
     "{10} / {11}), Mem-Gallery {12} / {13} against {14} / {15}. Test: LongMemEval {16} / {17} against {18} / {19}, LoCoMo "
     "{20} / {21} against {22} / {23} (multi-hop {24} against {25} within 1k), Mem-Gallery {26} / {27} against {28} / {29}",
     [(f, overall(s, k)) for f in (SESSION_LME, SESSION_LOC)
      for s in ("x-session-w-0.5", "omnimem", "x-session-w-0.25") for k in BOTH]
     + [(SESSION_MG, overall(s, k)) for s in ("x-session-w-0.5", "omnimem") for k in BOTH]
     + [("archive/longmemeval-retrieval-test-all-session.json", overall(s, k)) for s in ("omnimem", "x-session-w-0") for k in BOTH]
     + [(FINAL_LOCOMO, overall(s, k)) for s in ("omnimem", "x-session-w-0") for k in BOTH]
     + [(FINAL_LOCOMO, category(s, 1, "1k")) for s in ("omnimem", "x-session-w-0")]
     + [(FINAL_GALLERY, overall(s, k)) for s in ("omnimem", "x-session-w-0") for k in BOTH]),
    ("benchmarks/results/experiments/locomo.md", "LoCoMo dev within 1k / 6k: `signal_depth=100` {0} / {1}, `signal_depth=150` {2} / {3} (multi-hop within 6k {4} "
     "against {5}), `speaker_weight=1` {6} / {7} (multi-hop within 1k {8} against {9}), against the default's {10} / "
     "{11}. LongMemEval dev: all three {12} / {13} against {14} / {15} (",
     [(DEPTH_LOC, overall(s, k)) for s in ("x-signal-depth-100", "x-signal-depth-150") for k in BOTH]
     + [(DEPTH_LOC, category(s, 1, "6k")) for s in ("x-signal-depth-150", "omnimem")]
     + [(DEPTH_LOC, overall("x-speaker-w-1", k)) for k in BOTH]
     + [(DEPTH_LOC, category(s, 1, "1k")) for s in ("x-speaker-w-1", "omnimem")]
     + [(DEPTH_LOC, overall("omnimem", k)) for k in BOTH]
     + [(DEPTH_LME, overall(s, k)) for s in ("x-signal-depth-150", "omnimem") for k in BOTH]),
    ("benchmarks/results/experiments/locomo.md", "LongMemEval dev: all three {0} / {1} against {2} / {3}",
     [(f, overall(s, k)) for f, s in ((DEPTH_LME, "x-signal-depth-100"), (SPEAKER_LME, "omnimem")) for k in BOTH]),
    ("benchmarks/results/experiments/locomo.md", "on every LongMemEval dev question (91, `longmemeval-retrieval-dev-all-depth`) `signal_depth=150` gives {0} / {1} "
     "against the default's {2} / {3}. Not adopted",
     [("archive/longmemeval-retrieval-dev-all-depth.json", overall(s, k)) for s in ("x-signal-depth-150", "omnimem")
      for k in BOTH]),
    ("benchmarks/results/experiments/locomo.md", "LongMemEval dev: all three 0.926 / 1.000 against {0} / {1}",
     [(SPEAKER_LME, overall("x-speaker-w-1", k)) for k in BOTH]),
    ("benchmarks/results/experiments/longmemeval.md", "LoCoMo dev within 1k / 6k: {0} / {1} at 0.5 and {2} / {3} at 1, against the default's {4} / {5} (0.25: {6}; "
     "multi-hop within 1k {7} at 1 against {8}). LongMemEval dev: {9} / {10} at 0.5 and {11} / {12} at 1, against "
     "{13} / {14}. It costs",
     [(STATEMENT_LOC, overall(s, k)) for s in ("x-statement-0.5", "x-statement-1", "omnimem") for k in BOTH]
     + [(STATEMENT_LOC, overall("x-statement-0.25", "1k"))]
     + [(STATEMENT_LOC, category(s, 1, "1k")) for s in ("x-statement-1", "omnimem")]
     + [(STATEMENT_LME, overall(s, k)) for s in ("x-statement-0.5", "x-statement-1", "omnimem") for k in BOTH]),
    ("benchmarks/results/experiments/longmemeval.md", "LongMemEval dev {0} / {1} against {2} / {3} with the whole summary line (`line_words=0`, the default before); "
     "10 words {4} / {5}, 30 {6} / {7}, 50 {8} / {9} (a line counts for nothing under this measure, so recall rises as "
     "the line gets shorter; 20 words still say what the turn is about); LoCoMo dev {10} / {11} against {12} / {13} "
     "(its turns are short); Mem-Gallery dev {14} / {15} against {16} / {17}. Test: LongMemEval {18} / {19} against "
     "{20} / {21} (10 words {22} / {23}, not used to choose). On the new default, left off "
     "(`longmemeval-retrieval-dev-all-lines-x`, default {24} / {25}): a quarter of the budget whole {26} / {27}, every "
     "hit whole {28} / {29}, the best hit whole whenever it fits {30} / {31}, a lighter BM25 list "
     "(`sparse_weight=0.75`) {32} / {33}, long turns indexed by 150 words again (`summary_words=150`, "
     "`longmemeval-retrieval-dev-all-lines-summary`) {34} / {35} |",
     [(LINES, overall(s, k)) for s in ("omnimem", "x-line-words-0", "x-line-words-10", "x-line-words-30",
                                       "x-line-words-50") for k in BOTH]
     + [(f, overall(s, k)) for f in (LINES_LOC, LINES_MG) for s in ("omnimem", "x-line-words-0") for k in BOTH]
     + [(LINES_TEST, overall(s, k)) for s in ("omnimem", "x-line-words-0", "x-line-words-10") for k in BOTH]
     + [(LINES_X, overall(s, k)) for s in ("omnimem", "x-whole-0.25", "x-whole-1", "x-whole-top-1", "x-sparse-0.75")
        for k in BOTH]
     + [("archive/longmemeval-retrieval-dev-all-lines-summary.json", overall("x-summary-150", k)) for k in BOTH]),
    ("benchmarks/results/experiments/longmemeval.md", "against the default's {0} / {1} in the same runs | the 100-word cut holds: `summary_words=150` {2} / {3}. Left "
     "off: the best hit shown whole whenever it fits the budget (`whole_top=1`, a setting) {4} / {5}, the best two "
     "{6} / {7} (a long best hit takes the room of several others); BM25 read only 50 deep at every budget "
     "(`sparse_depth=50`, a setting) {8} / {9}; a lighter BM25 list (`sparse_weight` 0.5 / 0.75) {10} / {11} and "
     "{12} / {13} (the 1k budget traded for the 6k one again, as on LoCoMo dev); a quarter of the budget whole "
     "{14} / {15} |",
     [(ALL_X, overall("omnimem", k)) for k in BOTH] + [(ALL_SUM, overall("x-summary-150", k)) for k in BOTH]
     + [(ALL_X, overall(s, k)) for s in ("x-whole-top-1", "x-whole-top-2", "x-sparse-depth-50", "x-sparse-0.5",
                                          "x-sparse-0.75", "x-whole-0.25") for k in BOTH]),
    ("benchmarks/results/experiments/longmemeval.md", "index and show long turns by their first 100 words (`summary_words=100`, adopted): LongMemEval dev {0} / {1} "
     "against {2} / {3}, LoCoMo dev {4} / {5} (unchanged: its turns are short), Mem-Gallery dev {6} / {7} "
     "(unchanged); 60 words {8} / {9} and {10} / {11}, 40 words {12} / {13} on LongMemEval. Left off: a lighter "
     "BM25 list (`sparse_weight` 0.5 / 0.6 / 0.75) LongMemEval {14} / {15}, {16} / {17}, {18} / {19}, LoCoMo "
     "{20} / {21}, {22} / {23}, {24} / {25} (it trades the 1k budget for the 6k one on both); every hit whole "
     "(`whole_share=1`) {26} / {27} on LongMemEval; naive dense there {28} / {29}. The knowledge graph "
     "(`graph=True`, spaCy) on LoCoMo dev: appended as before {30} / {31} (its units never fit the budget), inside the "
     "fusion (`graph_weight=0.5`) {32} / {33}, at weight 1 {34} / {35}",
     [(LME_SUM, overall(s, k)) for s in ("x-summary-100", "omnimem") for k in BOTH]
     + [(LOC_SUM, overall("x-summary-100", k)) for k in BOTH] + [(MG_SUM, overall("x-summary-100", k)) for k in BOTH]
     + [(LME_SUM, overall("x-summary-60", k)) for k in BOTH] + [(LOC_SUM, overall("x-summary-60", k)) for k in BOTH]
     + [(LME_SUM, overall("x-summary-40", k)) for k in BOTH]
     + [(f, overall(f"x-sparse-{w}", k)) for f in (LME_SPARSE, LOC_SPARSE) for w in ("0.5", "0.6", "0.75") for k in BOTH]
     + [(LME_PACK36, overall(s, k)) for s in ("x-whole-1", "naive-dense") for k in BOTH]
     + [(LOC_GRAPH, overall(s, k)) for s in ("graph", "graph-fused-0.5", "graph-fused-1") for k in BOTH]),
    ("benchmarks/results/experiments/locomo.md", "LoCoMo test: default within 1,000 tokens {0}, within 6,000 {1} (multi-hop {2} at 1k); before the signals "
     "{3} / {4}; naive dense {5} / {6}. LoCoMo dev: default {7} / {8}, before {9} / {10}. LongMemEval (no question "
     "names a speaker): dev default {11} / {12}, before the same, naive dense {13} / {14}; test default {15} / {16}, "
     "before the same. Measured on both dev sets and left off (`locomo-retrieval-dev-ranking`, "
     "`longmemeval-retrieval-dev-ranking`, against {17} and {18} within 1k): session evidence (`session_weight=0.5`) "
     "{19} and {20}, dense pseudo-relevance feedback (`prf_docs=5`) {21} and {22}, recency (`recency_weight=0.3`) "
     "{23} and {24}; the speaker list without the field match {25} on LoCoMo. Mem-Gallery (regression guard, "
     "`memgallery-retrieval-test-ranking`): default {26} / {27}, before {28} / {29}; dev {30} / {31}, before "
     "{32} / {33}",
     [(RANK_TEST, overall("omnimem", k)) for k in BOTH] + [(RANK_TEST, category("omnimem", 1, "1k"))]
     + [(RANK_TEST, overall(s, k)) for s in ("x-no-speaker-time", "naive-dense") for k in BOTH]
     + [(RANK_DEV, overall("omnimem", k)) for k in BOTH] + [(RANK_DEV_X, overall("omnimem", k)) for k in BOTH]
     + [(LME_DEV, overall(s, k)) for s in ("omnimem", "naive-dense") for k in BOTH]
     + [(LME_TEST, overall("omnimem", k)) for k in BOTH]
     + [(RANK_DEV_X, overall("omnimem", "1k")), (LME_DEV_X, overall("omnimem", "1k"))]
     + [(f, overall(s, "1k")) for s in ("x-session-0.5", "x-prf-5", "x-recency-0.3") for f in (RANK_DEV_X, LME_DEV_X)]
     + [(RANK_DEV_X, overall("x-speaker", "1k"))]
     + [(f"archive/memgallery-retrieval-{split}-ranking.json", overall(s, k)) for split in ("test", "dev")
        for s in ("omnimem", "x-no-speaker-time") for k in BOTH]),
    ("benchmarks/results/experiments/locomo.md", "default: within 1,000 tokens {0}, within 6,000 {1} (multi-hop {2} / {3}, open-domain {4} / {5}); with the short "
     "BM25 stop list it replaced {6} / {7}; plain fusion (RRF of dense + BM25 over raw turns, same stop list) {8} / {9}; "
     "naive dense {10} / {11}; naive BM25 {12} / {13}. Development split (1-5, `locomo-retrieval-dev-stoplist`): "
     "default {14} / {15} (short stop list {16} / {17})",
     [(TEST, overall("omnimem", "1k")), (TEST, overall("omnimem", "6k")),
      (TEST, category("omnimem", 1, "1k")), (TEST, category("omnimem", 1, "6k")),
      (TEST, category("omnimem", 3, "1k")), (TEST, category("omnimem", 3, "6k"))]
     + [(TEST, overall(s, k)) for s in ("x-short-stop-list", "plain-fusion", "naive-dense", "naive-bm25")
        for k in ("1k", "6k")]
     + [(DEV, overall(s, k)) for s in ("omnimem", "x-short-stop-list") for k in ("1k", "6k")]),
    ("benchmarks/results/experiments/locomo.md", "with `embed_context=2` {0} / {1}; the paper's retrieval {2} / {3}",
     [("archive/locomo-retrieval-test-custom.json", overall("x-embed-context-2", k)) for k in ("1k", "6k")]
     + [(BEFORE, overall("omnimem-paper", k)) for k in ("1k", "6k")]),
    ("benchmarks/results/experiments/mem-gallery.md", "default: within 1,000 tokens {0}, within 6,000 {1} (short stop list {2} / {3}); plain fusion {4} / {5}; "
     "naive dense {6} / {7}. On the code before the stop list (`memgallery-retrieval-test-custom`): images as image "
     "units {8} / {9}; development split {10} / {11}. The packing defaults",
     [(GALLERY, overall(s, k)) for s in ("omnimem", "x-short-stop-list", "plain-fusion", "naive-dense")
      for k in ("1k", "6k")]
     + [(GALLERY_BEFORE, overall("image-units", k)) for k in ("1k", "6k")]
     + [(GALLERY_DEV_BEFORE, overall("omnimem", k)) for k in ("1k", "6k")]),
    ("benchmarks/results/experiments/longmemeval.md", "default: within 1,000 tokens {0}, within 6,000 {1} (session recall_any@5 {2}, recall_all@10 {3}, turn "
     "recall@10 {4}, NDCG@10 {5}); with summary lines first (`whole_share=0`, the default before) {6} / {7}; naive "
     "dense {8} / {9}; plain fusion {10} / {11}; naive BM25 {12} / {13}. 12 dev questions "
     "(`longmemeval-retrieval-dev-packing`, run on the defaults before): `whole_share=0.5` {14} / {15}, summaries "
     "first {16} / {17}, a quarter of the budget whole {18} / {19}, every hit whole (`whole_share=1`) {20} / {21}, "
     "like `summary_words=2000` {22} / {23}; naive dense {24} / {25}. Long turns",
     [(PACK_LME, f"systems.omnimem.overall.{k}") for k in ("1k", "6k", "s_any@5", "s_all@10", "t_recall@10", "t_ndcg@10")]
     + [(PACK_LME, overall(s, k)) for s in ("x-whole-0", "naive-dense", "plain-fusion", "naive-bm25") for k in ("1k", "6k")]
     + [(PACK_LME_DEV, overall(s, k)) for s in ("x-whole-0.5", "omnimem", "x-whole-0.25", "x-whole-1", "x-summary-2000",
                                             "naive-dense") for k in ("1k", "6k")]),
    ("benchmarks/results/experiments/locomo.md", "one header per session and day; `locomo-retrieval-test-packing`) change nothing here: {0} / {1}, as with "
     "summaries first and a header per session and time; on dev (`locomo-retrieval-dev-packing`) every packing "
     "variant {2} / {3} (LoCoMo",
     [("archive/locomo-retrieval-test-packing.json", overall(s, k)) for s in ("omnimem",) for k in ("1k", "6k")]
     + [("archive/locomo-retrieval-dev-packing.json", overall("x-whole-0.5", k)) for k in ("1k", "6k")]),
    ("benchmarks/results/experiments/mem-gallery.md", "The packing defaults (`memgallery-retrieval-test-packing`, dev `memgallery-retrieval-dev-packing`): {0} / {1} "
     "(dev {2} / {3}), the same as summaries first",
     [(f"archive/memgallery-retrieval-{split}-packing.json", overall("omnimem", k)) for split in ("test", "dev")
      for k in ("1k", "6k")]),
    ("docs/configuration.md", "on synthetic chats with a turn a minute, {0} hits within 1,000 tokens instead of {1}, {2} tokens a hit instead "
     "of {3}, `benchmarks/results/packing-cost.md`",
     [("packing-cost.json", "rows.day 1000.hits"), ("packing-cost.json", "rows.session 1000.hits"),
      ("packing-cost.json", "rows.day 1000.tokens_per_hit"), ("packing-cost.json", "rows.session 1000.tokens_per_hit")]),
    ("benchmarks/results/experiments/longmemeval.md", "On 6 questions before the stop list and this change (`longmemeval-retrieval-test-first6`): default {0} / {1}",
     [("archive/longmemeval-retrieval-test-first6.json", overall("omnimem", k)) for k in ("1k", "6k")]),
    ("benchmarks/results/CURRENT.md", "LoCoMo recall is the embedded backend's within 0.001 ({0} / {1} within 1k / 6k tokens, against {2} / {3}, "
     "test split)",
     [(PG, overall("omnimem", "1k")), (PG, overall("omnimem", "6k")),
      (PG_LITE, overall("omnimem", "1k")), (PG_LITE, overall("omnimem", "6k"))]),
    ("benchmarks/results/CURRENT.md", "a user-scoped search takes {0}x / {1}x the embedded time in two runs ({2}x at 1M",
     [("archive/final/pg-scale-ab-46-rows/after-1.json", "ratios_postgresql_over_embedded.search_user_p50"),
      ("archive/final/pg-scale-ab-46-rows/after-2.json", "ratios_postgresql_over_embedded.search_user_p50"),
      ("pg-scale-1000000.json", "ratios_postgresql_over_embedded.search_user_p50")]),
    ("benchmarks/results/CURRENT.md", "an unscoped one over all units {0}x / {1}x, against {2}x / {3}x before a read of "
     "units became one statement and {4}x / {5}x before",
     [(f"archive/final/pg-scale-ab-46-rows/{side}-{i}.json", "ratios_postgresql_over_embedded.search_global_p50")
      for side in ("after", "before") for i in (1, 2)]
     + [(f"archive/final/pg-scale-ab-46-warm/before-{i}.json", "ratios_postgresql_over_embedded.search_global_p50")
        for i in (1, 2)]),
    ("benchmarks/results/CURRENT.md", "a cold search prints in {0} s instead of {1} s",
     [("cold-start.json", "phases_cli.to_first_result_s"),
      ("cold-start.json", "phases_store_model_writable.to_first_result_s")]),
    ("docs/cli.md", "a cold `omnimem add` stores its text {0}x sooner", [("cold-start-add.json", "add_speedup_vs_torch")]),
    # the same figures where a second page quotes them
    ("docs/cli.md", "a cold search prints in {0} s instead of {1} s",
     [("cold-start.json", "phases_cli.to_first_result_s"),
      ("cold-start.json", "phases_store_model_writable.to_first_result_s")]),
    ("benchmarks/results/CURRENT.md", "a cold `omnimem add` stores its text {0}x sooner",
     [("cold-start-add.json", "add_speedup_vs_torch")]),
    ("benchmarks/results/CURRENT.md", "with a cross-encoder of all-MiniLM-L6-v2's size on 2 cores, {0} ms added to a "
     "scoped search's p50 at depth 30 ({1}x the search without it), {2} ms at depth 10",
     [("rerank-cost.json", "runs.30.added_p50_ms"), ("rerank-cost.json", "runs.30.ratio_p50"),
      ("rerank-cost.json", "runs.10.added_p50_ms")]),
    # CURRENT.md's serving table: figures.checks() below
    # the README's headline table
    ("README.md", "| LoCoMo, 985 test questions ([CURRENT](benchmarks/results/CURRENT.md#retrieval-quality-iv-the-learnt-"
     "ranking-the-default-rankinglearnt)) | within 1,000 / 6,000 tokens: {0} / {1}; naive dense {2} / {3} |",
     [(CUR_LOCOMO, overall(s, k)) for s in ("omnimem", "naive-dense") for k in BOTH]),
    ("README.md", "| LongMemEval-S, every test question (95) | within 1,000 / 6,000 tokens: {0} / {1}; naive dense {2} / "
     "{3} |", [(CUR_LME, overall(s, k)) for s in ("omnimem", "naive-dense") for k in BOTH]),
    ("README.md", "| Mem-Gallery, 832 test questions (images through their captions) | within 1,000 / 6,000 tokens: "
     "{0} / {1}; naive dense {2} / {3} |", [(CUR_GALLERY, overall(s, k)) for s in ("omnimem", "naive-dense") for k in BOTH]),
    ("README.md", "LoCoMo test within 1,000 tokens: {0} short of 0.85; LongMemEval within 6,000: 0.97 met |",
     [(TARGETS, "targets.0.short_by")]),
    ("README.md", "| scoped to a user within 6,000 tokens: core p50 {0} ms, the whole search {1} ms in Python and {2} ms "
     "over HTTP |", [("search-floor-10000.json", f"runs.user.{k}.p50_ms") for k in ("core", "python", "http")]),
    ("README.md", "| first result {0} s after launch, on the plain `pip install omnimem` |",
     [("cold-start.json", "phases_cli.to_first_result_s")]),
    ("README.md", "| a burst of 24 adds at once: p95 {0} ms, against {1} ms for a lone add |",
     [("serve-load.json", "burst.burst_add.p95_ms"), ("serve-load.json", "burst.lone_add.p95_ms")]),
    ("README.md", "| 300 ms fake model: {0} questions/s with 1 worker, {1} with 8 |",
     [("parallel-qa.json", "results.0.qps_median"), ("parallel-qa.json", "results.3.qps_median")]),
    ("README.md", "| `add` p50 {0} ms (the model's work queued), against p95 {1} ms waiting for it |",
     [("enrich.json", "adds.0.add_ms.p50"), ("enrich.json", "adds.1.add_ms.p95")]),
    ("README.md", "| voice activity recall {0}, precision {1}; word error rate {2} on synthetic speech |",
     [("media.json", "audio.summary.vad_strict.recall"), ("media.json", "audio.summary.vad_strict.precision"),
      ("media.json", "audio.summary.wer_pipeline")]),
    ("README.md", "| {0} SIGKILLs mid-write: {1} writes lost or inconsistent, {2} leaks across scopes |",
     [("reliability.json", "results.crash.kills"), ("reliability.json", "results.crash.writes_lost_or_inconsistent"),
      ("reliability.json", "results.negative.leaks_across_scopes")]),
    ("README.md", "| LoCoMo test recall {0} / {1}, against {2} / {3} embedded (both with `ranking=\"rules\"`) |",
     [(PG, overall("omnimem", k)) for k in BOTH] + [(PG_LITE, overall("omnimem", k)) for k in BOTH]),
]


# docs/postgres.md's
FIGURES += [
    ("docs/postgres.md", "| embedded (SQLite + FAISS + bm25s) | {0} | {1} | {2} | | PostgreSQL + pgvector | {3} | {4} | {5} |",
     [(f, overall("omnimem", k)) for f in (PG_LITE, PG) for k in ("@20", "1k", "6k")]),
    ("docs/postgres.md", "{0} units/s onto the full 100k store ({1}x the embedded backend in the same run) and {2} units/s onto the "
     "1M store under heavy load ({3}x",
     [("pg-scale-100000.json", "postgresql.ingest_onto_full_store.units_per_s"),
      ("pg-scale-100000.json", "ratios_postgresql_over_embedded.ingest_onto_full_store_units_per_s"),
      ("pg-scale-1000000.json", "postgresql.ingest_onto_full_store.units_per_s"),
      ("pg-scale-1000000.json", "ratios_postgresql_over_embedded.ingest_onto_full_store_units_per_s")]),
]


FIGURES += [  # issue 37, elide_speakers (packing-cost and the three dev sets)
    ("benchmarks/results/CURRENT.md", "within 1,000 tokens on the dev sets, whose turns mostly alternate speakers\n"
     "(LoCoMo dev {0} against {1}, Mem-Gallery dev {2} against {3}, LongMemEval dev {4} either way",
     [("archive/locomo-retrieval-dev-elide.json", overall(s, "1k")) for s in ("x-elide-speakers", "omnimem")]
     + [("archive/memgallery-retrieval-dev-elide.json", overall(s, "1k")) for s in ("x-elide-speakers", "omnimem")]
     + [("archive/longmemeval-retrieval-dev-elide.json", overall(s, "1k")) for s in ("x-elide-speakers",)]),
    ("docs/configuration.md", "a default context holds {0}x (1,000 tokens) and {1}x (6,000) the turns of a plain "
     "`speaker: text` list of the same hits, against {2}x / {3}x with every name written",
     [("packing-cost.json", f"short_rows.{r}.ratio") for r in ("day auto 1000", "day auto 6000", "day 1000", "day 6000")]),
    ("docs/configuration.md", "with every name written, a context holds {0}x (1,000 tokens) and {1}x (6,000) the turns of "
     "a plain `speaker: text` list of the same hits, against {2}x / {3}x with 1",
     [("packing-cost.json", f"short_rows.{r}.ratio") for r in ("day 1000", "day 6000", "day stamp_gap=1 1000",
                                                             "day stamp_gap=1 6000")]),
    ("docs/configuration.md", "recall within 1,000 / 6,000 tokens is LoCoMo {0} / {1} against {2} / {3} with names, "
     "Mem-Gallery {4} / {5} against {6} / {7}, LongMemEval {8} / {9} against {10} / {11}",
     [(f"archive/{d}-retrieval-dev-elide.json", overall(s, k)) for d in ("locomo", "memgallery", "longmemeval")
      for s in ("x-elide-speakers", "omnimem") for k in ("1k", "6k")]),
]

FIGURES += [  # issue 39, this round (benchmarks/results/archive/final/)
    ("benchmarks/results/PERF.md", "of a default 6,000-token search {0} -> {1} ms global, {2} -> {3} ms scoped",
     [("archive/final/search-stages-10000-before-rowcache.json", "runs.6000-global.cpu_ms_p50"),
      ("archive/final/search-stages-10000-rowcache.json", "runs.6000-global.cpu_ms_p50"),
      ("archive/final/search-stages-10000-before-rowcache.json", "runs.6000-user.cpu_ms_p50"),
      ("archive/final/search-stages-10000-rowcache.json", "runs.6000-user.cpu_ms_p50")]),
    ("benchmarks/results/PERF.md", "client's search p50 / p95 {0} / {1} ms ({2}x its idle p95 of {3} ms in the same run) against "
     "{4} / {5} ms ({6}x)",
     [("archive/final/serve-load-storm-read-first.json", "storm.search.p50_ms"), ("archive/final/serve-load-storm-read-first.json", "storm.search.p95_ms"),
      ("archive/final/serve-load-storm-read-first.json", "storm.ratio_search_p95_to_idle_p95"),
      ("archive/final/serve-load-storm-read-first.json", "http_search_one_at_a_time.p95_ms"),
      ("archive/final/serve-load-storm-writes-first.json", "storm.search.p50_ms"), ("archive/final/serve-load-storm-writes-first.json", "storm.search.p95_ms"),
      ("archive/final/serve-load-storm-writes-first.json", "storm.ratio_search_p95_to_idle_p95")]),
    ("benchmarks/results/PERF.md", "the 32-client mixed load, p95 {0} against {1} ms",
     [("archive/final/serve-load-storm-read-first.json", "add.p95_ms"), ("archive/final/serve-load-storm-writes-first.json", "add.p95_ms")]),
    ("benchmarks/results/PERF.md", "1.78 / 1.79 / 1.90x before, {0} / {1} / {2}x after",
     [("archive/final/burst-gather-ab.json", f"runs.{i}.ratio_p95_to_model") for i in (1, 3, 5)]),
]

_STORM = "archive/final/storm-chunk-ab.json"  # runs: chunked pair 1, base pair 1, chunked pair 2, base pair 2
FIGURES += [  # issue 39, stop 44: a group embedded in short calls while searches come in
    ("benchmarks/results/PERF.md", "the steady client's search p50 {0} / {1} ms against {2} / {3} ms,\n  p95 {4} / {5} ms "
     "against {6} / {7} ms; as a ratio to the idle p95 of the same run\n  {8}x / {9}x against {10}x / {11}x",
     [(_STORM, f"runs.{i}.{key}") for key in ("storm_search_p50_ms", "storm_search_p95_ms",
                                              "ratio_search_p95_to_idle_p95") for i in (0, 2, 1, 3)]),
    ("benchmarks/results/PERF.md", "storm add p95 {0} /\n  {1} ms against {2} / {3} ms, and the 32-client mixed load's "
     "add p95 {4} / {5} ms against {6} / {7} ms",
     [(_STORM, f"runs.{i}.{key}") for key in ("storm_add_p95_ms", "load_add_p95_ms") for i in (0, 2, 1, 3)]),
    ("benchmarks/results/PERF.md", "three alternating pairs: global\n  {0} / {1} / {2} ms against {3} / {4} / {5} ms; scoped "
     "{6} / {7} / {8} ms against\n  {9} / {10} / {11} ms. Within 1,000 tokens: global {12} / {13} / {14} against "
     "{15} / {16} / {17} ms,\n  scoped {18} / {19} / {20} against {21} / {22} / {23} ms",
     [(f"archive/final/search-stages-ab-44/{side}-{i}.json", f"runs.{run}.cpu_ms_p50")
      for run in ("6000-global", "6000-user", "1000-global", "1000-user") for side in ("before", "after")
      for i in (1, 2, 3)]),
    ("benchmarks/results/PERF.md", "The packing stage (wall, traced round, global):\n  {0} / {1} / {2} ms against "
     "{3} / {4} / {5} ms",
     [(f"archive/final/search-stages-ab-44/{side}-{i}.json", "runs.6000-global.traced_stages_wall_ms_mean.pack")
      for side in ("before", "after") for i in (1, 2, 3)]),
    ("benchmarks/results/PERF.md", "the storm's add throughput: {0} / {1} adds acknowledged in 30 s against {2} / {3}",
     [(_STORM, f"runs.{i}.storm_adds") for i in (0, 2, 1, 3)]),
]


_INGEST_45 = "archive/final/ingest-ab-45/{}-{}.json"
_STAGES_45 = "archive/final/search-stages-ab-45/{}-{}.json"
FIGURES += [  # issue 39, stop 45: the BM25 index's work per add
    ("benchmarks/results/PERF.md", "before / after:\n  {0} / {1} against {2} / {3}, with {4} / {5} ms of omnimem's own "
     "work per turn against {6} / {7} ms",
     [(_INGEST_45.format(side, i), "single.ratio") for side in ("before", "after") for i in (1, 2)]
     + [(_INGEST_45.format(side, i), "single.overhead_ms_per_turn") for side in ("before", "after") for i in (1, 2)]),
    ("benchmarks/results/PERF.md", "One `add_dialogue` per\n  session: {0} / {1} against {2} / {3}.",
     [(_INGEST_45.format(side, i), "session.ratio") for side in ("before", "after") for i in (1, 2)]),
    ("benchmarks/results/PERF.md", "global {0} / {1} ms against\n  {2} / {3} ms, scoped {4} / {5} against {6} / {7} ms; "
     "the BM25 stage (wall, traced, global)\n  {8} / {9} against {10} / {11} ms",
     [(_STAGES_45.format(side, i), f"runs.{run}.cpu_ms_p50") for run in ("6000-global", "6000-user")
      for side in ("before", "after") for i in (1, 2)]
     + [(_STAGES_45.format(side, i), "runs.6000-global.traced_stages_wall_ms_mean.sparse")
        for side in ("before", "after") for i in (1, 2)]),
]
_PG_45, _PG_46 = "archive/final/pg-scale-ab-45/{}-{}.json", "archive/final/pg-scale-ab-46/{}-{}.json"
_PG_46W, _PG_46R = "archive/final/pg-scale-ab-46-warm/{}-{}.json", "archive/final/pg-scale-ab-46-rows/{}-{}.json"
_GLOBAL, _USER = "ratios_postgresql_over_embedded.search_global_p50", "ratios_postgresql_over_embedded.search_user_p50"
_GLOBAL_MS, _USER_MS = "postgresql.search_global.p50_ms", "postgresql.search_user.p50_ms"


def _pg_runs(runs: str, key: str, sides: tuple[str, ...] = ("before", "after")) -> list[tuple[str, str]]:
    """``key`` of a pg-scale A/B's two runs of each side, sides in the order given (the order a sentence quotes)."""
    return [(runs.format(side, i), key) for side in sides for i in (1, 2)]


FIGURES += [  # issue 39, stop 45: PostgreSQL's text search from the postings alone, beside the dense query
    ("benchmarks/results/PERF.md", "global {0}x / {1}x against {2}x / {3}x ({4} / {5} ms against {6} / {7} ms); scoped "
     "to a\n  user {8}x / {9}x against {10}x / {11}x.",
     _pg_runs(_PG_45, _GLOBAL) + _pg_runs(_PG_45, _GLOBAL_MS) + _pg_runs(_PG_45, _USER)),
    ("docs/postgres.md", "p50 {0}x / {1}x the embedded backend at 100k in two runs",
     _pg_runs(_PG_46R, _USER, ("after",))),
    ("docs/postgres.md", "second query): {0}x / {1}x before that.", _pg_runs(_PG_46R, _GLOBAL, ("before",))),
    ("docs/postgres.md", "{0}x / {1}x in\n  first passes right after each store opened",
     _pg_runs(_PG_45, _USER, ("after",))),
    ("docs/postgres.md", "spilled the hash to disk:\n  {0}x / {1}x before that, warm",
     _pg_runs(_PG_46W, _GLOBAL, ("before",))),
    ("benchmarks/results/CURRENT.md", "stop 45's {0}x / {1}x and {2}x / {3}x were first passes",
     _pg_runs(_PG_45, _USER, ("after",)) + _pg_runs(_PG_45, _GLOBAL, ("after",))),
    ("docs/postgres.md", "connections: {0}x / {1}x before these two, in the same alternating runs",
     _pg_runs(_PG_45, _GLOBAL, ("before",))),
    ("docs/postgres.md", "p50 {0}x / {1}x the embedded backend at 100k\n  ({2} / {3} ms",
     _pg_runs(_PG_46R, _GLOBAL, ("after",)) + _pg_runs(_PG_46R, _GLOBAL_MS, ("after",))),
]
FIGURES += [  # issue 39, stop 46: each query term's postings by their own index scan; the warm comparison
    ("benchmarks/results/PERF.md", "before / after: global {0}x / {1}x against {2}x / {3}x\n  (PostgreSQL {4} / {5} ms "
     "against {6} / {7} ms).", _pg_runs(_PG_46, _GLOBAL) + _pg_runs(_PG_46, _GLOBAL_MS)),
    ("benchmarks/results/PERF.md", "before / after: global\n  {0}x / {1}x against {2}x / {3}x (PostgreSQL {4} / {5} ms "
     "against {6} / {7} ms);\n  scoped to a user {8}x / {9}x against {10}x / {11}x.",
     _pg_runs(_PG_46W, _GLOBAL) + _pg_runs(_PG_46W, _GLOBAL_MS) + _pg_runs(_PG_46W, _USER)),
    ("benchmarks/results/PERF.md", "global within 2x, **not met** ({0}x / {1}x;",
     _pg_runs(_PG_46W, _GLOBAL, ("after",))),
    ("benchmarks/results/PERF.md", "**at the line** ({0}x / {1}x): stop 45's \"met\",\n  {2}x / {3}x, came from first "
     "passes, and warm the code before this change measured {4}x / {5}x.",
     _pg_runs(_PG_46W, _USER, ("after",)) + _pg_runs(_PG_45, _USER, ("after",))
     + _pg_runs(_PG_46W, _USER, ("before",))),
    ("benchmarks/results/PERF.md", "before / after: global {0}x / {1}x against\n  {2}x / {3}x (PostgreSQL {4} / {5} ms "
     "against {6} / {7} ms); scoped to a user {8}x / {9}x\n  against {10}x / {11}x (PostgreSQL {12} / {13} ms against "
     "{14} / {15} ms).",
     _pg_runs(_PG_46R, _GLOBAL) + _pg_runs(_PG_46R, _GLOBAL_MS) + _pg_runs(_PG_46R, _USER)
     + _pg_runs(_PG_46R, _USER_MS)),
    ("benchmarks/results/PERF.md", "scoped within 1.5x, **met** ({0}x / {1}x); global within 2x, **at\n  the line** "
     "({2}x / {3}x:", _pg_runs(_PG_46R, _USER, ("after",)) + _pg_runs(_PG_46R, _GLOBAL, ("after",))),
]


_SS47 = "archive/final/search-stages-auto-47/run-{}/search-stages-10000.json"


def _ss47(run: int, search: str, key: str) -> tuple[str, str]:
    return _SS47.format(run), f"runs.{search}.{key}"


FIGURES += [  # issues 37 and 39, stop 47: the default elide_speakers="auto" and reading deeper (PERF.md)
    ("benchmarks/results/PERF.md", "packs more hits: {0} against {1} global, {2} against {3} scoped within 6,000 tokens",
     [_ss47(1, "6000-global", "hits_mean"), _ss47(1, "6000-global", "against_hits_mean"),
      _ss47(1, "6000-user", "hits_mean"), _ss47(1, "6000-user", "against_hits_mean")]),
    ("benchmarks/results/PERF.md", "two runs: global {0} / {1} ms against {2} / {3} ms ({4}x / {5}x), scoped {6} / {7} ms "
     "against {8} / {9} ms ({10}x / {11}x); within 1,000 tokens {12}x / {13}x global, {14}x / {15}x scoped",
     [_ss47(r, "6000-global", "cpu_ms_p50") for r in (1, 2)] + [_ss47(r, "6000-global", "against_cpu_ms_p50") for r in (1, 2)]
     + [_ss47(r, "6000-global", "ratio") for r in (1, 2)] + [_ss47(r, "6000-user", "cpu_ms_p50") for r in (1, 2)]
     + [_ss47(r, "6000-user", "against_cpu_ms_p50") for r in (1, 2)] + [_ss47(r, "6000-user", "ratio") for r in (1, 2)]
     + [_ss47(r, "1000-global", "ratio") for r in (1, 2)] + [_ss47(r, "1000-user", "ratio") for r in (1, 2)]),
    ("benchmarks/results/PERF.md", "reads twice and takes {0} ms CPU p50 against {1} ms for a 6,000-token one, which reads "
     "300 deep at once; the context holds {2} turns instead of {3}",
     [("packing-cost.json", "short_rows.day auto 1000.search_cpu_ms_p50"),
      ("packing-cost.json", "short_rows.day auto 6000.search_cpu_ms_p50"), ("packing-cost.json", "short_rows.day auto 1000.hits"),
      ("archive/final/packing-cost-46.json", "short_rows.day 1000.hits")]),
    ("benchmarks/results/PERF.md", "(`archive/final/latency-ab-10000-auto.json`) came out {0}x faster global and {1}x scoped",
     [("archive/final/latency-ab-10000-auto.json", "speedup_global"), ("archive/final/latency-ab-10000-auto.json", "speedup_user")]),
    ("benchmarks/results/PERF.md", "Target 1 (4 ms at 10k): still **not met** ({0} ms global, {1} ms scoped in the first run",
     [_ss47(1, "6000-global", "cpu_ms_p50"), _ss47(1, "6000-user", "cpu_ms_p50")]),
]
FIGURES += [  # issue 49, a hostile model endpoint (python -m benchmarks hostile-model)
    ("benchmarks/results/SECURITY.md", "whose model answers 1 MB of `{` / of `<think>` | {0} s / {1} s; the slowest "
     "`/healthz` meanwhile {2} s / {3} s",
     [("hostile-model.json", f"long_replies.planned_search.{f}.{k}") for k in ("s", "healthz_max_s") for f in ("{", "<think>")]),
    ("benchmarks/results/SECURITY.md", "5xx other than `/v1/ask`'s 502 `LLMError` | {0} | 0 |",
     [("hostile-model.json", "malformed_replies.totals.http_5xx")]),
    ("benchmarks/results/SECURITY.md", "server threads before / right after / 2 s after; model requests | {0} / {1} / {2}; {3} |",
     [("hostile-model.json", f"abandoned_calls.threads.{k}") for k in ("before", "right_after", "after_2s")]
     + [("hostile-model.json", "abandoned_calls.model_requests")]),
]

FIGURES += [  # issue 49, imports with a NUL and imports after a forget (python -m benchmarks import-safety)
    ("benchmarks/results/SECURITY.md", "(omnimem and mem0 fields): files / refused / half-stored | {0} / {1} / {2} | "
     "{3} / {4} / {5} |", [("import-safety.json", f"results.{b}.half_stored.{k}") for b in ("sqlite", "postgresql")
                           for k in ("files", "refused", "half_stored")]),
    ("benchmarks/results/SECURITY.md", "a new unit recorded in 2099): units back / search hits | {0} / {1} | {2} / {3} |",
     [("import-safety.json", f"results.{b}.forgotten.{k}") for b in ("sqlite", "postgresql")
      for k in ("units_back", "search_hits_after")]),
]
FIGURES += [  # issue 49 items 3-4, a slow model and another user's searches (python -m benchmarks slow-model)
    ("benchmarks/results/SECURITY.md", "6 planned searches wait for a 30 s model | {0} ms against {1} ms idle, {2}x | "
     "within 3x | p50 {3} ms", [("slow-model.json", "result.loaded.p95_ms"), ("slow-model.json", "result.idle.p95_ms"),
                                ("slow-model.json", "result.loaded_p95_over_idle_p95"),
                                ("archive/slow-model-before.json", "result.loaded.p50_ms")]),
    ("benchmarks/results/SECURITY.md", "slower (p50 {0} ms) than the later ones (idle p95 {1} ms and {2} ms in rounds 2 "
     "and 3, loaded p95 {3} ms and {4} ms beside them)",
     [("slow-model.json", "result.rounds.0.idle.p50_ms"), ("slow-model.json", "result.rounds.1.idle.p95_ms"),
      ("slow-model.json", "result.rounds.2.idle.p95_ms"), ("slow-model.json", "result.rounds.1.loaded.p95_ms"),
      ("slow-model.json", "result.rounds.2.loaded.p95_ms")]),
]


_Q51 = "archive/final/query-onnx/compare.json"  # issue 51: ONNX queries, every split; the serve-load alternation and profile
FIGURES += [
    ("benchmarks/results/PERF.md", "within 1,000 tokens LoCoMo dev {0} -> {1}, test {2} -> {3}, Mem-Gallery dev {4} -> "
     "{5}, test {6} -> {7}, LongMemEval dev {8} -> {9}, test {10} -> {11};",
     [(_Q51, f"splits.{split}.{side}.1k") for split in ("locomo-dev", "locomo-test", "memgallery-dev", "memgallery-test",
                                                       "longmemeval-dev", "longmemeval-test") for side in ("before", "after")]),
    ("benchmarks/results/PERF.md", "before, with torch queries, {0} of a search thread's samples were inside the torch "
     "query embedding", [("archive/serve-load-51/profile/before-torch-queries.json", "stages.search.embeds its query (torch)")]),
    ("benchmarks/results/PERF.md", "and no gate, {0} inside the ONNX call; now {1} waiting for the gate and {2} in the "
     "query's call, {3} ranking and packing.",
     [("archive/serve-load-51/profile/fast-queries-no-gate.json", "stages.search.embeds its query (ONNX)"),
      ("archive/serve-load-51/profile/after.json", "stages.search.waits for the model gate"),
      ("archive/serve-load-51/profile/after.json", "stages.search.embeds its query (ONNX)"),
      ("archive/serve-load-51/profile/after.json", "stages.search.ranks and packs")]),
    *[("benchmarks/results/PERF.md", f"{run}: search p50 / p95 {{0}} / {{1}} ms, add p95 {{2}} ms, {{3}} requests/s, "
       "{4} lost, load {5} -> {6}",
       [(f"archive/serve-load-51/{run}.json", key) for key in ("search.p50_ms", "search.p95_ms", "add.p95_ms", "requests_per_s",
                                                       "lost_adds", "load_average_1min.before",
                                                       "load_average_1min.end_of_load")])
      for run in (*(f"before-{n}" for n in range(3, 7)), *(f"after-{n}" for n in range(4, 8)))],
    ("benchmarks/results/PERF.md", "the last run's lone search over HTTP took {0} ms before the load",
     [("archive/serve-load-51/after-7.json", "http_search_one_at_a_time.p50_ms")]),
]
_F51, _P51 = "archive/floor-51/search-floor-10000.json", "archive/peers-51/peer-compare.json"  # issue 51, stop 51
FIGURES += [
    ("benchmarks/results/PERF.md", "Scoped to a user: HTTP p50 {0} ms, Python {1} ms, the embedding {2} ms, the core "
     "{3} ms ({4} ms CPU): Python / (embedding + core) = {5}, HTTP / (embedding + core) = {6}. Global: HTTP {7} ms, "
     "Python {8} ms, embedding {9} ms, core {10} ms ({11} ms CPU): Python {12}, HTTP {13}.",
     [(_F51, f"runs.{scope}.{key}") for scope in ("user", "global")
      for key in ("http.p50_ms", "python.p50_ms", "embedding.p50_ms", "core.p50_ms", "core_cpu.p50_ms",
                  "ratio_python_to_floor", "ratio_http_to_floor")]),
    ("benchmarks/results/PERF.md", "Core search within 4 ms: **not met** ({0} / {1} ms CPU).",
     [(_F51, "runs.user.core_cpu.p50_ms"), (_F51, "runs.global.core_cpu.p50_ms")]),
    ("benchmarks/results/PERF.md", "ranking and packing {0} of the server's samples, the query's model call {1}, the "
     "request's parsing, middleware and routing {2}, making the answer {3}, the event loop {4}.",
     [(_F51, f"runs.user.server_profile.shares.{part}") for part in (
         "search: ranks and packs", "search: the query's model call",
         "the request: parse, auth, routing (starlette, fastapi, uvicorn)",
         "search: makes its answer (to_dict, render)", "the event loop itself (asyncio, selectors)")]),
    ("benchmarks/results/PERF.md", "(httpx, {0} ms CPU per search in the client's process)",
     [(_F51, "runs.user.http_client_cpu.p50_ms")]),
    ("benchmarks/results/PERF.md", "`_pack_fitting`) {0} of a profiled {1} ms search, the ranking (`Retriever.rank`, "
     "index lookups, fusion, signals) {2}; inside packing the plan of what fits (`pyramid.fit_plan`) {3}, the day "
     "lines (`context.lines`) {4}, levels 2-3 and the exact count (`finish_context`) {5};",
     [(_F51, f"runs.user.core_profile.omnimem_by_cumulative_time.{n}.cumulative_ms") for n in (6, 4, 7, 11, 13, 8)]),
    ("benchmarks/results/PERF.md", "cached; load {0} -> {1}).",
     [(_F51, "load_average_before.0"), (_F51, "load_average_after.0")]),
    ("benchmarks/results/PERF.md", "| omnimem (three passes) | {0} | {1} / {2} (top_k=20: {3} / {4}) | | |",
     [(_P51, f"omnimem.{key}") for key in ("turns_per_s", "search_p50_ms", "search_p95_ms", "search_top_k_p50_ms",
                                           "search_top_k_p95_ms")]),
    *[("benchmarks/results/PERF.md", f"| {label} | {{0}} | {{1}} / {{2}} | {{3}}x | {{4}}x / {{5}}x |",
       [(_P51, f"{peer}.turns_per_s"), (_P51, f"{peer}.search_p50_ms"), (_P51, f"{peer}.search_p95_ms"),
        (_P51, f"ratios.{peer}.ingest_turns_per_s_omnimem_over_peer"),
        (_P51, f"ratios.{peer}.search_p50_peer_over_omnimem"),
        (_P51, f"ratios.{peer}.search_p50_peer_over_omnimem_top_k")])
      for peer, label in (("mem0", "mem0 2.2.1"), ("chroma", "Chroma 1.5.9"))],
    ("benchmarks/results/PERF.md", "omnimem, mem0, omnimem, Chroma,\n  omnimem; load {0} -> {1})",
     [(_P51, "load_average_before.0"), (_P51, "load_average_after.0")]),
    ("benchmarks/results/PERF.md", "omnimem's three passes ran at {0}, {1} and\n  {2} turns/s",
     [(_P51, f"omnimem.passes_turns_per_s.{n}") for n in range(3)]),
]

_F52, _P52 = "search-floor-10000.json", "peer-compare.json"  # issue 51, stop 52: today's code
FIGURES += [
    ("benchmarks/results/PERF.md", "Scoped to a user: HTTP p50 {0} ms, Python {1} ms, the query embedding {2} ms, the core {3} ms\n"
     "  ({4} ms CPU). Python / (embedding + core) = {5}, HTTP / (embedding + core) = {6}.",
     [(_F52, f"runs.user.{k}") for k in ("http.p50_ms", "python.p50_ms", "embedding.p50_ms", "core.p50_ms",
                                          "core_cpu.p50_ms", "ratio_python_to_floor", "ratio_http_to_floor")]),
    ("benchmarks/results/PERF.md", "Global: HTTP {0}\n  ms, Python {1} ms, the core {2} ms CPU; Python {3}, HTTP {4}.",
     [(_F52, f"runs.global.{k}") for k in ("http.p50_ms", "python.p50_ms", "core_cpu.p50_ms",
                                            "ratio_python_to_floor", "ratio_http_to_floor")]),
    ("benchmarks/results/PERF.md", "omnimem ingests {0}\n  turns/s (passes {1}, {2}, {3}), mem0 2.2.1 {4} and Chroma 1.5.9 {5}",
     [(_P52, "omnimem.turns_per_s"), *[(_P52, f"omnimem.passes_turns_per_s.{n}") for n in range(3)],
      (_P52, "mem0.turns_per_s"), (_P52, "chroma.turns_per_s")]),
    ("benchmarks/results/PERF.md", "**{0}x** and **{1}x**",
     [(_P52, "ratios.mem0.ingest_turns_per_s_omnimem_over_peer"),
      (_P52, "ratios.chroma.ingest_turns_per_s_omnimem_over_peer")]),
    ("benchmarks/results/PERF.md", "omnimem's search p50 is {0} ms with its default 6,000-token context ({1} ms with `top_k=20`), "
     "mem0's\n  {2} ms ({3}x) and Chroma's {4} ms ({5}x)",
     [(_P52, "omnimem.search_p50_ms"), (_P52, "omnimem.search_top_k_p50_ms"), (_P52, "mem0.search_p50_ms"),
      (_P52, "ratios.mem0.search_p50_peer_over_omnimem"), (_P52, "chroma.search_p50_ms"),
      (_P52, "ratios.chroma.search_p50_peer_over_omnimem")]),
]

_S52 = ["serve-load.json", "archive/serve-load-52/after-2.json"]  # issue 51, stop 52: today's code, idle host
FIGURES += [
    ("docs/serving.md", "Under the 32-client load the add p95 is {0} ms and searches have p50 {1} ms, at {2} requests/s.",
     [("serve-load.json", "add.p95_ms"), ("serve-load.json", "search.p50_ms"), ("serve-load.json", "requests_per_s")]),
    ("benchmarks/results/PERF.md", "p50 {0} / {1} ms, p95 {2} / {3} ms at {4} / {5} requests/s",
     [*[(f, "search.p50_ms") for f in _S52], *[(f, "search.p95_ms") for f in _S52],
      *[(f, "requests_per_s") for f in _S52]]),
    ("benchmarks/results/PERF.md", "**met**: {0} / {1} ms, {2} lost (today's code, idle host)",
     [*[(f, "add.p95_ms") for f in _S52], (_S52[0], "lost_adds")]),
    ("benchmarks/results/PERF.md", "burst p95 {0} / {1} ms against the model's {2} / {3} ms for the 24 texts",
     [*[(f, "burst.burst_add.p95_ms") for f in _S52], *[(f, "burst.model_alone.burst_texts_p50_ms") for f in _S52]]),
]

def _value(file: str, path: str) -> Any:
    data: Any = json.loads((RESULTS / file).read_text(encoding="utf-8"))
    parts = path.split(".")
    while parts:  # a key may hold a dot itself (the system x-session-0.5): the longest key present wins
        if isinstance(data, list):  # a list's item by its index (retrieval-targets.json's targets)
            data, parts = data[int(parts[0])], parts[1:]
            continue
        take = next(n for n in range(len(parts), 0, -1) if n == 1 or ".".join(parts[:n]) in data)
        data, parts = data[".".join(parts[:take])], parts[take:]
    return data


RERUNS_47 = [  # stop 47's default (depth read deeper where candidates run out, elide_speakers="auto") re-run
    (f"archive/final/default-47/{data}-{split}.json", f"archive/{data}-retrieval-{split}-planner-offline.json")
    for data, split in (("locomo", "dev"), ("locomo", "test"), ("memgallery", "dev"), ("memgallery", "test"),
                        ("longmemeval", "dev"), ("longmemeval", "test"))
]


@pytest.mark.parametrize(("rerun", "committed"), RERUNS_47, ids=[r for r, _ in RERUNS_47])
def test_reading_deeper_and_eliding_speakers_keep_every_questions_recall(rerun: str, committed: str) -> None:
    """The data sets give a session one time and fill a budget at the first depth: neither change moves them."""
    again, before = _value(rerun, "per_question.omnimem"), _value(committed, "per_question.omnimem")
    assert again == before and len(again["1k"]) == len(again["6k"]) > 90
    assert _value(rerun, "systems.omnimem.overall") == _value(committed, "systems.omnimem.overall")


RERUNS_52 = [  # stop 52: the retrieval stages and the one packer (a35e18b), every split re-run
    (f"archive/stages-52/{data}-{split}.json", f"{data}-{split}.json")
    for data in ("locomo", "memgallery", "longmemeval") for split in ("dev", "test")
]


@pytest.mark.parametrize(("rerun", "committed"), RERUNS_52, ids=[r for r, _ in RERUNS_52])
def test_the_retrieval_stages_and_the_one_packer_keep_every_questions_recall(rerun: str, committed: str) -> None:
    """The learnt default and the rules ranking give every question the recall of the committed runs."""
    for system in ("omnimem", "rules"):
        again, before = _value(rerun, f"per_question.{system}"), _value(committed, f"per_question.{system}")
        assert again == before and len(again["1k"]) == len(again["6k"]) > 90
        assert _value(rerun, f"systems.{system}.overall") == _value(committed, f"systems.{system}.overall")


FIGURES += [  # issue 52: what omnimem hook claude-code costs (python -m benchmarks hook-cost)
    ("docs/claude-code.md", "Measured on 2 shared cores at a load average of {0} (`python -m benchmarks hook-cost`",
     [("hook-cost.json", "load_average.0")]),
    ("docs/claude-code.md", "a prompt waited {0} s for its memory from a store folder ({1} s of CPU: the imports, "
     "the query model, one search) and {2} s from a running `omnimem serve` ({3} s of CPU). The first prompt after "
     "a capture took {4} s.",
     [("hook-cost.json", "recall_folder.warm_median_s"), ("hook-cost.json", "recall_folder.warm_cpu_median_s"),
      ("hook-cost.json", "recall_server.warm_median_s"), ("hook-cost.json", "recall_server.warm_cpu_median_s"),
      ("hook-cost.json", "recall_folder.cold_s")]),
    ("docs/claude-code.md", "Storing a session of {0} turns took {1} s ({2} s of CPU, most of it the embedding "
     "model), storing it again {3} s, and storing {4} new turns {5} s.",
     [("hook-cost.json", "turns"), ("hook-cost.json", "capture_new_store_s"),
      ("hook-cost.json", "capture_new_store_cpu_s"), ("hook-cost.json", "capture_nothing_new_s"),
      ("hook-cost.json", "grown_new_turns"), ("hook-cost.json", "capture_grown_s")]),
]
FIGURES += [  # stop 48: the signals' margin moves a few hits, none that count
    ("benchmarks/results/CURRENT.md", "a few hits move (Mem-Gallery test recall@5 {0} -> {1}, LongMemEval dev NDCG@10 {2} "
     "-> {3}).", [("archive/final/default-47/memgallery-test.json", "systems.omnimem.overall.@5"),
                  ("archive/final/default-48/memgallery-test.json", "systems.omnimem.overall.@5"),
                  ("archive/final/default-47/longmemeval-dev.json", "systems.omnimem.overall.t_ndcg@10"),
                  ("archive/final/default-48/longmemeval-dev.json", "systems.omnimem.overall.t_ndcg@10")]),
]

FIGURES += [  # issue 53 items 4 and 5: the poisoning benchmark and redact_pii (python -m benchmarks poisoning, redaction)
    *[("docs/security.md", f"| {name} | " + " | ".join(f"{{{2 * i}}} / {{{2 * i + 1}}}" for i in range(5)) + " |",
       [("poisoning.json", f"variants.{name}.{metric}_{b}") for metric in
        ("recall", "evidence_pushed_out", "plant_in_context", "plant_token_share", "fenced_token_share")
        for b in ("1k", "6k")])
      for name in ("clean", "plants", "plants, novelty off", "plants in the last session",
                   "plants in the last session, novelty window 5000", "plants untrusted, fenced",
                   "plants untrusted, min_trust=trusted", "plants untrusted, max_source_share=0.1")],
    ("docs/security.md", "source, take {0} of the tokens within 1,000 and {1} within 6,000 (against {2} and {3} fenced "
     "but uncapped). They still reach every 6,000-token context, fenced. Recall stays near the clean store's ({4} / {5})",
     [("poisoning.json", f"variants.plants untrusted, {v}") for v in (
         "max_source_share=0.1.plant_token_share_1k", "max_source_share=0.1.plant_token_share_6k",
         "fenced.plant_token_share_1k", "fenced.plant_token_share_6k", "max_source_share=0.1.recall_1k",
         "max_source_share=0.1.recall_6k")]),
    ("docs/security.md", "Undefended, plants reach the context of many questions: {0} of them within 1,000 tokens and all "
     "of them within 6,000, where they take {1} of the tokens.",
     [("poisoning.json", "variants.plants.plant_in_context_1k"), ("poisoning.json", "variants.plants.plant_token_share_6k")]),
    ("docs/security.md", "instructions phrased for many questions still enter {0} of the 6,000-token contexts. They push "
     "out little real evidence ({1} of what was visible within 1,000 tokens)",
     [("poisoning.json", "variants.plants.instruction_in_context_6k"),
      ("poisoning.json", "variants.plants.evidence_pushed_out_1k")]),
    *[("docs/security.md", f"| `<{kind}>` | {{0}} | {{1}} | {{2}} | {{3}} |",
       [("redaction.json", f"quality.kinds.{kind}.{k}") for k in ("labelled", "precision", "recall", "leak_rate")])
      for kind in ("EMAIL", "IBAN", "CARD", "ACCOUNT", "PHONE", "ADDRESS", "PERSON")],
    ("docs/security.md", "| all | {0} | {1} | {2} | {3} |",
     [("redaction.json", f"quality.all.{k}") for k in ("labelled", "precision", "recall", "leak_rate")]),
    ("docs/security.md", "An `add` took {0} ms more CPU with redaction on ({1} ms against {2} ms), a dialogue turn {3} ms "
     "more ({4} against {5} ms): the fake embedder, an in-memory store, 2 shared cores at a load average of {6}.",
     [("redaction.json", f"cost.{k}") for k in ("add_cpu_ms_added", "add_cpu_ms_on", "add_cpu_ms_off",
                                                "dialogue_cpu_ms_added", "dialogue_cpu_ms_on", "dialogue_cpu_ms_off")]
     + [("redaction.json", "load_average.0")]),
]

FIGURES += figures.checks()  # CURRENT.md's generated tables (benchmarks/harness/figures.py: each cell's figures)
FIGURES += [
    ("docs/configuration.md", "On LoCoMo test, naive dense search within 1,000 tokens finds {0} of the gold turns with "
     "e5 and {1} with MiniLM; the search with `ranking=\"learnt\"` finds {2} with e5 and {3} with MiniLM",
     [("e5-locomo-test.json", "systems.naive-dense.overall.1k"),
      ("locomo-test.json", "systems.naive-dense.overall.1k"),
      ("e5-locomo-test.json", "systems.omnimem.overall.1k"),
      ("locomo-test.json", "systems.omnimem.overall.1k")]),
    ("benchmarks/results/CURRENT.md", "LoCoMo test multi-hop within 1,000 tokens {0} (rules {1}, target 0.70)",
     [("locomo-test.json", "systems.omnimem.categories.1.1k"),
      ("locomo-test.json", "systems.rules.categories.1.1k")]),
]

FIGURES += [  # issue 54: the figures the settings' comments carried, in the LoCoMo log
    ("benchmarks/results/experiments/locomo.md", "default {0} / {1} within 1k / 6k; BM25 off (`sparse=false`) {2} / {3}; "
     "dense off (`dense=false`) {4} / {5}; `sparse_context=0` {6} / {7}; `embed_dates=true` {8} / {9}; `rrf_k=20` {10} / "
     "{11}; `diversity=0.5` {12} / {13}; the paper's retrieval (`fusion=\"union\"`, `packing=\"line\"`, 60-word "
     "summaries) {14} / {15}",
     [("archive/locomo-retrieval-dev-custom.json", overall(s, k)) for s in (
         "omnimem", "no-bm25", "no-dense", "x-no-sparse-context", "x-dates", "x-rrf-k20", "x-diversity-0.5",
         "omnimem-paper") for k in BOTH]),
    ("benchmarks/results/experiments/locomo.md", "(`dense_without_names=false`) {0} / {1} against the default's {2} / {3}",
     [("archive/locomo-retrieval-dev-honest-score.json", overall(s, k))
      for s in ("x-dense_without_names=false", "omnimem") for k in BOTH]),
    ("benchmarks/results/experiments/locomo.md", "each signal alone on the same dev runs (against {0} and {1} within 1k): "
     "the speaker field (`speaker_weight=0.5`) {2} and {3}, the time list (`time_weight=1`) {4} and {5}",
     [(f, overall(s, "1k")) for s in ("omnimem", "x-speaker-field-0.5", "x-time") for f in (RANK_DEV_X, LME_DEV_X)]),
    ("benchmarks/results/experiments/locomo.md", "within 1k, learnt against the rules: LoCoMo dev {0} against {1}, "
     "Mem-Gallery dev {2} against {3}, LongMemEval dev {4} against {5}; within 6k the same as the rules on each dev "
     "split. It won on every dev split, so it is the default. Test, reported: LoCoMo {6} against {7}, Mem-Gallery {8} "
     "against {9}, LongMemEval {10} against {11}",
     [(f"{d}-{split}.json", overall(s, "1k")) for split in ("dev", "test") for d in ("locomo", "memgallery", "longmemeval")
      for s in ("omnimem", "rules")]),
    ("benchmarks/results/experiments/locomo.md", "on the synthetic chat a default context holds {0}x (1,000 tokens) and "
     "{1}x (6,000) the turns of a plain `speaker: text` list of the same hits, against {2}x / {3}x with every name "
     "written and {4}x / {5}x with a stamp wherever the minute changes",
     [("packing-cost.json", f"short_rows.{r}.ratio") for r in ("day auto 1000", "day auto 6000", "day 1000", "day 6000",
                                                             "day stamp_gap=1 1000", "day stamp_gap=1 6000")]),
    ("benchmarks/results/experiments/locomo.md", "recall is the same at `stamp_gap` 1, 30 and 60 (LoCoMo dev {0} / {1}). "
     "Names left out under lines of the same time too (`elide_speakers=true`): LoCoMo dev {2} / {3} against {4} / {5}",
     [("archive/locomo-retrieval-dev-stamps.json", overall(s, k)) for s in ("x-stamp-gap-1",) for k in BOTH]
     + [("archive/locomo-retrieval-dev-elide.json", overall(s, k)) for s in ("x-elide-speakers", "omnimem")
        for k in BOTH]),
]

RERUNS_48 = [  # stop 48's default (signal_margin=0.15: a signal re-orders near ties only) re-run on every split
    (f"archive/final/default-48/{data}-{split}.json", f"archive/final/default-47/{data}-{split}.json")
    for data, split in (("locomo", "dev"), ("locomo", "test"), ("memgallery", "dev"), ("memgallery", "test"),
                        ("longmemeval", "dev"), ("longmemeval", "test"))
]


@pytest.mark.parametrize(("rerun", "committed"), RERUNS_48, ids=[r for r, _ in RERUNS_48])
def test_the_signal_margin_leaves_every_questions_recall_as_committed(rerun: str, committed: str) -> None:
    """Every question's recall within 1k and 6k tokens is as committed; the margin moves a few hits of Mem-Gallery
    (dev: the 1k contexts' mean tokens 974.8173 -> 974.8331; test: recall@5 0.6946 -> 0.6948) and LongMemEval (dev:
    NDCG@10 0.5769 -> 0.5772), none that count."""
    again, before = _value(rerun, "per_question.omnimem"), _value(committed, "per_question.omnimem")
    assert again == before and len(again["1k"]) == len(again["6k"]) > 90
    now, then = _value(rerun, "systems.omnimem.overall"), _value(committed, "systems.omnimem.overall")
    assert {k: now[k] for k in ("1k", "6k", "over_1k", "over_6k")} == {k: then[k] for k in ("1k", "6k", "over_1k",
                                                                                          "over_6k")}
    assert now["@5"] >= then["@5"] and now["@20"] >= then["@20"]  # the ranking no worse at the top


def _squeeze(text: str) -> str:
    return " ".join(text.split())


def _page(path: str) -> str:
    return (ROOT / path).read_text(encoding="utf-8")


@pytest.mark.parametrize(("document", "phrase", "sources"), FIGURES, ids=[f"{d.split('/')[-1]}: {p[:40]}" for d, p, _ in FIGURES])
def test_doc_figures_equal_the_committed_results(document: str, phrase: str, sources: list[tuple[Any, ...]]) -> None:
    pattern = re.escape(_squeeze(phrase))
    for n in range(len(sources)):
        pattern = pattern.replace(re.escape("{" + str(n) + "}"), r"([-+]?[0-9][0-9.,]*)", 1)  # signed: a difference
    found = re.search(pattern, _squeeze(_page(document)))
    assert found, f"{document} no longer says: {phrase!r}"
    for quoted, (file, path, *scale) in zip(found.groups(), sources, strict=True):  # scale: shown as value x scale
        digits = len(quoted.split(".")[1]) if "." in quoted else 0
        factor = Decimal(str(scale[0] if scale else 1))
        value, shown = Decimal(str(_value(file, path))) * factor, Decimal(quoted.replace(",", ""))
        half = Decimal(5).scaleb(-digits - 1)  # the value rounded to the digits quoted (a tie either way)
        assert abs(value - shown) <= half, f"{document} says {quoted} where {file} {path} is {value}"


def test_every_page_that_quotes_figures_is_checked() -> None:
    """The current figures and each experiment log have their figures here (a page left out would drift)."""
    checked = {d for d, _, _ in FIGURES}
    assert {"README.md", "benchmarks/results/CURRENT.md"} <= checked
    assert {p for p in PAGES if p.startswith("benchmarks/results/experiments/") and not p.endswith("speed.md")} <= checked


# The names each block's surrounding prose assumes the reader has, made before the block runs.
GIVEN: dict[int, str] = {
    2: """
mem = Memory(path="./mem")
questions = ["What did Melanie paint?", "Where did Caroline go?"]
turns = [{"speaker": "Melanie", "text": "I painted a lake at sunrise.", "time": "2023-05-08T13:56"}]
""",
    3: """
from omnimem.llm.fake import FakeLLM
mem.close()
my_llm = FakeLLM('{"summary": "Ann wrote about the harbour, its boats and the weather."}')
long_text = " ".join(["Ann wrote a long note about the harbour, the boats and the weather."] * 40)
""",
    4: """
mem.close()
mem = Memory(path="./graph-mem", graph=True, enrich="sync")
mem.add("Melanie (Mel) painted a sunset in Seattle with Caroline.", user_id="mel")
""",
    5: """
mem.close()
mem = Memory(path="./mem")
unit_id = mem.add("Melanie lives in Portland", user_id="mel").id
old_id = mem.add("the meeting is on Monday").id
other = Memory(path="./other")
""",
    6: """
from omnimem.mcp import Caller

def my_key_lookup(token):  # the reader's own key check; omnimem serve passes its key table's
    return Caller("key:reader", "read")
""",
}
LEFT_OUT = {1: "media files and the audio/vision models (tests/media runs add_image, add_audio, add_video)"}


# the pages whose python blocks run as one session, in this order (GIVEN and LEFT_OUT count blocks across them)
SESSION = ["README.md", "docs/multimodal.md", "docs/llm.md", "docs/graph.md", "docs/governance.md", "docs/mcp.md"]


def _python_blocks() -> list[tuple[str, str]]:
    return [(page, block) for page in SESSION for block in re.findall(r"```python\n(.*?)```", _page(page), re.S)]


def test_the_docs_python_blocks_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMNIMEM_EMBEDDER", "fake")
    monkeypatch.chdir(tmp_path)
    blocks = _python_blocks()
    assert set(GIVEN) | set(LEFT_OUT) <= set(range(len(blocks)))  # the setup names blocks that exist
    namespace: dict[str, Any] = {"__name__": "readme"}
    exec("from omnimem import Memory", namespace)  # noqa: S102 - the README's own code
    ran = []
    try:
        for n, (page, block) in enumerate(blocks):
            if n in LEFT_OUT:
                continue
            exec(GIVEN.get(n, ""), namespace)  # noqa: S102
            exec(compile(block, f"{page} python block {n}", "exec"), namespace)  # noqa: S102
            ran.append(n)
    finally:
        for name in ("mem", "other", "memory"):
            if hasattr(namespace.get(name), "close"):
                namespace[name].close()
    assert ran == [n for n in range(len(blocks)) if n not in LEFT_OUT]
    assert namespace["prompt_context"] and namespace["answer"].answer is None  # offline: the evidence, no answer


GROUPS = {"graph", "keys"}  # commands with subcommands


def _shell_lines(text: str) -> list[str]:
    """Each command of a page's shell blocks and synopses (``text``), its comment cut, split at ``&&`` and ``;``;
    a command inside ``$(...)`` is one too."""
    lines = []
    for lang, block in re.findall(r"```(\w*)\n(.*?)```", text, re.S):
        if lang not in ("bash", "sh", "shell", "text"):
            continue
        for line in block.replace("\\\n", " ").splitlines():
            command = line.split("  #")[0].split(" # ")[0].strip()
            pieces = [*re.findall(r"\$\((omnimem [^)]*)\)", command), re.sub(r"\$\([^)]*\)", "", command)]
            lines += [piece.strip() for p in pieces for piece in re.split(r"&&|;", p) if piece.strip()]
    return lines


def _cli_lines(pages: list[str] | None = None) -> list[tuple[str, str]]:
    """(page, what follows ``omnimem``) for every omnimem command on the pages."""
    return [(page, piece[len("omnimem "):]) for page in (pages or PAGES) for piece in _shell_lines(_page(page))
            if piece.startswith("omnimem ")]


def _invocations(line: str) -> list[tuple[list[str], list[str]]]:
    """(command words, --options shown) for each ``a | b | c`` alternative of a README line."""
    found = []
    for segment in re.split(r" \| ", line):
        words = segment.split()
        while words and words[0] == "--url":  # the global option and its value
            words = words[2:]
        if not words:
            continue
        if words[0].startswith("-") and found:  # `queue --retry ID | --retry-all`: options of the same command
            found[-1][1].extend(o for w in words for o in re.findall(r"--[a-z][a-z-]*", w))
            continue
        command = words[:2] if words[0] in GROUPS and len(words) > 1 else words[:1]
        options = sorted({o.split("=")[0] for w in words for o in re.findall(r"--[a-z][a-z-]*", w)})
        found.append((command, options))
    return found


def test_the_docs_cli_commands_exist_with_the_options_shown() -> None:
    runner = CliRunner()
    lines = _cli_lines()
    assert len(lines) > 30  # the CLI page, PostgreSQL, serving, MCP
    checked = set()
    for page, line in lines:
        for command, options in _invocations(line):
            helped = runner.invoke(app, [*command, "--help"], terminal_width=200)
            assert helped.exit_code == 0, f"`omnimem {' '.join(command)}` from {page}: {helped.output}"
            text = helped.output
            missing = [o for o in options if o not in text and o != "--help"]
            assert not missing, f"`omnimem {' '.join(command)}` has no {missing} ({page}: omnimem {line})"
            checked.add(" ".join(command))
    assert {"search", "add", "import", "pg-start", "serve", "mcp", "graph show", "keys create"} <= checked
    readme = {" ".join(c) for _, line in _cli_lines(["README.md"]) for c, _ in _invocations(line)}
    assert {"add", "search", "keys create", "serve"} <= readme  # the tour's CLI and server walkthrough


def test_the_contributing_commands_name_what_exists() -> None:
    """CONTRIBUTING.md's commands: the test files, type-check paths and benchmark commands exist, with the options shown."""
    lines = _shell_lines(CONTRIBUTING)
    tests = [line for line in lines if " -m pytest" in line]
    assert len(tests) >= 3 and any(line.endswith("-m pytest -q") for line in tests)  # the loop, the floors, the suite
    for line in tests + [line for line in lines if " -m mypy" in line]:
        for path in re.findall(r"\s((?:tests|omnimem)[^\s]*)", line):
            assert (ROOT / path).exists(), f"CONTRIBUTING.md names {path}, which does not exist"
    benches = [line.split("python -m benchmarks", 1)[1].split() for line in lines if "python -m benchmarks" in line]
    assert benches and any(words and not words[0].startswith("-") for words in benches)
    for words in benches:
        command = [w for w in words[:1] if not w.startswith("-")]
        out = subprocess.run([sys.executable, "-m", "benchmarks", *command, "--help"], capture_output=True, text=True,
                             cwd=ROOT, timeout=120, env={**os.environ, "COLUMNS": "200"})
        assert out.returncode == 0, f"python -m benchmarks {' '.join(command)} --help: {out.stderr}"
        missing = [o for o in re.findall(r"--[a-z][a-z-]*", " ".join(words)) if o not in out.stdout]
        assert not missing, f"`python -m benchmarks {' '.join(command)}` has no {missing}"
    for path in re.findall(r"`((?:tests|omnimem|benchmarks)/[^`\s]*\.py)`", CONTRIBUTING):
        assert (ROOT / path).exists(), f"CONTRIBUTING.md names {path}, which does not exist"


def _links(page: str) -> list[str]:
    return [link.split("#")[0] for link in re.findall(r"\]\(([^)\s]+)\)", _page(page))
            if not re.match(r"[a-z]+:", link) and not link.startswith("#")]


def test_the_pages_links_point_at_files_that_exist() -> None:
    for page in PAGES:
        for link in _links(page):
            assert (ROOT / page).parent.joinpath(link).resolve().exists(), f"{page} links {link}, which does not exist"


def test_the_docs_index_links_every_doc() -> None:
    linked = {(ROOT / "docs" / link).resolve() for link in _links("docs/index.md")}
    missing = [p.name for p in sorted((ROOT / "docs").glob("*.md")) if p.name != "index.md" and p.resolve() not in linked]
    assert not missing, f"docs/index.md does not link {missing}"


def test_the_readme_says_how_to_install_each_extra() -> None:
    """Every extra of pyproject.toml (but the test set) has its row in the README's install table."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    table = README.split("## Install only what you need", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1] for line in table.splitlines() if line.startswith("| `")]
    missing = [name for name in extras if name != "test" and not any(f"`{name}`" in row for row in rows)]
    assert not missing, f"the README's install table has no row for the extras {missing}"


def test_the_readme_cli_tour_runs_verbatim_in_an_empty_folder(tmp_path: Path) -> None:
    """The tour's CLI block, as printed, with the real model (the server block runs in tests/test_docs_servers.py)."""
    tour = README.split("### CLI", 1)[1]
    block = re.search(r"```bash\n(.*?)```", tour, re.S)
    assert block and "omnimem add" in block.group(1)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "COLUMNS": "200"}  # the table's rows unwrapped
    env.pop("OMNIMEM_EMBEDDER", None)
    env.pop("OMNIMEM_STORE", None)
    out = subprocess.run(["bash", "-e", "-c", block.group(1)], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert "red kayak" in out.stdout and "units: 1" in out.stdout  # the search finds it; stats counts it


def test_the_readme_is_short_and_starts_with_the_two_commands() -> None:
    """A newcomer's page: at most ~300 lines, and its first code block is the install-and-demo command and
    the test command, exactly what .ci/run runs."""
    assert len(README.splitlines()) <= 300, "the README is a user's page: move detail to docs/ or benchmarks/results/"
    first = re.search(r"```bash\n(.*?)```", README, re.S)
    assert first is not None
    commands = first.group(1).strip().splitlines()
    assert len(commands) == 2 and commands[0].endswith("omnimem demo") and commands[1].endswith("pytest -q")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert commands[0].replace("pip install ", "pip install -q ") in ci and "python -m pytest -q" in ci
    assert README.index(first.group(0)) < README.index("\n## ")  # before any section


@pytest.mark.parametrize("page", ["docs/python.md", "docs/planner.md", "docs/plugins.md", "docs/configuration.md",
                                  "docs/retrieval.md", "docs/security.md"])
def test_a_reference_pages_python_block_runs_verbatim_in_an_empty_folder(page: str, tmp_path: Path) -> None:
    """The pages whose every python block stands alone (no earlier block assumed), as a user pastes it, each in
    an empty folder of its own."""
    blocks = re.findall(r"```python\n(.*?)```", _page(page), re.S)
    assert blocks
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    env.pop("OMNIMEM_EMBEDDER", None)
    for number, block in enumerate(blocks):
        folder = tmp_path / str(number)
        folder.mkdir()
        out = subprocess.run([sys.executable, "-c", block], cwd=folder, env=env, capture_output=True, text=True,
                             timeout=300)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip()
