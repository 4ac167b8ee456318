"""Baselines over raw turns, outside ``Memory``: what a user could build in an afternoon.

They get the same advantages omnimem gets: the same MiniLM, the same stemmed
BM25 (bm25s + PyStemmer, English stop words; queries without the words of a
full English stop list, :func:`omnimem.text.content_words`), the same token counter, the
same line shape in context (``[time] speaker: text``), whole turns packed in
rank order. What each one embeds and indexes is a setting (``text``):

* ``bare``: the turn's text only;
* ``speaker``: ``speaker: text`` (what omnimem indexes);
* ``dated``: ``[session date] speaker: text``.

``mode``: ``dense`` (cosine over the whole conversation), ``bm25`` (every turn
with a positive score), ``rrf`` (reciprocal rank fusion of the two, k=60), or
``union`` (dense top-k, then BM25-only top-k appended).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from benchmarks.harness.retrieval import BUDGETS, BenchConversation, MemoryPool, Retrieved, Searcher
from omnimem.embed.base import Embedder, embed_queries
from omnimem.fusion import rrf_merge, union_merge
from omnimem.index.dense import DenseIndex
from omnimem.index.sparse import SparseIndex
from omnimem.text import content_words
from omnimem.timeparse import format_time, parse_time
from omnimem.tokens import count_many, count_tokens

NEWLINE = 1  # a line break, charged as the pyramid charges it (BPE may merge it: an upper bound)
TEXTS = ("bare", "speaker", "dated")
MODES = ("dense", "bm25", "rrf", "union")


@dataclass(frozen=True, slots=True)
class RawTurn:
    source_id: str
    text: str
    speaker: str | None
    when: datetime | None


def raw_turns(conv: BenchConversation) -> list[RawTurn]:
    out = []
    for _, turn in conv.turns():
        when = parse_time(turn.get("time"))
        out.append(RawTurn(str(turn.get("id")), str(turn["text"]).strip(), turn.get("speaker"), when))
    return out


def turn_line(turn: RawTurn) -> str:
    """How a baseline renders a turn in context: the same line shape as the pyramid's."""
    who = f"{turn.speaker}: " if turn.speaker else ""
    return f"[{format_time(turn.when)}] {who}{turn.text}"


def index_text(turn: RawTurn, kind: str) -> str:
    """What a baseline embeds and indexes for one turn."""
    who = f"{turn.speaker}: " if turn.speaker else ""
    if kind == "bare":
        return turn.text
    if kind == "speaker":
        return f"{who}{turn.text}"
    return f"[{format_time(turn.when)}] {who}{turn.text}"


def pack_lines(order: Sequence[int], costs: Sequence[int], budget: int) -> tuple[list[int], int]:
    """One line per item in rank order, each charged its tokens plus a line break; a line that does not
    fit is skipped (a later one may)."""
    used = 0
    kept = []
    for i in order:
        cost = costs[i] + NEWLINE
        if used + cost <= budget:
            kept.append(i)
            used += cost
    return kept, used


@dataclass
class RawSystem:
    """A baseline over raw turns (see the module docstring for ``mode`` and ``text``).

    ``top_k=None`` ranks the whole conversation, so the budget, not k, decides what fits.
    """

    name: str
    description: str
    mode: str
    text: str = "speaker"
    top_k: int | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES or self.text not in TEXTS:
            raise ValueError(f"mode must be one of {MODES}, text one of {TEXTS}")

    def prepare(self, conv: BenchConversation, pool: MemoryPool) -> Searcher:
        return _RawSearcher(raw_turns(conv), pool.embedder, self.mode, self.text, self.top_k)

    def config(self) -> dict[str, Any]:
        return {"kind": "raw-turns", "mode": self.mode, "text": self.text, "top_k": self.top_k}


class _RawSearcher:
    def __init__(self, turns: list[RawTurn], embedder: Embedder, mode: str, text: str, top_k: int | None) -> None:
        self.turns = turns
        self.lines = [turn_line(t) for t in turns]
        self.costs = count_many(self.lines)
        self.embedder = embedder
        self.mode = mode
        self.k = top_k or len(turns)
        texts = [index_text(t, text) for t in turns]
        self.dense = DenseIndex(embedder.dim)
        if mode != "bm25":
            self.dense.add(range(len(turns)), embedder.embed(texts))
        self.sparse = SparseIndex(lambda: enumerate(texts))

    def order(self, question: str) -> list[int]:
        dense: list[int] = []
        sparse: list[int] = []
        if self.mode != "bm25":
            dense = [i for i, _ in self.dense.search(embed_queries(self.embedder, [question])[0], self.k)]
        if self.mode != "dense":  # BM25 on the question's content words, as omnimem's default searches
            sparse = [i for i, _ in self.sparse.search(content_words(question), self.k)]
        if self.mode == "rrf":
            return rrf_merge(dense, sparse)
        return union_merge(dense, sparse)

    def retrieve(self, question: str, now: str | None = None) -> Retrieved:  # raw turns know no "last week"
        order = self.order(question)
        within: dict[int, frozenset[str]] = {}
        rendered: dict[int, str] = {}
        for budget in BUDGETS:
            kept, _ = pack_lines(order, self.costs, budget)
            page = "\n".join(self.lines[i] for i in kept)
            while kept and count_tokens(page) > budget:  # never happens with the line-break charge; kept honest
                kept.pop()
                page = "\n".join(self.lines[i] for i in kept)
            within[budget] = frozenset(self.turns[i].source_id for i in kept)
            rendered[budget] = page
        return Retrieved(tuple((self.turns[i].source_id,) for i in order), within, rendered)

    def close(self) -> None:
        pass


def baseline_systems() -> list[RawSystem]:
    return [
        RawSystem("naive-dense-bare", "dense over bare turn text, whole conversation ranked", "dense", "bare"),
        RawSystem("naive-dense", "dense over 'speaker: text', whole conversation ranked", "dense", "speaker"),
        RawSystem("naive-dense-dated", "dense over '[date] speaker: text', whole conversation ranked", "dense",
                  "dated"),
        RawSystem("naive-bm25", "BM25 over 'speaker: text', every turn with a positive score", "bm25", "speaker"),
        RawSystem("plain-fusion", "reciprocal rank fusion (k=60) of naive-dense and naive-bm25, whole turns "
                  "packed in fused order", "rrf", "speaker"),
        RawSystem("raw-union-20", "dense top-20 + BM25 top-20 over 'speaker: text', set union", "union",
                  "speaker", 20),
    ]
