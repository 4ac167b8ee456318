"""Offline retrieval benchmark: evidence recall of what a search puts in context.

No LLM anywhere. Each conversation goes into its own ``Memory`` through the
public API (``add_dialogue``, real session dates as event time); each QA with
evidence turn ids is asked as a search, and we measure the share of gold turns
whose unit is returned:

* ``@5 / @10 / @20``: among the first N candidates by rank;
* ``cand``: among every candidate retrieved (before the budget);
* ``1k / 6k``: among the hits of the context packed within 1,000 / 6,000 tokens.

A *system* is one configuration (an omnimem setting, a baseline over raw turns,
or an experimental variant from :mod:`omnimem.bench.experiments`). Systems see
one conversation at a time through :meth:`System.prepare`; the embedder is a
:class:`CachedEmbedder`, so a text is embedded once per run whatever the number
of systems that need it.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from omnimem.bench.datasets import load_locomo as load_locomo_qa
from omnimem.bench.datasets import MEMGALLERY_QA_TYPES, MemGallerySample, load_memgallery_dir
from omnimem.bench.evidence import EvidenceParse
from omnimem.bench.scoring import LOCOMO_CATEGORIES
from omnimem.embed.base import Embedder, Vectors
from omnimem.index.dense import DenseIndex
from omnimem.index.sparse import SparseIndex
from omnimem.ingest.loaders import Dialogue, load_locomo
from omnimem.memory import Memory
from omnimem.pyramid import Context
from omnimem.timeparse import format_time, parse_time
from omnimem.tokens import count_tokens

BUDGETS = (1000, 6000)
RANKS = (5, 10, 20)
METRICS = (*(f"@{n}" for n in RANKS), "cand", *(f"{b // 1000}k" for b in BUDGETS))

# --- data: conversations, questions with gold turn ids, what was skipped --------------

EMPTY_EVIDENCE = "QA with empty evidence"
MALFORMED_EVIDENCE = "QA whose evidence entries are all malformed"
DANGLING_EVIDENCE = "QA whose evidence ids all name no turn"
DROPPED_MALFORMED = "malformed evidence entries dropped (QA kept)"
DROPPED_DANGLING = "evidence ids naming no turn dropped (QA kept)"
REPAIRED = "evidence entries repaired by the parser"


@dataclass(frozen=True, slots=True)
class BenchQuestion:
    """One QA to ask: the question, its category key and the gold turn ids."""

    index: int
    question: str
    category: str
    gold: tuple[str, ...]


@dataclass(slots=True)
class BenchConversation:
    """One conversation (one Memory): its dialogues and the questions about it."""

    sample_id: str
    dialogues: list[Dialogue]
    questions: list[BenchQuestion] = field(default_factory=list)
    text_dialogues: list[Dialogue] | None = None  # turns without inline captions (images as their own units)
    images: list[dict[str, Any]] = field(default_factory=list)

    def turn_ids(self) -> set[str]:
        return {str(t["id"]) for d in self.dialogues for t in d.turns if t.get("id") is not None}

    def turns(self) -> Iterator[tuple[Dialogue, Mapping[str, Any]]]:
        for dialogue in self.dialogues:
            for turn in dialogue.turns:
                yield dialogue, turn


@dataclass(slots=True)
class BenchDataset:
    """A benchmark ready to run: conversations, category names, skip counts."""

    name: str
    categories: dict[str, str]
    conversations: list[BenchConversation]
    skipped: Counter[str] = field(default_factory=Counter)
    source: str = ""

    def questions(self) -> int:
        return sum(len(c.questions) for c in self.conversations)

    def turns(self) -> int:
        return sum(len(d.turns) for c in self.conversations for d in c.dialogues)


def select_questions(
    raw: Iterable[tuple[str, str, EvidenceParse]], known_ids: set[str], skipped: Counter[str]
) -> list[BenchQuestion]:
    """Keep the QA whose evidence names at least one turn; count everything dropped."""
    kept: list[BenchQuestion] = []
    for index, (question, category, evidence) in enumerate(raw):
        malformed = [s for s in evidence.skipped if s.reason != "duplicate id"]
        skipped[REPAIRED] += len(evidence.repaired)
        if not evidence.ids:
            skipped[MALFORMED_EVIDENCE if malformed else EMPTY_EVIDENCE] += 1
            continue
        gold = tuple(e for e in evidence.ids if e in known_ids)
        if not gold:
            skipped[DANGLING_EVIDENCE] += 1
            continue
        skipped[DROPPED_MALFORMED] += len(malformed)
        skipped[DROPPED_DANGLING] += len(evidence.ids) - len(gold)
        kept.append(BenchQuestion(index, question, category, gold))
    return kept


def locomo_dataset(path: str | Path, *, limit: int | None = None) -> BenchDataset:
    """LoCoMo: turns through the project's loader, QA and evidence through the bench parser."""
    path = Path(path)
    by_user: dict[str, list[Dialogue]] = defaultdict(list)
    for dialogue in load_locomo(path):
        by_user[str(dialogue.user_id)].append(dialogue)
    dataset = BenchDataset("locomo", {str(k): v for k, v in LOCOMO_CATEGORIES.items()}, [], source=str(path))
    for sample in load_locomo_qa(path)[:limit]:
        conv = BenchConversation(sample.sample_id, by_user[sample.sample_id])
        raw = [(qa.question, str(qa.category), qa.evidence) for qa in sample.qa]
        conv.questions = select_questions(raw, conv.turn_ids(), dataset.skipped)
        dataset.conversations.append(conv)
    return dataset


def memgallery_dialogues(sample: MemGallerySample, *, inline_captions: bool = True) -> list[Dialogue]:
    """Each round becomes two turns (the character, then the assistant) sharing the round id.

    Image files are not shipped, so a round's images are remembered through
    their captions, appended to the user's words the way LoCoMo captions are
    (or, with ``inline_captions=False``, left to image units: see ``memgallery_images``).
    """
    dialogues = []
    for session in sample.sessions:
        turns: list[dict[str, Any]] = []
        for rnd in session.rounds:
            text = rnd.user.strip()
            for image in rnd.images if inline_captions else ():
                text = f"{text} [shared an image: {image.caption.strip()}]".strip()
            turns.append({"text": text, "speaker": sample.profile.name, "time": session.date, "id": rnd.round_id})
            turns.append({"text": rnd.assistant, "speaker": "assistant", "time": session.date, "id": rnd.round_id})
        dialogues.append(Dialogue(turns, user_id=sample.name, session_id=session.session_id))
    return dialogues


def memgallery_images(sample: MemGallerySample) -> list[dict[str, Any]]:
    """Every image of the file with its caption, round id, session and date (for image units)."""
    return [
        {"image_id": image.image_id, "caption": image.caption, "round": rnd.round_id,
         "session_id": session.session_id, "time": session.date}
        for session in sample.sessions for rnd in session.rounds for image in rnd.images
    ]


def placeholder_image(image_id: str) -> bytes:
    """Deterministic stand-in pixels for an image whose file is not shipped (distinct per id)."""
    import hashlib
    import io

    import numpy as np
    from PIL import Image

    seed = int.from_bytes(hashlib.sha256(image_id.encode()).digest()[:8], "little")
    pixels = np.random.default_rng(seed).integers(0, 256, size=(48, 48, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    return buffer.getvalue()


def memgallery_dataset(folder: str | Path, *, limit: int | None = None) -> BenchDataset:
    """Mem-Gallery: one conversation per file; QA types as categories, clue ids as evidence."""
    dataset = BenchDataset("memgallery", dict(MEMGALLERY_QA_TYPES), [], source=str(folder))
    for sample in load_memgallery_dir(folder)[:limit]:
        conv = BenchConversation(sample.name, memgallery_dialogues(sample))
        conv.text_dialogues = memgallery_dialogues(sample, inline_captions=False)
        conv.images = memgallery_images(sample)
        raw = [(qa.question, qa.qa_type, qa.clue) for qa in sample.qa]
        conv.questions = select_questions(raw, conv.turn_ids(), dataset.skipped)
        dataset.conversations.append(conv)
    return dataset


# --- embedding once per run -------------------------------------------------------------


class CachedEmbedder:
    """Wraps an embedder and memoises vectors per text (same ``name`` and ``dim``).

    Every system of a run shares one instance, so the conversation's texts are
    embedded once, whatever the number of configurations.
    """

    def __init__(self, base: Embedder) -> None:
        self.base = base
        self.name = base.name
        self.dim = base.dim
        self._memo: dict[str, np.ndarray[Any, np.dtype[np.float32]]] = {}
        self.embedded = 0

    def embed(self, texts: Sequence[str]) -> Vectors:
        missing = [t for t in dict.fromkeys(texts) if t not in self._memo]
        if missing:
            for text, vector in zip(missing, self.base.embed(missing)):
                self._memo[text] = vector
            self.embedded += len(missing)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._memo[t] for t in texts]).astype(np.float32, copy=False)

    def forget(self) -> None:
        """Drop the memo (between conversations: texts rarely repeat across them)."""
        self._memo.clear()


# --- what a system returns and how it is scored -------------------------------------------


@dataclass(frozen=True, slots=True)
class Retrieved:
    """One search: candidates' source ids in rank order, and each budget's context."""

    ranked: tuple[tuple[str, ...], ...]
    within: Mapping[int, frozenset[str]]
    tokens: Mapping[int, int]


def recall(gold: Sequence[str], found: Iterable[str]) -> float:
    """Share of gold ids found."""
    have = set(found)
    return sum(1 for g in gold if g in have) / len(gold) if gold else 0.0


def score(gold: Sequence[str], got: Retrieved) -> dict[str, float]:
    """Every metric of one question."""
    out = {f"@{n}": recall(gold, (s for ids in got.ranked[:n] for s in ids)) for n in RANKS}
    out["cand"] = recall(gold, (s for ids in got.ranked for s in ids))
    for budget in BUDGETS:
        out[f"{budget // 1000}k"] = recall(gold, got.within.get(budget, frozenset()))
        out[f"tokens_{budget // 1000}k"] = float(got.tokens.get(budget, 0))
    return out


SourceLookup = Callable[[Sequence[str]], dict[str, tuple[str, ...]]]


def from_contexts(contexts: Mapping[int, Context], unit_sources: SourceLookup) -> Retrieved:
    """Turn ``Memory.search`` contexts (one per budget) into a :class:`Retrieved`.

    The candidate order comes from the largest budget's context: hits carry
    their rank, and the candidates the budget dropped fill the missing ranks
    in order.
    """
    largest = contexts[max(contexts)]
    by_rank = {h.rank: h.unit.source_ids for h in largest.hits}
    dropped = unit_sources(largest.dropped) if largest.dropped else {}
    pending = iter(largest.dropped)
    ranked = []
    for rank in range(1, largest.candidates + 1):
        ranked.append(by_rank[rank] if rank in by_rank else dropped.get(next(pending), ()))
    within = {b: frozenset(s for h in ctx.hits for s in h.unit.source_ids) for b, ctx in contexts.items()}
    return Retrieved(tuple(ranked), within, {b: ctx.tokens for b, ctx in contexts.items()})


class Searcher(Protocol):
    """A system prepared on one conversation."""

    def retrieve(self, question: str) -> Retrieved: ...

    def close(self) -> None: ...


class System(Protocol):
    """One configuration to measure."""

    name: str
    description: str

    def prepare(self, conv: BenchConversation, pool: MemoryPool) -> Searcher: ...

    def config(self) -> dict[str, Any]: ...


class MemoryPool:
    """Memories of one conversation, one per distinct settings, shared by systems.

    Experimental variants reuse the default Memory instead of ingesting again.
    """

    def __init__(self, conv: BenchConversation, embedder: Embedder) -> None:
        self.conv = conv
        self.embedder = embedder
        self._open: dict[tuple[tuple[str, Any], ...], Memory] = {}
        self.ingest: dict[str, Counter[str]] = {}

    def get(self, settings: Mapping[str, Any]) -> Memory:
        key = tuple(sorted(settings.items()))
        if key not in self._open:
            options = dict(settings)
            image_units = bool(options.pop("image_units", False)) and self.conv.text_dialogues is not None
            mem = Memory(embedder=self.embedder, **options)
            outcome: Counter[str] = Counter()
            started = time.perf_counter()
            dialogues = self.conv.text_dialogues if image_units and self.conv.text_dialogues else self.conv.dialogues
            for dialogue in dialogues:
                results = mem.add_dialogue(
                    dialogue.turns, user_id=self.conv.sample_id, session_id=dialogue.session_id
                )
                outcome.update(r.reason for r in results)
            for image in self.conv.images if image_units else ():
                result = mem.add_image(
                    placeholder_image(image["image_id"]), image["caption"], time=image["time"],
                    source_id=image["round"], user_id=self.conv.sample_id, session_id=image["session_id"],
                )
                outcome.update([f"image {result.reason}"])
            # ingest time with embeddings cached after the first system: what omnimem itself costs
            outcome["ingest_ms"] += round((time.perf_counter() - started) * 1000)
            self._open[key] = mem
            self.ingest[_settings_label(settings)] = outcome
        return self._open[key]

    def close(self) -> None:
        for mem in self._open.values():
            mem.close()
        self._open.clear()


def _settings_label(settings: Mapping[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(settings.items())) or "default"


# --- omnimem configurations ----------------------------------------------------------------


@dataclass
class MemorySystem:
    """``Memory.search`` as shipped, under some settings (``Memory(**settings)``)."""

    name: str
    description: str
    settings: dict[str, Any] = field(default_factory=dict)

    def prepare(self, conv: BenchConversation, pool: MemoryPool) -> Searcher:
        return _MemorySearcher(pool.get(self.settings), conv.sample_id)

    def config(self) -> dict[str, Any]:
        return {"kind": "memory", "settings": self.settings}


class _MemorySearcher:
    def __init__(self, mem: Memory, user_id: str) -> None:
        self.mem = mem
        self.user_id = user_id

    def retrieve(self, question: str) -> Retrieved:
        contexts = {b: self.mem.search(question, budget=b, user_id=self.user_id) for b in BUDGETS}
        return from_contexts(contexts, self._sources)

    def _sources(self, unit_ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
        return {u.id: u.source_ids for u in self.mem.store.get(list(unit_ids))}

    def close(self) -> None:
        pass


# --- baselines over raw turns ------------------------------------------------------------


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


def pack_lines(order: Sequence[int], costs: Sequence[int], budget: int) -> tuple[list[int], int]:
    """One line per item in rank order; a line that does not fit is skipped (a later one may)."""
    used = 0
    kept = []
    for i in order:
        cost = costs[i]
        if used + cost <= budget:
            kept.append(i)
            used += cost
    return kept, used


@dataclass
class RawSystem:
    """A baseline over raw turn texts (no speaker prefix), outside ``Memory``.

    ``mode``: ``dense`` (FAISS cosine), ``bm25`` or ``union`` (dense top-k,
    then BM25-only top-k appended, as omnimem fuses). ``top_k=None`` ranks the
    whole conversation, so the budget, not k, decides what fits.
    """

    name: str
    description: str
    mode: str
    top_k: int | None = None

    def prepare(self, conv: BenchConversation, pool: MemoryPool) -> Searcher:
        return _RawSearcher(raw_turns(conv), pool.embedder, self.mode, self.top_k)

    def config(self) -> dict[str, Any]:
        return {"kind": "raw-turns", "mode": self.mode, "top_k": self.top_k}


class _RawSearcher:
    def __init__(self, turns: list[RawTurn], embedder: Embedder, mode: str, top_k: int | None) -> None:
        self.turns = turns
        self.costs = [count_tokens(turn_line(t)) for t in turns]
        self.embedder = embedder
        self.mode = mode
        self.k = top_k or len(turns)
        self.dense = DenseIndex(embedder.dim)
        if mode in ("dense", "union"):
            self.dense.add(range(len(turns)), embedder.embed([t.text for t in turns]))
        texts = [t.text for t in turns]
        self.sparse = SparseIndex(lambda: enumerate(texts))

    def order(self, question: str) -> list[int]:
        dense: list[int] = []
        sparse: list[int] = []
        if self.mode != "bm25":
            dense = [i for i, _ in self.dense.search(self.embedder.embed([question])[0], self.k)]
        if self.mode != "dense":
            sparse = [i for i, _ in self.sparse.search(question, self.k)]
        return list(dict.fromkeys([*dense, *sparse]))

    def retrieve(self, question: str) -> Retrieved:
        order = self.order(question)
        within: dict[int, frozenset[str]] = {}
        tokens: dict[int, int] = {}
        for budget in BUDGETS:
            kept, used = pack_lines(order, self.costs, budget)
            within[budget] = frozenset(self.turns[i].source_id for i in kept)
            tokens[budget] = used
        return Retrieved(tuple((self.turns[i].source_id,) for i in order), within, tokens)

    def close(self) -> None:
        pass


# --- the configurations of a run ----------------------------------------------------------


def baseline_systems() -> list[System]:
    return [
        RawSystem("naive-dense", "dense over raw turns, whole conversation ranked", "dense"),
        RawSystem("naive-bm25", "BM25 over raw turns, every turn with a positive score", "bm25"),
        RawSystem("raw-union-20", "dense top-20 + BM25 top-20 over raw turns, set union", "union", 20),
    ]


PAPER = {"fusion": "union", "neighbours": 0, "packing": "line"}


def ablation_systems() -> list[System]:
    return [
        MemorySystem("omnimem", "omnimem defaults (RRF over budget-deep lists, session packing, pyramid, novelty)"),
        MemorySystem("omnimem-paper", "the paper's retrieval: top_k 20 per retriever, set union, one line per hit",
                     dict(PAPER)),
        MemorySystem("no-bm25", "defaults with sparse=False", {"sparse": False}),
        MemorySystem("no-level2", "defaults with max_level=1 (summary lines only)", {"max_level": 1}),
        MemorySystem("no-novelty", "defaults with novelty=False", {"novelty": False}),
        MemorySystem("neighbours", "defaults plus +-1 same-session neighbours of the top 10", {"neighbours": 1}),
        MemorySystem("line-packing", "defaults with packing=line", {"packing": "line"}),
        MemorySystem("paper-top-k-5", "the paper's retrieval with top_k=5", {**PAPER, "top_k": 5}),
    ]


def image_systems() -> list[System]:
    return [
        MemorySystem("image-units", "Mem-Gallery images as image units carrying their captions (placeholder "
                     "pixels; captions not inlined in the turns)", {"image_units": True}),
    ]


def graph_systems() -> list[System]:
    return [
        MemorySystem("graph", "defaults with the knowledge graph (spaCy extractor)", {"graph": True}),
        MemorySystem("paper-graph", "the paper's retrieval with the knowledge graph", {**PAPER, "graph": True}),
    ]


def default_systems() -> list[System]:
    return [*baseline_systems(), *ablation_systems()]


# --- running ------------------------------------------------------------------------------


@dataclass
class SystemResult:
    """Per-question scores of one system, aggregated on demand."""

    system: System
    rows: list[tuple[str, dict[str, float]]] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self, categories: Mapping[str, str]) -> dict[str, Any]:
        def mean(rows: list[dict[str, float]]) -> dict[str, float]:
            keys = [*METRICS, *(f"tokens_{b // 1000}k" for b in BUDGETS)]
            return {k: round(float(np.mean([r[k] for r in rows])), 4) if rows else 0.0 for k in keys}

        per_cat: dict[str, Any] = {}
        for key, name in categories.items():
            rows = [r for c, r in self.rows if c == key]
            per_cat[key] = {"name": name, "count": len(rows), **mean(rows)}
        return {
            "description": self.system.description,
            "config": self.system.config(),
            "count": len(self.rows),
            "overall": mean([r for _, r in self.rows]),
            "categories": per_cat,
            "search_seconds": round(self.seconds, 2),
        }


@dataclass
class RunResult:
    dataset: BenchDataset
    systems: list[SystemResult]
    ingest: dict[str, Counter[str]]
    seconds: float
    embedded_texts: int


def run(
    dataset: BenchDataset,
    systems: Sequence[System],
    embedder: Embedder,
    *,
    progress: Callable[[str], None] | None = None,
) -> RunResult:
    """Every system on every conversation of ``dataset``."""
    started = time.perf_counter()
    cache = embedder if isinstance(embedder, CachedEmbedder) else CachedEmbedder(embedder)
    results = [SystemResult(s) for s in systems]
    ingest: dict[str, Counter[str]] = defaultdict(Counter)
    for conv in dataset.conversations:
        cache.embed([q.question for q in conv.questions])  # one batch, not one call per question
        pool = MemoryPool(conv, cache)
        try:
            for result in results:
                searcher = result.system.prepare(conv, pool)
                t0 = time.perf_counter()
                for q in conv.questions:
                    result.rows.append((q.category, score(q.gold, searcher.retrieve(q.question))))
                result.seconds += time.perf_counter() - t0
                searcher.close()
        finally:
            for label, outcome in pool.ingest.items():
                ingest[label].update(outcome)
            pool.close()
        cache.forget()
        if progress is not None:
            progress(f"{conv.sample_id}: {len(conv.questions)} questions, {time.perf_counter() - started:.0f}s")
    return RunResult(dataset, results, dict(ingest), time.perf_counter() - started, cache.embedded)
