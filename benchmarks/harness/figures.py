"""The figures of CURRENT.md's generated tables, declared once: each cell's text, its figures' file, key, digits.

    python -m benchmarks current            # rewrite the tables of benchmarks/results/CURRENT.md from TABLES
    python -m benchmarks current --check    # exit 1, naming the table, when a page differs from its files

CURRENT.md's generated tables: the retrieval table of the learnt ranking (every split, with its intervals), the
same runs with e5, the round before it (rules ranking), speed, and serving (HTTP load, answering, enrichment, media,
reliability, graph ingest): every table of the page but PostgreSQL's prose.
A table sits in its page between ``<!-- generated: NAME -->`` and ``<!-- end generated -->``; the prose around
it is written by hand. Each cell is a template with ``{0}``, ``{1}`` ... for its figures, and each figure names
its results file (relative to ``benchmarks/results``), the dotted key path inside it (the longest key present
wins, so a key may hold a dot; a number indexes a list) and the digits it is shown with. ``tests/test_docs.py``
checks the same figures through :func:`checks`, and ``tests/bench/test_results_layout.py`` that each page
equals what :func:`regenerate` makes of it.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.harness.paths import RESULTS


@dataclass(frozen=True)
class Figure:
    """One number: its results file, the key path in it, the digits it is shown with and the factor it is shown
    at (0.001: ms as s, 100: a share as a percentage)."""

    file: str
    key: str
    digits: int = 3
    scale: float = 1


@dataclass(frozen=True)
class Cell:
    """A table cell: its text, with ``{n}`` for the n-th of its figures."""

    template: str
    figures: tuple[Figure, ...]


@dataclass(frozen=True)
class Table:
    """A generated table: its marker name, its page (relative to the results folder), its header, the column
    alignment line and its rows (a label, then the cells)."""

    name: str
    page: str
    head: tuple[str, ...]
    align: str
    rows: tuple[tuple[str, tuple[Cell, ...]], ...]


SPLITS = (("locomo", "dev", "LoCoMo dev"), ("locomo", "test", "LoCoMo test"), ("memgallery", "dev", "Mem-Gallery dev"),
          ("memgallery", "test", "Mem-Gallery test"), ("longmemeval", "dev", "LongMemEval dev"),
          ("longmemeval", "test", "LongMemEval test"))


def _one(file: str, key: str) -> Cell:
    return Cell("{0}", (Figure(file, key),))


def _learnt(file: str) -> tuple[Cell, ...]:
    """The learnt ranking with its 95% interval, the rules ranking and naive dense, within 1,000 then 6,000 tokens."""
    cells: list[Cell] = []
    for k in ("1k", "6k"):
        interval = tuple(Figure(file, f"intervals.omnimem.{k}.{p}") for p in ("mean", "low", "high"))
        cells.append(Cell("{0} [{1}, {2}]", interval))
        cells += [_one(file, f"systems.{s}.overall.{k}") for s in ("rules", "naive-dense")]
    return tuple(cells)


def _plain(file: str) -> tuple[Cell, ...]:
    systems = ("omnimem", "rules", "naive-dense")
    return tuple(_one(file, f"systems.{s}.overall.{k}") for k in ("1k", "6k") for s in systems)


def _in(file: str, *figures: str) -> tuple[Figure, ...]:
    """Figures of one file, each ``key:digits`` or ``key:digits:scale``."""
    out = []
    for spec in figures:
        key, digits, *scale = spec.split(":")
        out.append(Figure(file, key, int(digits), float(scale[0]) if scale else 1))
    return tuple(out)


SERVING: tuple[tuple[str, tuple[Cell, ...]], ...] = (  # the serving table: each row's one cell and its figures
    ('HTTP load ([serve-load.md](serve-load.md), `python -m benchmarks serve-load --clients 32 --seconds '
     '45 --add-share 0.3 --burst 24`)',
     (Cell('32 clients, 70% search / 30% add, one worker: a burst of 24 adds has p95 {0} ms against {1} ms for'
           ' a lone add (target 6x: not met, {2}x); the model alone takes {3}x for those texts, and the issue '
           "39 target, the burst within 1.25x of the model's own time, is not met either: {4} against {5} ms, "
           '1.54x; add p95 under the 32-client load {6} ms, searches p50 {7} / p95 {8} ms, {9} requests/s, '
           '{10} lost; the details in [docs/serving.md](../../docs/serving.md)',
           _in('serve-load.json', 'burst.burst_add.p95_ms:0', 'burst.lone_add.p95_ms:0',
                                   'burst.ratio_burst_to_lone_p95:2',
                                   'burst.model_alone.ratio_burst_to_one_p50:2',
                                   'burst.burst_add.p95_ms:0', 'burst.model_alone.burst_texts_p50_ms:0',
                                   'add.p95_ms:0', 'search.p50_ms:0', 'search.p95_ms:0',
                                   'requests_per_s:1', 'lost_adds:0')),)),
    ('parallel answering (`python -m benchmarks parallel-qa`) ([parallel-qa.md](parallel-qa.md))',
     (Cell("300 ms fake model, today's default retrieval: {0} q/s with 1 worker, {1} with 8 (ideal {2} / 26.7)",
           _in('parallel-qa.json', 'results.0.qps_median:2', 'results.3.qps_median:1',
                                    'ceiling_qps_per_worker:2')),)),
    ('adds with an LLM (`python -m benchmarks enrich`) ([enrich.md](enrich.md))',
     (Cell('model answering after 1 s, ~200-word notes needing a summary, idle machine: `add` p50 {0} ms / p95'
           ' {1} ms queued (0.95x the raw MiniLM embedder on the same text: the embedding is what is left; {2}'
           ' / {3} ms with the int8 ONNX embedder, [enrich-onnx.md](enrich-onnx.md)) vs p95 {4} s with '
           '`enrich="sync"`; enriched version searchable {5} s after the add with an empty queue; queue {6} / '
           '{7} / {8} jobs/s with 1 / 2 / 4 workers (ideal 1 / 2 / 4)',
           _in('enrich.json', 'adds.0.add_ms.p50:0', 'adds.0.add_ms.p95:0')
           + _in('enrich-onnx.json', 'adds.0.add_ms.p50:0', 'adds.0.add_ms.p95:0')
           + _in('enrich.json', 'adds.1.add_ms.p95:2:0.001',
                               'until_searchable_one_at_a_time_ms.p50:2:0.001',
                               'throughput.0.jobs_per_s:2', 'throughput.1.jobs_per_s:2',
                               'throughput.2.jobs_per_s:2')),)),
    ('media filters (`python -m benchmarks media`) ([MEDIA.md](MEDIA.md))',
     (Cell('scene cuts recall {0} / precision {1} at 1 fps; VAD recall {2}, precision {3} ({4} with a 0.2 s '
           'collar); WER {5} on synthetic speech',
           _in('media.json', 'video.summary.sampled_1fps.recall:1',
                              'video.summary.sampled_1fps.precision:2',
                              'audio.summary.vad_strict.recall:1', 'audio.summary.vad_strict.precision:2',
                              'audio.summary.vad_collar.precision:2', 'audio.summary.wer_pipeline:2')),)),
    ('reliability (`python -m benchmarks reliability`) ([RELIABILITY.md](RELIABILITY.md))',
     (Cell('{0}/{1} SIGKILLs survived, {2} writes lost, {3} forgotten bytes left on disk, {4} cross-scope '
           'leaks',
           _in('reliability.json', 'results.crash.kills:0', 'results.crash.iterations:0',
                                    'results.crash.writes_lost_or_inconsistent:0',
                                    'results.crash.files_with_forgotten_text_after_forgetting_all:0',
                                    'results.negative.leaks_across_scopes:0')),)),
    ('isolation, Hardening III (`python -m benchmarks scope-probe`) ([SECURITY.md](SECURITY.md))',
     (Cell("issue #35's figures with targets and commands: LangGraph label spellings, import id takeover, time"
           ' fuzz 5xx, ingest-race duplicates, dialogue-stall p95 ratio',
           ()),)),
    ('knowledge graph ingest ([graph-ingest.md](graph-ingest.md), `python -m benchmarks graph-ingest '
     '--limit 2`)',
     (Cell('on LoCoMo, ingest with the graph work in the add ran at {0}% of the speed with the graph off, the '
           "graph work itself at {1} turns/s (spaCy's pipeline alone {2})",
           _in('graph-ingest.json', 'on_vs_off:0:100', 'graph_work_turns_per_s:1',
                                     'extraction_turns_per_s:0')),)),
)


RETRIEVAL_ROUND: tuple[tuple[str, tuple[Cell, ...]], ...] = (  # the round before the learnt ranking
    ('Defaults of this round, measured together on the final code (`locomo-retrieval-test-final`, '
     '`locomo-retrieval-dev-final`, `longmemeval-retrieval-test-final` and '
     '`longmemeval-retrieval-dev-final` with `--limit 36`, `memgallery-retrieval-test-final`; the commands'
     ' are in the files)',
     (Cell("this round's defaults together (the speaker, time and session signals, the best hits whole within "
           'half the budget, day packing, long turns indexed by their first 100 words and said in 20 when not '
           'shown whole): LoCoMo test within 1,000 tokens {0}, within 6,000 {1} (multi-hop {2} / {3}), naive '
           'dense {4} / {5}; LoCoMo dev {6} / {7}, naive dense {8} / {9}; LongMemEval 36 test questions {10} /'
           ' {11}, naive dense {12} / {13}, plain fusion {14} / {15}; 36 dev questions {16} / {17}, naive '
           'dense {18} / {19}; Mem-Gallery test {20} / {21}, naive dense {22} / {23}; unmet targets of the '
           'retrieval issue: LoCoMo test 1k (target 0.85) and 6k (0.97), multi-hop at 1k (0.70); on these 36 '
           'LongMemEval test questions the default ties naive dense within 1,000 tokens and is above it within'
           ' 6,000 (every question: the next row)',
           _in('archive/locomo-retrieval-test-final.json', 'systems.omnimem.overall.1k:3',
                'systems.omnimem.overall.6k:3', 'systems.omnimem.categories.1.1k:3',
                'systems.omnimem.categories.1.6k:3', 'systems.naive-dense.overall.1k:3',
                'systems.naive-dense.overall.6k:3')
           + _in('archive/locomo-retrieval-dev-final.json', 'systems.omnimem.overall.1k:3',
                'systems.omnimem.overall.6k:3', 'systems.naive-dense.overall.1k:3',
                'systems.naive-dense.overall.6k:3')
           + _in('archive/longmemeval-retrieval-test-final.json', 'systems.omnimem.overall.1k:3',
                'systems.omnimem.overall.6k:3', 'systems.naive-dense.overall.1k:3',
                'systems.naive-dense.overall.6k:3', 'systems.plain-fusion.overall.1k:3',
                'systems.plain-fusion.overall.6k:3')
           + _in('archive/longmemeval-retrieval-dev-final.json', 'systems.omnimem.overall.1k:3',
                'systems.omnimem.overall.6k:3', 'systems.naive-dense.overall.1k:3',
                'systems.naive-dense.overall.6k:3')
           + _in('archive/memgallery-retrieval-test-final.json', 'systems.omnimem.overall.1k:3',
                'systems.omnimem.overall.6k:3', 'systems.naive-dense.overall.1k:3',
                'systems.naive-dense.overall.6k:3')),)),
    ('LongMemEval-S, every question of both splits (no `--limit`: 95 test and 91 dev questions, the '
     'abstention ones skipped; `longmemeval-retrieval-test-all`, `longmemeval-retrieval-dev-all`, on this '
     "round's final code)",
     (Cell('test: within 1,000 tokens {0}, within 6,000 {1} (session recall_any@5 {2}, recall_all@10 {3}, turn'
           ' recall@10 {4}, NDCG@10 {5}), naive dense {6} / {7}, naive BM25 {8} / {9}, plain fusion {10} / '
           '{11}; multi-session {12} / {13} against naive dense {14} / {15}; a hit shown only by its summary '
           'line is not counted: the hits hold {16} / {17}. Dev: {18} / {19}, naive dense {20} / {21}, naive '
           "BM25 {22} / {23}, plain fusion {24} / {25}. Against the retrieval issue's targets on test: within "
           '1,000 tokens both are met (naive dense + 0.05 and 0.85); within 6,000, 0.97 is missed by 0.014 and'
           ' naive dense + 0.05 by 0.022, where what is left is the ranking (the hits hold 0.962)',
           _in('archive/longmemeval-retrieval-test-all.json', 'systems.omnimem.overall.1k:3',
                'systems.omnimem.overall.6k:3', 'systems.omnimem.overall.s_any@5:3',
                'systems.omnimem.overall.s_all@10:3', 'systems.omnimem.overall.t_recall@10:3',
                'systems.omnimem.overall.t_ndcg@10:3', 'systems.naive-dense.overall.1k:3',
                'systems.naive-dense.overall.6k:3', 'systems.naive-bm25.overall.1k:3',
                'systems.naive-bm25.overall.6k:3', 'systems.plain-fusion.overall.1k:3',
                'systems.plain-fusion.overall.6k:3', 'systems.omnimem.categories.multi-session.1k:3',
                'systems.omnimem.categories.multi-session.6k:3',
                'systems.naive-dense.categories.multi-session.1k:3',
                'systems.naive-dense.categories.multi-session.6k:3', 'systems.omnimem.overall.hits_1k:3',
                'systems.omnimem.overall.hits_6k:3')
           + _in('archive/longmemeval-retrieval-dev-all.json', 'systems.omnimem.overall.1k:3',
                'systems.omnimem.overall.6k:3', 'systems.naive-dense.overall.1k:3',
                'systems.naive-dense.overall.6k:3', 'systems.naive-bm25.overall.1k:3',
                'systems.naive-bm25.overall.6k:3', 'systems.plain-fusion.overall.1k:3',
                'systems.plain-fusion.overall.6k:3')),)),
)

SPEED: tuple[tuple[str, tuple[Cell, ...]], ...] = (  # the speed table
    ('speed ([PERF.md](PERF.md))',
     (Cell("default retrieval (fills 6,000 real tokens), core search p50 at 10k units (MiniLM), this round's "
           'code (`search-speed-10000`, idle host): {0} ms global, {1} ms scoped to a user, 8.4x the raw FAISS'
           ' + BM25 lookup in the same run (issue target 4 ms: not met within 6,000 tokens). Since then '
           'packing keeps the units it read while the store is unchanged: on the same store, CPU p50 '
           '(`search-stages`, one run before and one after, idle host) {2} -> {3} ms global, {4} -> {5} ms '
           'scoped ([PERF.md](PERF.md), "this round"); then less work per hit packed: {6} -> {7} ms global, '
           '{8} -> {9} ms scoped in the first of three alternating pairs on another day ([PERF.md](PERF.md), '
           '"stop 44: packing"); `search-speed-10000` is not re-run on that code yet. Ingest, one `add` per '
           "turn: {10} / {11} of the raw embedder's throughput on the same texts against {12} / {13} before "
           "the BM25 index's per-add work was cut, two alternating pairs (issue 39 target 0.9; "
           '[PERF.md](PERF.md), "stop 45"). By stage (`search-stages-10000`, from omnimem\'s OpenTelemetry '
           'spans): a 6,000-token search builds ~190-220 hits (more than before: a day-packed line pays its '
           'time of day only where the chat resumes), and packing them is 5.9-6.2 of its ~8.7 ms (the fitting '
           'rows read and made units 2.5-2.9 ms); within a 1,000-token budget (~30 hits) the same search takes'
           ' 2.9 ms global, 2.8 ms scoped (CPU p50). The stamp change itself is neutral for speed: against the'
           ' code before it, on one synthetic 10k store, interleaved, CPU p50 1.02x global and 0.98x scoped. '
           "Re-measured this round on today's defaults (synthetic vectors): 1M {14} ms global, {15} ms scoped;"
           ' 100k (at load ~11) 47.3 / 59.8 ms. First search after a write 1.2-1.5x the next one (no index '
           'rebuild). `omnimem search` prints its first result {16} s after launch (measured on the plain `pip'
           ' install omnimem`, no extra)',
           _in('search-speed-10000.json', 'default.global_w1.p50_ms:1', 'default.user_w1.p50_ms:1')
           + _in('archive/final/search-stages-10000-before-rowcache.json', 'runs.6000-global.cpu_ms_p50:2')
           + _in('archive/final/search-stages-10000-rowcache.json', 'runs.6000-global.cpu_ms_p50:3')
           + _in('archive/final/search-stages-10000-before-rowcache.json', 'runs.6000-user.cpu_ms_p50:2')
           + _in('archive/final/search-stages-10000-rowcache.json', 'runs.6000-user.cpu_ms_p50:3')
           + _in('archive/final/search-stages-ab-44/before-1.json', 'runs.6000-global.cpu_ms_p50:3')
           + _in('archive/final/search-stages-ab-44/after-1.json', 'runs.6000-global.cpu_ms_p50:3')
           + _in('archive/final/search-stages-ab-44/before-1.json', 'runs.6000-user.cpu_ms_p50:3')
           + _in('archive/final/search-stages-ab-44/after-1.json', 'runs.6000-user.cpu_ms_p50:3')
           + _in('archive/final/ingest-ab-45/after-1.json', 'single.ratio:3')
           + _in('archive/final/ingest-ab-45/after-2.json', 'single.ratio:3')
           + _in('archive/final/ingest-ab-45/before-1.json', 'single.ratio:3')
           + _in('archive/final/ingest-ab-45/before-2.json', 'single.ratio:3')
           + _in('search-speed-1000000.json', 'default.global_w1.p50_ms:1', 'default.user_w1.p50_ms:1')
           + _in('cold-start.json', 'phases_cli.to_first_result_s:2')),)),
)


TABLES: tuple[Table, ...] = (
    Table("retrieval-learnt", "CURRENT.md",
          ("split", "within 1,000: learnt [95% interval]", "rules", "naive dense", "within 6,000: learnt [interval]",
           "rules", "naive dense"), "|---|---:|---:|---:|---:|---:|---:|",
          tuple((label, _learnt(f"{data}-{split}.json")) for data, split, label in SPLITS)),
    Table("retrieval-e5", "CURRENT.md",
          ("split, e5", "within 1,000: learnt", "rules", "naive dense", "within 6,000: learnt", "rules", "naive dense"),
          "|---|---:|---:|---:|---:|---:|---:|",
          tuple((label, _plain(f"e5-{data}-{split}.json")) for data, split, label in SPLITS[:4])),
    Table("retrieval-round", "CURRENT.md", ("what", "result"), "|---|---|", RETRIEVAL_ROUND),
    Table("speed", "CURRENT.md", ("what", "result"), "|---|---|", SPEED),
    Table("serving", "CURRENT.md", ("what", "result"), "|---|---|", SERVING),
)


def value(results: Path, file: str, key: str) -> Any:
    """The value at ``key`` in ``results/file``."""
    data: Any = json.loads((results / file).read_text(encoding="utf-8"))
    parts = key.split(".")
    while parts:
        if isinstance(data, list):
            data, parts = data[int(parts[0])], parts[1:]
            continue
        take = next(n for n in range(len(parts), 0, -1) if n == 1 or ".".join(parts[:n]) in data)
        data, parts = data[".".join(parts[:take])], parts[take:]
    return data


def cell(results: Path, c: Cell) -> str:
    return c.template.format(*(f"{float(value(results, f.file, f.key)) * f.scale:.{f.digits}f}" for f in c.figures))


def render(results: Path, table: Table) -> str:
    lines = ["| " + " | ".join(table.head) + " |", table.align]
    lines += ["| " + " | ".join([label, *(cell(results, c) for c in cells)]) + " |" for label, cells in table.rows]
    return "\n".join(lines)


def _block(name: str) -> re.Pattern[str]:
    return re.compile(r"(<!-- generated: " + re.escape(name) + r" -->\n)(.*?)(\n<!-- end generated -->)", re.S)


def regenerate(results: Path, page: str, text: str, tables: Sequence[Table] = TABLES) -> str:
    """``text`` (the page ``page``) with each of its generated tables made again from the files."""
    for table in (t for t in tables if t.page == page):
        block = _block(table.name)
        if not block.search(text):
            raise ValueError(f"{page} has no block <!-- generated: {table.name} -->")
        made = render(results, table)
        text = block.sub(lambda m: m.group(1) + made + m.group(3), text, count=1)
    return text


def checks() -> list[tuple[str, str, list[tuple[str, str, float]]]]:
    """Each row as test_docs.py's figure checks take it: (page from the repository root, the row with ``{n}`` for
    its n-th figure, the figures' (file, key, scale))."""
    out = []
    for table in TABLES:
        for label, cells in table.rows:
            n, texts, sources = 0, [], []
            for c in cells:
                texts.append(c.template.format(*(f"{{{n + i}}}" for i in range(len(c.figures)))))
                n += len(c.figures)
                sources += [(f.file, f.key, f.scale) for f in c.figures]
            out.append((f"benchmarks/results/{table.page}", "| " + " | ".join([label, *texts]) + " |", sources))
    return out


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m benchmarks current [--check] [FOLDER]``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if {"-h", "--help"} & set(args):
        print("Usage: python -m benchmarks current [--check] [FOLDER]\n\nRewrite the generated tables of FOLDER's "
              "pages (CURRENT.md) from the figures declared in benchmarks/harness/figures.py (default FOLDER: "
              "benchmarks/results); --check writes nothing and exits 1 when a page differs.")
        return
    check = "--check" in args
    rest = [a for a in args if a != "--check"]
    results = Path(rest[0]) if rest else RESULTS
    stale = []
    for page in sorted({t.page for t in TABLES}):
        path = results / page
        text = path.read_text(encoding="utf-8")
        new = regenerate(results, page, text)
        if new != text:
            stale.append(page)
            if not check:
                path.write_text(new, encoding="utf-8")
        state = "up to date" if new == text else "differs from its files" if check else "rewritten"
        print(f"{path}: {state}")
    if check and stale:
        raise SystemExit(1)
