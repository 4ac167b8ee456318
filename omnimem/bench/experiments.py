"""Experimental retrieval variants, measured against ``Memory.search``.

Each idea is built from the public pieces of a default ``Memory`` (``mem.store``,
``mem.indexes``, ``mem.embedder``, :func:`omnimem.pyramid.build_context`) so it
can be measured without touching the core. A variant that wins says exactly
what the core should adopt; nothing here knows about a benchmark's categories,
answers or date conventions.

The knobs, one :class:`Variant` each combination:

* ``depth``: candidates per retriever (the core's ``top_k``); ``0`` = every unit of the scope.
* ``fusion``: ``union`` (the core's: dense order, BM25-only appended) or ``rrf``
  (reciprocal rank fusion, ``sum 1 / (60 + rank)``).
* ``neighbours``: for the first ``expand_top`` candidates, insert the units up to
  ``neighbours`` turns before and after in the same session (``links.prev_id/next_id``)
  right after their anchor.
* ``packing``: ``pyramid`` (the core's ``build_context``: one ``[time] speaker: text``
  line per unit) or ``session`` (units grouped by session under one ``[time]`` header,
  chronological, ``speaker: text`` lines: the date is paid once per session).
* ``short_words``: with ``session`` packing, level 1 shows the first N words of each
  unit, then full text is swapped in by rank while the budget lasts.
* ``dedup``: drop a candidate whose embedding has cosine >= this with a kept one.
* ``bm25_text``: what BM25 indexes: ``speaker`` (the core's ``speaker: summary``),
  ``plain`` (summary only) or ``dated`` (``speaker: summary`` plus the month and year).
* ``speaker_boost``: in RRF, add this to units whose speaker the query names.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

import numpy as np

from omnimem.bench.retrieval import BUDGETS, BenchConversation, MemoryPool, Retrieved, Searcher, System, from_contexts
from omnimem.index.sparse import SparseIndex
from omnimem.mau import MAU, Scope, search_text
from omnimem.memory import Memory
from omnimem.pyramid import Candidate, build_context
from omnimem.timeparse import format_time
from omnimem.tokens import count_tokens

RRF_K = 60


@dataclass(frozen=True)
class Variant:
    """One experimental retrieval configuration over a default-settings Memory."""

    name: str
    description: str
    depth: int = 20
    fusion: str = "union"
    neighbours: int = 0
    expand_top: int = 10
    packing: str = "pyramid"
    short_words: int | None = None
    dedup: float | None = None
    bm25_text: str = "speaker"
    speaker_boost: float = 0.0
    settings: dict[str, Any] = field(default_factory=dict)

    def prepare(self, conv: BenchConversation, pool: MemoryPool) -> Searcher:
        return VariantSearcher(self, pool.get(self.settings), conv.sample_id)

    def config(self) -> dict[str, Any]:
        knobs = {k: getattr(self, k) for k in ("depth", "fusion", "neighbours", "expand_top", "packing",
                                                "short_words", "dedup", "bm25_text", "speaker_boost")}
        return {"kind": "experiment", **knobs, "settings": self.settings}


class VariantSearcher:
    """A variant prepared on one conversation's Memory."""

    def __init__(self, variant: Variant, mem: Memory, user_id: str) -> None:
        self.v = variant
        self.mem = mem
        self.scope = Scope(user_id=user_id)
        self.allowed = mem.store.rids_in_scope(self.scope)
        rids = [] if self.allowed is None else self.allowed.tolist()
        self.units: dict[int, MAU] = mem.store.get_rows(rids)
        self.rid_of = {u.id: rid for rid, u in self.units.items()}
        self.vectors = {rid: np.asarray(u.embedding, dtype=np.float32) for rid, u in self.units.items()}
        self.speakers = {u.speaker for u in self.units.values() if u.speaker}
        self.sparse = None
        if variant.bm25_text != "speaker":
            texts = [(rid, _bm25_text(u, variant.bm25_text)) for rid, u in self.units.items()]
            self.sparse = SparseIndex(lambda: iter(texts))

    # -- ranking ------------------------------------------------------------------
    def ranked(self, question: str) -> tuple[list[int], np.ndarray[Any, Any]]:
        qvec = self.mem.embedder.embed([question])[0]
        k = self.v.depth or len(self.units)
        dense = [r for r, _ in self.mem.indexes.search_dense(qvec, k, self.allowed)]
        if self.sparse is None:
            sparse = [r for r, _ in self.mem.indexes.search_sparse(question, k, self.allowed)]
        else:
            sparse = [r for r, _ in self.sparse.search(question, k)]
        if self.v.fusion == "union":
            order = list(dict.fromkeys([*dense, *sparse]))
        else:
            order = self._rrf(question, dense, sparse)
        if self.v.neighbours:
            order = self._expand(order)
        if self.v.dedup is not None:
            order = self._dedup(order)
        return order, qvec

    def _rrf(self, question: str, dense: list[int], sparse: list[int]) -> list[int]:
        scores: dict[int, float] = {}
        for ranking in (dense, sparse):
            for rank, rid in enumerate(ranking, start=1):
                scores[rid] = scores.get(rid, 0.0) + 1.0 / (RRF_K + rank)
        if self.v.speaker_boost:
            named = {s for s in self.speakers if _names(question, s)}
            for rid in scores:
                if self.units[rid].speaker in named:
                    scores[rid] += self.v.speaker_boost
        return sorted(scores, key=lambda r: (-scores[r], r))

    def _expand(self, order: list[int]) -> list[int]:
        out: dict[int, None] = {}
        for pos, rid in enumerate(order):
            out.setdefault(rid)
            if pos >= self.v.expand_top:
                continue
            for neighbour in self._around(rid):
                out.setdefault(neighbour)
        return list(out)

    def _around(self, rid: int) -> list[int]:
        found: list[int] = []
        for direction in ("prev", "next"):
            unit = self.units[rid]
            for _ in range(self.v.neighbours):
                nid = unit.links.prev_id if direction == "prev" else unit.links.next_id
                if nid is None or nid not in self.rid_of:
                    break
                found.append(self.rid_of[nid])
                unit = self.units[self.rid_of[nid]]
        return found

    def _dedup(self, order: list[int]) -> list[int]:
        kept: list[int] = []
        threshold = self.v.dedup or 1.0
        for rid in order:
            vec = self.vectors[rid]
            if all(float(vec @ self.vectors[k]) < threshold for k in kept[-200:]):
                kept.append(rid)
        return kept

    # -- packing ------------------------------------------------------------------
    def retrieve(self, question: str) -> Retrieved:
        order, qvec = self.ranked(question)
        if self.v.packing == "pyramid":
            candidates = [
                Candidate(self.units[r], float(qvec @ self.vectors[r]), frozenset()) for r in order
            ]
            contexts = {
                b: build_context(
                    question, candidates, theta=self.mem.settings.theta, budget=b,
                    full_text=self._full_text, raw_content=lambda u: None, max_level=self.mem.settings.max_level,
                )
                for b in BUDGETS
            }
            return from_contexts(contexts, lambda ids: {i: self.units[self.rid_of[i]].source_ids for i in ids})
        within: dict[int, frozenset[str]] = {}
        tokens: dict[int, int] = {}
        for budget in BUDGETS:
            text, kept = pack_sessions(
                [self.units[r] for r in order], budget, self._full_text, short_words=self.v.short_words
            )
            within[budget] = frozenset(s for u in kept for s in u.source_ids)
            tokens[budget] = count_tokens(text)
        ranked = tuple(self.units[r].source_ids for r in order)
        return Retrieved(ranked, within, tokens)

    def _full_text(self, unit: MAU) -> str:
        if unit.raw_ref is None:
            return unit.summary
        return self.mem.store.read_raw(unit.raw_ref).decode("utf-8")

    def close(self) -> None:
        pass


def pack_sessions(
    ranked: Sequence[MAU], budget: int, full_text: Any, *, short_words: int | None = None
) -> tuple[str, list[MAU]]:
    """Pack units chosen in rank order, rendered grouped by session under one time header.

    Returns the rendered context (``count_tokens(text) <= budget``) and the units in it.
    Choosing is greedy in rank order; a unit costs its line plus, for the first
    unit of a session, the header. With ``short_words`` every chosen unit first
    gets a line of its first N words; full text is then swapped in by rank.
    """
    used = 0
    chosen: dict[str, str] = {}
    headers: set[tuple[Any, ...]] = set()
    order: list[MAU] = []
    for unit in ranked:
        body = _shorten(unit.summary, short_words) if short_words else full_text(unit)
        line = _session_line(unit, body)
        head = _session_key(unit)
        cost = count_tokens(line) + (0 if head in headers else count_tokens(_session_header(unit)))
        if used + cost > budget:
            continue
        used += cost
        headers.add(head)
        chosen[unit.id] = line
        order.append(unit)
    if short_words:
        for unit in order:
            full = _session_line(unit, full_text(unit))
            extra = count_tokens(full) - count_tokens(chosen[unit.id])
            if extra > 0 and used + extra <= budget:
                chosen[unit.id] = full
                used += extra
    return _render_sessions(order, chosen), order


def _render_sessions(units: Sequence[MAU], lines: dict[str, str]) -> str:
    groups: dict[tuple[Any, ...], list[MAU]] = {}
    for unit in sorted(units, key=lambda u: (u.event_time is None, u.event_time, u.record_time)):
        groups.setdefault(_session_key(unit), []).append(unit)
    out: list[str] = []
    for members in groups.values():
        out.append(_session_header(members[0]))
        out.extend(lines[u.id] for u in members)
    return "\n".join(out)


def _session_key(unit: MAU) -> tuple[Any, ...]:
    return (unit.scope.session_id, unit.event_time)


def _session_header(unit: MAU) -> str:
    return f"[{format_time(unit.event_time)}]"


def _session_line(unit: MAU, body: str) -> str:
    return f"{unit.speaker}: {body}" if unit.speaker else body


def _shorten(text: str, words: int) -> str:
    parts = text.split()
    return text if len(parts) <= words else " ".join(parts[:words]) + " …"


def _bm25_text(unit: MAU, mode: str) -> str:
    if mode == "plain":
        return unit.summary
    text = search_text(unit.speaker, unit.summary)
    if mode == "dated" and unit.event_time is not None:
        text += " " + unit.event_time.strftime("%B %Y")
    return text


def _names(question: str, speaker: str) -> bool:
    """Does the question name this speaker (full name or first name, as a word)?"""
    first = speaker.split()[0]
    return any(re.search(rf"\b{re.escape(n)}\b", question, re.IGNORECASE) for n in {speaker, first})


def experiment_systems() -> list[System]:
    """The variants measured in ``benchmarks/results`` (one idea changed at a time, then combined)."""
    base = Variant("x-union-20", "re-implementation of the core (check: equals omnimem)")
    deep = replace(base, name="x-rrf-all", description="RRF over full dense and BM25 rankings", depth=0, fusion="rrf")
    variants = [
        base,
        replace(base, name="x-union-50", description="core fusion, top_k 50 per retriever", depth=50),
        replace(base, name="x-rrf-50", description="RRF, top_k 50 per retriever", depth=50, fusion="rrf"),
        deep,
        replace(deep, name="x-rrf-all-bm25dated", description="RRF all, BM25 text plus month and year",
                bm25_text="dated"),
        replace(deep, name="x-rrf-all-speaker", description="RRF all, +0.005 for units by a speaker the query names",
                speaker_boost=0.005),
        replace(deep, name="x-rrf-all-nbr1", description="RRF all, +-1 same-session neighbours of the top 10",
                neighbours=1, expand_top=10),
        replace(deep, name="x-rrf-all-session", description="RRF all, session-grouped packing", packing="session"),
        replace(deep, name="x-rrf-all-session-short20",
                description="RRF all, session packing, 20-word level-1 lines then full text by rank",
                packing="session", short_words=20),
        replace(deep, name="x-best", description="RRF all, +-1 neighbours of top 10, session packing, 20-word level 1",
                packing="session", short_words=20, neighbours=1, expand_top=10),
        replace(deep, name="x-best-full", description="RRF all, +-1 neighbours of top 10, session packing, full text",
                packing="session", neighbours=1, expand_top=10),
    ]
    return cast(list[System], variants)  # frozen dataclass fields satisfy System's read-only use
