"""Offline retrieval benchmark: evidence recall of what a search puts in context.

No LLM anywhere. Each conversation goes into its own ``Memory`` through the
public API (``add_dialogue``, real session dates as event time); each QA with
evidence turn ids is asked as a search, and we measure the share of gold turns
that a reader of the result can see:

* ``@5 / @10 / @20``: among the first N candidates by rank;
* ``cand``: among every candidate retrieved (before the budget);
* ``1k / 6k``: whose whole text is in ``Context.render()`` of a search with a
  budget of 1,000 / 6,000 tokens (cl100k tokens, counted here on the rendered
  text). A unit shown only as a cut summary line does not count.

A *system* is one configuration (an omnimem setting, a baseline over raw turns,
or a baseline over raw turns from :mod:`benchmarks.harness.baselines`). Systems see
one conversation at a time through :meth:`System.prepare`; the embedder is a
:class:`CachedEmbedder`, so a text is embedded once per run whatever the number
of systems that need it.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from benchmarks.harness.backends import Databases
from benchmarks.harness.datasets import MEMGALLERY_QA_TYPES, MemGallerySample, load_memgallery_dir
from benchmarks.harness.datasets import load_locomo as load_locomo_qa
from benchmarks.harness.evidence import EvidenceParse
from benchmarks.harness.scoring import LOCOMO_CATEGORIES
from benchmarks.harness.sessions import session_metrics
from omnimem import Context, Memory, NotFoundError
from omnimem.embed.base import NO_ROLES, Embedder, Vectors, embed_queries, role_scheme
from omnimem.contract.loaders import Dialogue, load_locomo
from omnimem.timeparse import parse_time
from omnimem.tokens import count_tokens

BUDGETS = (1000, 6000)
RANKS = (5, 10, 20)
METRICS = (*(f"@{n}" for n in RANKS), "cand", *(f"{b // 1000}k" for b in BUDGETS))
# also per question: tokens_1k / tokens_6k (real tokens of the render), over_1k / over_6k (1 when it exceeds
# the budget) and hits_1k / hits_6k (the old count: a unit among the hits, even as a cut line)
EXTRA = (*(f"tokens_{b // 1000}k" for b in BUDGETS), *(f"over_{b // 1000}k" for b in BUDGETS),
         *(f"hits_{b // 1000}k" for b in BUDGETS))
SPLITS = ("dev", "test", "all")

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
    image_caption: str | None = None  # the question comes with an image, searched through its caption
    sessions: tuple[str, ...] = ()  # gold session ids, where a data set names them (session-level metrics)
    now: str | None = None  # when the question is asked (LongMemEval's question_date; LoCoMo: the last session's)

    @property
    def query(self) -> str:
        """What a user would search with: the question, and the image they attached to it."""
        if not self.image_caption:
            return self.question
        return f"{self.question} [image: {self.image_caption.strip()}]"


@dataclass(slots=True)
class BenchConversation:
    """One conversation (one Memory): its dialogues and the questions about it."""

    sample_id: str
    dialogues: list[Dialogue]
    questions: list[BenchQuestion] = field(default_factory=list)
    text_dialogues: list[Dialogue] | None = None  # turns without inline captions (images as their own units)
    images: list[dict[str, Any]] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)  # evidence dropped or repaired in this conversation
    session_of: dict[str, str] = field(default_factory=dict)  # turn id -> session id (session-level metrics)

    def turn_ids(self) -> set[str]:
        return {str(t["id"]) for d in self.dialogues for t in d.turns if t.get("id") is not None}

    def turn_texts(self) -> dict[str, tuple[str, ...]]:
        """Every text stored under each turn id (whitespace folded), in both image modes."""
        out: dict[str, list[str]] = defaultdict(list)
        for dialogues in (self.dialogues, self.text_dialogues or []):
            for dialogue in dialogues:
                for turn in dialogue.turns:
                    if turn.get("id") is not None:
                        out[str(turn["id"])].append(fold(str(turn["text"])))
        for image in self.images:
            out[str(image["round"])].append(fold(str(image["caption"])))
        return {k: tuple(dict.fromkeys(v)) for k, v in out.items()}

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
    split: str = "all"

    def questions(self) -> int:
        return sum(len(c.questions) for c in self.conversations)

    def turns(self) -> int:
        return sum(len(d.turns) for c in self.conversations for d in c.dialogues)


def select_questions(
    raw: Iterable[tuple[str, str, EvidenceParse]], known_ids: set[str], skipped: Counter[str],
    captions: Sequence[str | None] | None = None,
) -> list[BenchQuestion]:
    """Keep the QA whose evidence names at least one turn; count everything dropped."""
    kept: list[BenchQuestion] = []
    for index, (question, category, evidence) in enumerate(raw):
        caption = captions[index] if captions is not None else None
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
        kept.append(BenchQuestion(index, question, category, gold, caption))
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
        asked = max((str(t["time"]) for d in conv.dialogues for t in d.turns if t.get("time")),
                    key=lambda t: parse_time(t) or datetime.min, default=None)
        conv.questions = [replace(q, now=asked) for q in select_questions(raw, conv.turn_ids(), conv.skipped)]
        dataset.skipped.update(conv.skipped)
        dataset.conversations.append(conv)
    return dataset


def split(dataset: BenchDataset, name: str) -> BenchDataset:
    """``dev``: the first half of the conversations (defaults are chosen there), ``test``: the second half."""
    if name not in SPLITS:
        raise ValueError(f"unknown split {name!r}; choose one of {', '.join(SPLITS)}")
    half = (len(dataset.conversations) + 1) // 2
    chosen = {"dev": dataset.conversations[:half], "test": dataset.conversations[half:],
              "all": dataset.conversations}[name]
    skipped: Counter[str] = Counter()
    for conv in chosen:
        skipped.update(conv.skipped)
    out = BenchDataset(dataset.name, dataset.categories, list(chosen), skipped, dataset.source)
    out.split = name
    return out


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
        {"image_id": image.image_id, "file": Path(image.path).name, "caption": image.caption, "round": rnd.round_id,
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
        captions = [qa.question_image_caption if qa.question_image else None for qa in sample.qa]
        conv.questions = select_questions(raw, conv.turn_ids(), conv.skipped, captions)
        dataset.skipped.update(conv.skipped)
        dataset.conversations.append(conv)
    return dataset


# --- embedding once per run -------------------------------------------------------------


class CachedEmbedder:
    """Wraps an embedder and memoises vectors per text (same ``name`` and ``dim``).

    Every system of a run shares one instance, so the conversation's texts are
    embedded once, whatever the number of configurations. With ``file`` the
    vectors are also kept on disk between runs, keyed by a hash of the model
    name and the text (:func:`cache_key`): a file written with another model
    simply has no vector for this one.
    """

    def __init__(self, base: Embedder, file: Path | None = None) -> None:
        self.base = base
        self.name = base.name
        self.dim = base.dim
        self.roles = role_scheme(base)  # queries of a model with roles are embedded (and cached) as queries
        self._memo: dict[str, np.ndarray[Any, np.dtype[np.float32]]] = {}  # cache_key -> vector
        self.embedded = 0
        self.file = file  # an optional vector cache kept between runs
        self._saved = 0
        if file is not None and file.exists():
            with np.load(file, allow_pickle=False) as saved:
                if "keys" in saved.files:
                    self._memo = dict(zip((str(k) for k in saved["keys"]), saved["vectors"]))
            self._saved = len(self._memo)

    def save(self) -> None:
        if self.file is None or len(self._memo) == self._saved:
            return
        self.file.parent.mkdir(parents=True, exist_ok=True)
        keys = list(self._memo)
        # a temporary file of its own: a run killed mid-write leaves the old cache whole, and two runs saving the
        # shared cache at once never write the same temporary file (the later replace wins)
        handle, name = tempfile.mkstemp(prefix=self.file.name + ".", suffix=".partial.npz", dir=self.file.parent)
        partial = Path(name)
        try:
            with os.fdopen(handle, "wb") as out:
                np.savez(out, keys=np.array(keys), vectors=np.stack([self._memo[k] for k in keys]))
            partial.replace(self.file)
        finally:
            partial.unlink(missing_ok=True)
        self._saved = len(keys)

    def embed(self, texts: Sequence[str]) -> Vectors:
        return self._cached(texts, self.name, self.base.embed)

    def embed_query(self, texts: Sequence[str]) -> Vectors:
        """Query vectors: the base's ``embed_query`` (cached apart from passages) where it has roles."""
        if self.roles == NO_ROLES:
            return self.embed(texts)
        return self._cached(texts, f"{self.name}\0query:{self.roles}", lambda batch: embed_queries(self.base, batch))

    def _cached(self, texts: Sequence[str], model: str, embed: Callable[[list[str]], Vectors]) -> Vectors:
        keys = [cache_key(model, t) for t in texts]
        missing = {k: t for k, t in zip(keys, texts) if k not in self._memo}
        if missing:
            for key, vector in zip(missing, embed(list(missing.values()))):
                self._memo[key] = vector
            self.embedded += len(missing)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._memo[k] for k in keys]).astype(np.float32, copy=False)

    def forget(self) -> None:
        """Drop the memo (between conversations: texts rarely repeat across them), unless it is kept in a file."""
        if self.file is None:
            self._memo.clear()


def cache_key(model: str, text: str) -> str:
    """The on-disk cache key of one text's vector under one model."""
    import hashlib

    return hashlib.sha256(f"{model}\0{text}".encode()).hexdigest()[:32]


# --- what a system returns and how it is scored -------------------------------------------


@dataclass(frozen=True, slots=True)
class Retrieved:
    """One search: candidates' source ids in rank order, and each budget's rendered context.

    ``within`` holds the source ids of the units among a budget's hits (the
    old, flattering count: a unit shown as a cut line is there too);
    ``rendered`` is the text a reader sees, which is what recall is counted on.
    """

    ranked: tuple[tuple[str, ...], ...]
    within: Mapping[int, frozenset[str]]
    rendered: Mapping[int, str]


def fold(text: str) -> str:
    """Whitespace folded to single spaces, so line breaks and indentation do not hide a match."""
    return " ".join(text.split())


def recall(gold: Sequence[str], found: Iterable[str]) -> float:
    """Share of gold ids found."""
    have = set(found)
    return sum(1 for g in gold if g in have) / len(gold) if gold else 0.0


def visible(gold: Sequence[str], rendered: str, texts: Mapping[str, Sequence[str]]) -> list[str]:
    """The gold ids one of whose texts stands whole in ``rendered``."""
    page = fold(rendered)
    return [g for g in gold if any(t and t in page for t in texts.get(g, ()))]


def score(gold: Sequence[str], got: Retrieved, texts: Mapping[str, Sequence[str]]) -> dict[str, float]:
    """Every metric of one question; ``texts`` maps a turn id to its texts (see ``turn_texts``)."""
    out = {f"@{n}": recall(gold, (s for ids in got.ranked[:n] for s in ids)) for n in RANKS}
    out["cand"] = recall(gold, (s for ids in got.ranked for s in ids))
    for budget in BUDGETS:
        key = f"{budget // 1000}k"
        page = got.rendered.get(budget, "")
        tokens = count_tokens(page)
        out[key] = recall(gold, visible(gold, page, texts))
        out[f"hits_{key}"] = recall(gold, got.within.get(budget, frozenset()))
        out[f"tokens_{key}"] = float(tokens)
        out[f"over_{key}"] = float(tokens > budget)
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
    return Retrieved(tuple(ranked), within, {b: ctx.render() for b, ctx in contexts.items()})


class Searcher(Protocol):
    """A system prepared on one conversation."""

    def retrieve(self, question: str, now: str | None = None) -> Retrieved: ...

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

    def __init__(self, conv: BenchConversation, embedder: Embedder, databases: Databases | None = None) -> None:
        self.conv = conv
        self.embedder = embedder
        self.databases = databases  # PostgreSQL: one fresh database per Memory (see benchmarks.harness.backends)
        self._open: dict[tuple[tuple[str, Any], ...], Memory] = {}
        self.ingest: dict[str, Counter[str]] = {}
        self._folder: Any = None

    def get(self, settings: Mapping[str, Any]) -> Memory:
        key = tuple(sorted(settings.items()))
        if key not in self._open:
            options = dict(settings)
            image_units = bool(options.pop("image_units", False)) and self.conv.text_dialogues is not None
            if self.databases is None:
                mem = Memory(embedder=self.embedder, **options)
            else:
                mem = Memory(url=self.databases.fresh(), embedder=self.embedder, **options)
            outcome: Counter[str] = Counter()
            started = time.perf_counter()
            dialogues = self.conv.text_dialogues if image_units and self.conv.text_dialogues else self.conv.dialogues
            for dialogue in dialogues:
                results = mem.add_dialogue(
                    dialogue.turns, user_id=self.conv.sample_id, session_id=dialogue.session_id
                )
                outcome.update(r.reason for r in results)
            for image in self.conv.images if image_units else ():
                file = self._image_file(image)
                result = mem.add_image(
                    file, image["caption"], time=image["time"],
                    source_id=image["round"], user_id=self.conv.sample_id, session_id=image["session_id"],
                )
                outcome.update([f"image {result.reason}"])
            # ingest time with embeddings cached after the first system: what omnimem itself costs
            outcome["ingest_ms"] += round((time.perf_counter() - started) * 1000)
            self._open[key] = mem
            self.ingest[_settings_label(settings)] = outcome
        return self._open[key]

    def _image_file(self, image: Mapping[str, Any]) -> Path:
        """The placeholder pixels under the image's own file name (rendered with the unit: answers name it)."""
        import tempfile

        if self._folder is None:
            self._folder = tempfile.TemporaryDirectory(prefix="omnimem-bench-")
        path = Path(self._folder.name) / str(image.get("file") or f"{image['image_id']}.png").replace("/", "_")
        path.write_bytes(placeholder_image(str(image["image_id"])))
        return path

    def close(self) -> None:
        for mem in self._open.values():
            mem.close()
            if self.databases is not None and mem.url is not None:
                self.databases.drop(mem.url)
        self._open.clear()
        if self._folder is not None:
            self._folder.cleanup()
            self._folder = None


def _settings_label(settings: Mapping[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(settings.items())) or "default"


# --- omnimem configurations ----------------------------------------------------------------


@dataclass
class MemorySystem:
    """``Memory.search`` as shipped, under some settings (``Memory(**settings)``)."""

    name: str
    description: str
    settings: dict[str, Any] = field(default_factory=dict)
    search: dict[str, Any] = field(default_factory=dict)  # per-search arguments (``planner=``): same store

    def prepare(self, conv: BenchConversation, pool: MemoryPool) -> Searcher:
        return _MemorySearcher(pool.get(self.settings), conv.sample_id, self.search)

    def config(self) -> dict[str, Any]:
        return {"kind": "memory", "settings": self.settings, **({"search": self.search} if self.search else {})}


class _MemorySearcher:
    def __init__(self, mem: Memory, user_id: str, options: Mapping[str, Any] | None = None) -> None:
        self.mem = mem
        self.user_id = user_id
        self.options = dict(options or {})

    def retrieve(self, question: str, now: str | None = None) -> Retrieved:
        contexts = {b: self.mem.search(question, budget=b, user_id=self.user_id, now=now, **self.options)
                    for b in BUDGETS}
        return from_contexts(contexts, self._sources)

    def _sources(self, unit_ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
        found = {}
        for unit_id in unit_ids:  # Memory.get, the public read: the units a budget dropped, by id
            try:
                found[unit_id] = self.mem.get(unit_id, user_id=self.user_id).source_ids
            except NotFoundError:
                pass
        return found

    def close(self) -> None:
        pass


# --- running ------------------------------------------------------------------------------


@dataclass
class SystemResult:
    """Per-question scores of one system, aggregated on demand."""

    system: System
    rows: list[tuple[str, dict[str, float]]] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self, categories: Mapping[str, str]) -> dict[str, Any]:
        def mean(rows: list[dict[str, float]]) -> dict[str, float]:
            keys = [*METRICS, *EXTRA, *(k for k in (rows[0] if rows else {}) if k not in METRICS and k not in EXTRA)]
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
    databases: Databases | None = None,
) -> RunResult:
    """Every system on every conversation of ``dataset`` (in memory, or in PostgreSQL ``databases``)."""
    started = time.perf_counter()
    cache = embedder if isinstance(embedder, CachedEmbedder) else CachedEmbedder(embedder)
    results = [SystemResult(s) for s in systems]
    ingest: dict[str, Counter[str]] = defaultdict(Counter)
    saved_at = 0
    for conv in dataset.conversations:
        cache.embed_query([q.query for q in conv.questions])  # one batch, not one call per question
        texts = conv.turn_texts()
        pool = MemoryPool(conv, cache, databases)
        try:
            for result in results:
                searcher = result.system.prepare(conv, pool)
                t0 = time.perf_counter()
                for q in conv.questions:
                    got = searcher.retrieve(q.query, q.now)
                    row = score(q.gold, got, texts)
                    if conv.session_of:
                        row.update(session_metrics(q.gold, q.sessions, got.ranked, conv.session_of))
                    result.rows.append((q.category, row))
                result.seconds += time.perf_counter() - t0
                searcher.close()
        finally:
            for label, outcome in pool.ingest.items():
                ingest[label].update(outcome)
            pool.close()
        cache.forget()
        if cache.embedded - saved_at >= 2000:  # a long run keeps what it embedded even when stopped
            cache.save()
            saved_at = cache.embedded
        if progress is not None:
            progress(f"{conv.sample_id}: {len(conv.questions)} questions, {time.perf_counter() - started:.0f}s")
    return RunResult(dataset, results, dict(ingest), time.perf_counter() - started, cache.embedded)
