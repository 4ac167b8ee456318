"""The figures of CURRENT.md's generated tables, declared once: each cell's figures, their file, key and digits.

    python -m benchmarks current            # rewrite the tables of benchmarks/results/CURRENT.md from TABLES
    python -m benchmarks current --check    # exit 1, naming the table, when a page differs from its files

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
    """One number: its results file, the key path in it, the digits it is shown with."""

    file: str
    key: str
    digits: int = 3


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
        cells.append(Cell("{0} [{1}, {2}]", tuple(Figure(file, f"intervals.omnimem.{k}.{p}") for p in ("mean", "low", "high"))))
        cells += [_one(file, f"systems.{s}.overall.{k}") for s in ("rules", "naive-dense")]
    return tuple(cells)


def _plain(file: str) -> tuple[Cell, ...]:
    return tuple(_one(file, f"systems.{s}.overall.{k}") for k in ("1k", "6k") for s in ("omnimem", "rules", "naive-dense"))


TABLES: tuple[Table, ...] = (
    Table("retrieval-learnt", "CURRENT.md",
          ("split", "within 1,000: learnt [95% interval]", "rules", "naive dense", "within 6,000: learnt [interval]",
           "rules", "naive dense"), "|---|---:|---:|---:|---:|---:|---:|",
          tuple((label, _learnt(f"{data}-{split}.json")) for data, split, label in SPLITS)),
    Table("retrieval-e5", "CURRENT.md",
          ("split, e5", "within 1,000: learnt", "rules", "naive dense", "within 6,000: learnt", "rules", "naive dense"),
          "|---|---:|---:|---:|---:|---:|---:|",
          tuple((label, _plain(f"e5-{data}-{split}.json")) for data, split, label in SPLITS[:4])),
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
    return c.template.format(*(f"{float(value(results, f.file, f.key)):.{f.digits}f}" for f in c.figures))


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


def checks() -> list[tuple[str, str, list[tuple[str, str]]]]:
    """Each row as test_docs.py's figure checks take it: (page from the repository root, the row with ``{n}`` for
    its n-th figure, the figures' (file, key))."""
    out = []
    for table in TABLES:
        for label, cells in table.rows:
            n, texts, sources = 0, [], []
            for c in cells:
                texts.append(c.template.format(*(f"{{{n + i}}}" for i in range(len(c.figures)))))
                n += len(c.figures)
                sources += [(f.file, f.key) for f in c.figures]
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
        print(f"{path}: {'differs from its files' if check and new != text else 'up to date' if new == text else 'rewritten'}")
    if check and stale:
        raise SystemExit(1)
