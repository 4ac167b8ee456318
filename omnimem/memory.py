"""``Memory``: the one facade users touch. It validates and delegates."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


from omnimem.answer import Answer, answer_question
from omnimem.config import Settings
from omnimem.embed import DEFAULT_EMBEDDER, Embedder, canonical_name, create_embedder
from omnimem import validate
from omnimem.errors import ConfigError, EmbedderMismatchError, InvalidInputError, NotFoundError, StoreError
from omnimem.graph.model import Entity
from omnimem.index.manager import IndexSet
from omnimem.llm import LLM, resolve_llm
from omnimem.ingest import media
from omnimem.ingest.media import MediaResult
from omnimem.ingest.pipeline import Ingestor, Progress
from omnimem.ingest.prepare import AddResult, Pending, clean_text, make_scope, prepare, prepare_turn
from omnimem.mau import MAU, Modality
from omnimem.novelty import NoveltyFilter
from omnimem.pyramid import Context
from omnimem.retrieval import Retriever
from omnimem.store.audit import AuditEvent, AuditRecord
from omnimem.timeparse import parse_time
from omnimem.store.opening import open_read_only
from omnimem.store.sqlite import SQLiteStore

if TYPE_CHECKING:  # the graph needs the [graph] extra (spaCy, rapidfuzz): imported when switched on
    from omnimem.graph.engine import KnowledgeGraph, Neighbor
    from omnimem.index.clip import ClipSearch

T = TypeVar("T")


class Memory:
    """Lifelong memory for an agent.

    ``Memory()`` lives in memory; ``Memory(path="./mem")`` is an embedded store
    on disk (SQLite hot tier, content-addressed cold tier, FAISS + BM25
    indexes). Scope ids (``user_id``, ``agent_id``, ``session_id``) are
    keyword-only everywhere.
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        embedder: str | Embedder | None = None,
        llm: LLM | str | bool | None = None,
        settings: Settings | None = None,
        config_file: str | Path | None = None,
        actor: str | None = None,
        read_only: bool = False,
        **overrides: Any,
    ) -> None:
        if settings is not None and (overrides or config_file is not None):
            raise ConfigError("pass either settings= or individual settings, not both")
        self.settings = settings or Settings.load(config_file=config_file, **overrides)
        self.path = validate.store_path(path)
        read_only = open_read_only(self.path, read_only)
        self._lock = threading.RLock()  # store and index access (short)
        self._write_lock = threading.RLock()  # one writer at a time; readers are not blocked while it embeds
        self._closed = False
        self._tz = _zone(self.settings.timezone)
        self.actor = actor or _local_user()
        self.novelty = NoveltyFilter(self.settings.novelty_threshold, self.settings.novelty)
        self.llm: LLM | None = None if llm is False else resolve_llm(None if llm is True else llm)
        self.store = SQLiteStore(self.path, read_only=read_only)
        try:
            self.embedder = self._resolve_embedder(embedder)
            index_dir = self.path / "index" if self.path is not None else None
            self.indexes = IndexSet(self.store, self.embedder.dim, index_dir, writable=not read_only)
            self.graph = self._make_graph() if self.settings.graph else None
            self.clip = self._make_clip() if self.settings.clip_model else None
            self._ingestor = Ingestor(self)
            self._retriever = Retriever(self)
        except BaseException:
            self.store.close()
            raise

    def _make_graph(self) -> KnowledgeGraph:
        from omnimem.graph.engine import KnowledgeGraph
        from omnimem.graph.extract import LLMExtractor, SpacyExtractor

        choice = self.settings.graph_extractor
        if choice == "llm" and self.llm is None:
            raise ConfigError("graph_extractor='llm' needs an LLM; configure one or use 'spacy'")
        use_llm = choice == "llm" or (choice == "auto" and self.llm is not None)
        extractor = LLMExtractor(self.llm) if use_llm and self.llm is not None else SpacyExtractor()
        return KnowledgeGraph(
            self.store.connection, self.embedder.embed, extractor,
            hops=self.settings.graph_hops, beta=self.settings.graph_beta,
        )

    def _make_clip(self) -> ClipSearch:
        from omnimem.index.clip import ClipSearch
        from omnimem.media.clip import CLIPImageEmbedder

        return ClipSearch(self.store, CLIPImageEmbedder(str(self.settings.clip_model)))

    def _resolve_embedder(self, requested: str | Embedder | None) -> Embedder:
        wanted = requested if requested is not None else self.settings.embedder
        meta = self.store.meta()
        if isinstance(wanted, str) or wanted is None:
            name = canonical_name(wanted) if wanted else (meta.embedder if meta else DEFAULT_EMBEDDER)
            if meta is not None and name != meta.embedder:
                raise EmbedderMismatchError(_mismatch(self.path, meta.embedder, name))
            instance = create_embedder(name)
        else:
            instance = wanted
            if meta is not None and instance.name != meta.embedder:
                raise EmbedderMismatchError(_mismatch(self.path, meta.embedder, instance.name))
        if meta is None:
            meta = self.store.init_meta(instance.name, instance.dim)
        if meta.dim != instance.dim:
            raise EmbedderMismatchError(f"store vectors have {meta.dim} dimensions, {instance.name} gives {instance.dim}")
        return instance

    # -- lifecycle ------------------------------------------------------------
    def __enter__(self) -> Memory:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Persist the indexes and release the store. Safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                self.indexes.save()
            finally:
                self.store.close()

    @property
    def read_only(self) -> bool:
        """Whether this store was opened read-only (searches and reads work, writes raise)."""
        return self.store.read_only

    def _check_open(self, *, write: bool = False) -> None:
        if self._closed:
            raise StoreError("this Memory is closed")
        if write:
            self.store.check_writable()

    # -- writes -----------------------------------------------------------------
    def add(
        self,
        text: str | bytes,
        *,
        time: str | datetime | None = None,
        speaker: str | None = None,
        source_id: str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        supersedes: Sequence[str] | None = None,
        allow_forgotten: bool = False,
    ) -> AddResult:
        """Remember one piece of text; returns its id or why it was skipped.

        ``supersedes`` names units this one replaces: they stay for history
        but are withheld from search. Content that was forgotten is not
        stored again unless ``allow_forgotten``.
        """
        scope = make_scope(user_id, agent_id, session_id)
        item = prepare(text, time=time, speaker=speaker, source_id=source_id, scope=scope, tz=self._tz, metadata=metadata)
        if supersedes is not None:
            supersedes = validate.unit_ids(supersedes, "supersedes")
        if supersedes:
            self._check_supersedable(list(supersedes))
            item = replace(item, supersedes=tuple(supersedes))
        return self._ingest([item], allow_forgotten=allow_forgotten, action="supersede" if supersedes else "add")[0]

    def update(
        self,
        unit_id: str,
        *,
        text: str | None = None,
        time: str | datetime | None = None,
        speaker: str | None = None,
        reason: str | None = None,
    ) -> AddResult:
        """Replace a unit with a corrected version; the old one is kept for history.

        Fields not given are taken from the old unit. The new unit supersedes
        the old (search returns the new one; ``include_superseded=True`` both).
        """
        old = self.get(unit_id)
        if old.modality is not Modality.TEXT:
            raise InvalidInputError("only text units can be updated; add the new media and pass supersedes=")
        self._check_supersedable([unit_id])
        body = text if text is not None else (self._retriever.full_text(old) or old.summary)
        item = prepare(
            body, time=time if time is not None else old.event_time, speaker=speaker if speaker is not None else old.speaker,
            source_id=None, scope=old.scope, tz=self._tz, metadata=old.metadata,
        )
        if item.content_hash == old.content_hash:
            raise InvalidInputError("the update changes nothing")
        item = replace(item, source_ids=old.source_ids, supersedes=(unit_id,))
        return self._ingest([item], action="update", reason=validate.note(reason), allow_forgotten=True)[0]

    def _check_supersedable(self, ids: list[str]) -> None:
        with self._lock:
            found = {u.id: u for u in self.store.get(ids)}
        for uid in ids:
            if uid not in found:
                raise NotFoundError(f"no unit with id {uid!r}")
            if found[uid].superseded_by is not None:
                raise InvalidInputError(f"unit {uid} is already superseded by {found[uid].superseded_by}; use that one")

    def add_dialogue(
        self,
        turns: Iterable[Mapping[str, Any]],
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        restate: bool = False,
        allow_forgotten: bool = False,
        progress: Progress | None = None,
    ) -> list[AddResult]:
        """Remember a list of turns (``text``, ``speaker``, ``time``, optional ``id``).

        Every turn is validated before any is stored. Turns are written in
        batches, each atomic; re-running after a crash skips what was stored.
        With ``restate=True`` the turns are rewritten window by window into
        self-contained units first (see :meth:`_restate`).
        """
        if isinstance(turns, str | bytes) or not isinstance(turns, Iterable):
            raise InvalidInputError("turns must be a list of mappings")
        scope = make_scope(user_id, agent_id, session_id)
        items = [prepare_turn(t, i, scope=scope, tz=self._tz) for i, t in enumerate(turns)]
        if restate:
            return self._ingestor.restate(items, scope, progress)
        return self._ingest(items, progress, allow_forgotten=allow_forgotten)

    def _ingest(self, items: Sequence[Pending], progress: Progress | None = None, **options: Any) -> list[AddResult]:
        """Store validated units (see :class:`omnimem.ingest.pipeline.Ingestor`)."""
        return self._ingestor.ingest(items, progress, **options)

    # -- media -------------------------------------------------------------
    def add_image(
        self,
        image: str | Path | bytes,
        caption: str | None = None,
        *,
        time: str | datetime | None = None,
        source_id: str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
    ) -> AddResult:
        """Remember an image; its bytes go to the cold tier, its caption (or what is known) is searched.

        Without a caption the summary comes from the configured vision LLM when
        ``vision_captions`` is on, else offline from the file name, EXIF date and
        place, and size. A near-duplicate (perceptual hash) of a recent image of
        the same scope is skipped. With ``clip_model`` set, the image also gets a
        CLIP vector for text-to-image search.
        """
        scope = make_scope(user_id, agent_id, session_id)
        data, name = media.read_bytes(image, limit=media.MAX_IMAGE_BYTES)
        item, phash = media.image_item(data, filename=name, caption=validate.caption(caption), time=time, scope=scope,
                                       tz=self._tz, max_pixels=self.settings.max_media_pixels)
        if source_id is not None:
            item = replace(item, source_id=clean_text(source_id, what="source_id"))
        if not (caption and caption.strip()) and self.settings.vision_captions and self.llm is not None:
            described = media.describe_image(self.llm, data, str(item.metadata["mime"]))
            item = replace(item, text=described, metadata={**item.metadata, "caption": "vision-llm"})
        with self._write_lock:
            with self._lock:
                if self.store.find_hashes([item.content_hash]):  # the very same file: reported as a duplicate
                    return self._ingest([item])[0]
                recent = self.store.recent_metadata(scope, Modality.IMAGE, self.settings.novelty_window * 5)
            from omnimem.media import hash_distance, is_near_duplicate

            for unit_id, meta in recent:
                other = meta.get("phash")
                if other and is_near_duplicate(phash, other):
                    distance = hash_distance(phash, other)
                    with self._lock:
                        self.store.add_stats({"image_near_duplicate": 1})
                    return AddResult(None, False, f"near-duplicate image (phash distance {distance})", None, unit_id)
            return self._ingest([item])[0]

    def add_audio(
        self,
        audio: str | Path | bytes,
        *,
        time: str | datetime | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        progress: Progress | None = None,
    ) -> MediaResult:
        """Remember what was said in a recording: one unit per speech segment, silence dropped.

        The file is streamed, and segments are stored as they are transcribed,
        so a long recording needs bounded memory and an interruption keeps what
        was stored (re-running skips it).
        """
        scope = make_scope(user_id, agent_id, session_id)
        stats: dict[str, float] = {}
        results: list[AddResult] = []
        batch: list[Pending] = []
        for item in media.audio_items(audio, time=time, scope=scope, tz=self._tz, stats=stats,
                                      max_seconds=self.settings.max_media_seconds):
            batch.append(item)
            if len(batch) >= 16:
                results.extend(self._ingest(batch, progress, keep_chain=bool(results)))
                batch = []
        if batch:
            results.extend(self._ingest(batch, progress, keep_chain=bool(results)))
        with self._write_lock, self._lock:
            self.store.add_stats({k: v for k, v in stats.items() if k != "speech_segments"})
        return MediaResult(tuple(results), stats)

    def add_video(
        self,
        video: str | Path | bytes,
        *,
        time: str | datetime | None = None,
        fps: float = 1.0,
        max_frames: int = 200,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
    ) -> MediaResult:
        """Remember a video: one event unit, its scene-change frames, and its speech, all linked."""
        fps = validate.real(fps, "fps", low=0.0, high=1000.0, open_low=True)
        max_frames = validate.whole(max_frames, "max_frames", maximum=100_000)
        scope = make_scope(user_id, agent_id, session_id)
        detector = None
        if self.clip is not None:  # scene changes judged by CLIP embeddings instead of pixels
            from omnimem.media.scene import EmbeddingChangeDetector

            clip = self.clip.embedder
            detector = EmbeddingChangeDetector(lambda image: clip.embed_images([image])[0])
        items, stats, event_id = media.video_items(
            video, time=time, scope=scope, tz=self._tz, fps=fps, max_frames=max_frames, detector=detector,
            max_pixels=self.settings.max_media_pixels, max_seconds=self.settings.max_media_seconds,
        )
        results = self._ingest(items)
        if not results[0].accepted:  # the same video again: nothing new was stored
            return MediaResult(tuple(results), stats, results[0].duplicate_of)
        with self._write_lock, self._lock:
            self.store.add_stats(stats)
        return MediaResult(tuple(results), stats, event_id)

    def delete(self, unit_id: str, *, reason: str | None = None) -> None:
        """Remove one unit from every tier and index, with no residue (see :meth:`forget`)."""
        unit_id = validate.unit_id(unit_id)
        with self._write_lock, self._lock:
            self._check_open(write=True)
            found = self.store.get([unit_id])
            if not found:
                raise NotFoundError(f"no unit with id {unit_id!r}")
            self._remove([unit_id], AuditEvent("delete", self.actor, (unit_id,), found[0].scope, validate.note(reason)))

    def forget(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        since: str | datetime | None = None,
        until: str | datetime | None = None,
        unit_ids: Sequence[str] | None = None,
        all: bool = False,
        reason: str | None = None,
    ) -> int:
        """Remove units with zero residue; returns how many.

        Select by scope, by event-time range (``since`` inclusive, ``until``
        exclusive), or by ids; criteria combine. Nothing selected means
        nothing, never "everything": wiping the store needs ``all=True``.
        Content leaves the hot tier, the cold tier (unless another unit shares
        the file), both indexes (rewritten on disk), the graph, and the bytes
        leave SQLite's free pages and WAL. A tombstone (ids and hashes, no
        content) keeps the log truthful and stops re-ingest from restoring it.
        """
        scope = make_scope(user_id, agent_id, session_id)
        unit_ids, all = None if unit_ids is None else validate.unit_ids(unit_ids), validate.flag(all, "all")
        start = parse_time(since, default_tz=self._tz) if since is not None else None
        end = parse_time(until, default_tz=self._tz) if until is not None else None
        if scope.is_empty() and start is None and end is None and unit_ids is None and not all:
            raise InvalidInputError("forget needs a scope, a time range or unit ids; it never means 'everything' "
                                    "(pass all=True to wipe the store)")
        with self._write_lock, self._lock:
            self._check_open(write=True)
            chosen = self.store.ids_in_scope(scope)
            if start is not None or end is not None:  # only a time range needs the units themselves
                chosen = [u.id for u in self.store.get(chosen) if _in_range(u, start, end)]
            if unit_ids is not None:
                wanted = set(unit_ids)
                chosen = [uid for uid in chosen if uid in wanted]
            details = {"since": start.isoformat() if start else None, "until": end.isoformat() if end else None,
                       "all": all}
            self._remove(chosen, AuditEvent("forget", self.actor, (), scope, validate.note(reason), details))
            return len(chosen)

    def _remove(self, ids: list[str], event: AuditEvent) -> None:
        """Delete units everywhere, then scrub: rewrite index files, checkpoint the WAL."""
        self.indexes.sync()
        removed = self.store.delete(ids, event=event)
        if removed:
            self.indexes.removed([rid for rid, _ in removed], self.store.last_write_seq)
        self.indexes.save()  # the files on disk must not keep forgotten vectors or words
        self.store.scrub()

    # -- reads ------------------------------------------------------------------
    def get(self, unit_id: str) -> MAU:
        """The unit with this id, or NotFoundError."""
        unit_id = validate.unit_id(unit_id)
        with self._lock:
            self._check_open()
            found = self.store.get([unit_id])
        if not found:
            raise NotFoundError(f"no unit with id {unit_id!r}")
        return found[0]

    def search(
        self,
        query: str,
        *,
        top_k: int | None = None,
        theta: float | None = None,
        budget: int | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        include_superseded: bool = False,
        as_of: str | datetime | None = None,
    ) -> Context:
        """Hybrid retrieval (dense + BM25, set union) packed into a pyramid context.

        Superseded units are withheld unless ``include_superseded``; ``as_of``
        answers from what the memory held at that time (record time).
        """
        text = clean_text(validate.query(query, self.settings.max_query_chars), what="query")
        k = self.settings.top_k if top_k is None else validate.whole(top_k, "top_k", maximum=10_000)
        th = self.settings.theta if theta is None else validate.real(theta, "theta", low=-1.0, high=1.0)
        limit = self.settings.budget if budget is None else validate.whole(budget, "budget")
        scope = make_scope(user_id, agent_id, session_id)
        when = parse_time(as_of, default_tz=self._tz) if as_of is not None else None
        return self._retriever.search(text, k, th, limit, scope, include_superseded, when)

    # -- graph API ------------------------------------------------------------
    def _need_graph(self) -> KnowledgeGraph:
        if self.graph is None:
            raise ConfigError("the knowledge graph is off; open the store with Memory(..., graph=True)")
        return self.graph

    def entities(
        self, *, user_id: str | None = None, agent_id: str | None = None, session_id: str | None = None
    ) -> list[Entity]:
        """Entities of a scope (``str()`` shows name, type and aliases)."""
        scope = make_scope(user_id, agent_id, session_id)
        graph = self._need_graph()
        found = graph.entities(scope)
        if session_id is None:
            return found
        with self._lock:
            in_session = set(self.store.ids_in_scope(scope))
        return [e for e in found if in_session & set(graph.details(e)["units"])]

    def neighbors(
        self, name: str, *, hops: int = 2, user_id: str | None = None, agent_id: str | None = None,
        session_id: str | None = None,
    ) -> list[Neighbor]:
        """Entities within ``hops`` of the entity called ``name`` (or with that alias), scored."""
        hops = validate.whole(hops, "hops", minimum=0, maximum=10)
        scope = make_scope(user_id, agent_id, session_id)
        return self._need_graph().neighbors(clean_text(name, what="name"), scope, hops)

    def ask(
        self,
        question: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        budget: int | None = None,
        top_k: int | None = None,
        instructions: str | None = None,
    ) -> Answer:
        """Answer from memory with the configured LLM; offline, return the evidence only.

        ``instructions`` replaces the default system prompt (benchmarks use it).
        """
        ctx = self.search(
            question, top_k=top_k, budget=budget, user_id=user_id, agent_id=agent_id, session_id=session_id
        )
        return answer_question(self.llm, ctx.query, ctx, instructions=instructions)

    def history(self, unit_id: str) -> list[AuditRecord]:
        """Every logged event about a unit, oldest first (also after it was forgotten)."""
        unit_id = validate.unit_id(unit_id)
        with self._lock:
            self._check_open()
            return self.store.events(unit_id=unit_id)

    def log(
        self, *, user_id: str | None = None, agent_id: str | None = None, session_id: str | None = None,
        limit: int | None = None,
    ) -> list[AuditRecord]:
        """The audit log (append-only), optionally for one scope and only the last ``limit`` events."""
        scope = make_scope(user_id, agent_id, session_id)
        with self._lock:
            self._check_open()
            return self.store.events(scope=scope, limit=None if limit is None else validate.whole(limit, "limit"))

    # -- data access and model changes ------------------------------------------
    def export(
        self, *, user_id: str | None = None, agent_id: str | None = None, session_id: str | None = None,
        all: bool = False,
    ) -> Iterator[dict[str, Any]]:
        """Everything held about a scope as JSON-ready records (see :mod:`omnimem.governance`)."""
        from omnimem.governance import export_records

        scope = make_scope(user_id, agent_id, session_id)
        if scope.is_empty() and not validate.flag(all, "all"):
            raise InvalidInputError("export needs a scope; pass all=True to export the whole store")
        self._check_open()
        return export_records(self, scope)

    def import_records(self, records: Iterable[Mapping[str, Any]]) -> dict[str, int]:
        """Load a dump made by :meth:`export`; every record is validated before any is stored."""
        from omnimem.governance import import_records

        self._check_open(write=True)
        return import_records(self, validate.records(records))

    def reembed(self, embedder: str | Embedder) -> int:
        """Rebuild every vector with another embedding model; the store then records that model."""
        from omnimem.governance import reembed

        self._check_open(write=True)
        instance = create_embedder(embedder) if isinstance(embedder, str) else embedder
        return reembed(self, instance)

    def search_many(self, queries: Sequence[str], *, workers: int = 4, **kwargs: Any) -> list[Context]:
        """``search`` for many queries on a thread pool; results in input order."""
        return _parallel(lambda q: self.search(q, **kwargs), queries, workers)

    def ask_many(self, questions: Sequence[str], *, workers: int = 4, **kwargs: Any) -> list[Answer]:
        """``ask`` for many questions on a thread pool; results in input order."""
        return _parallel(lambda q: self.ask(q, **kwargs), questions, workers)

    def stats(self) -> dict[str, Any]:
        """Counts and configuration, for ``omnimem stats``."""
        with self._lock:
            self._check_open()
            data: dict[str, Any] = {
                "path": str(self.path) if self.path else None,
                "embedder": self.embedder.name,
                "dim": self.embedder.dim,
                **self.store.stats(),
                "index": self.indexes.sizes(),
                "filters": self.store.filter_stats(),
                "llm": None,
            }
        if self.llm is not None:
            usage = self.llm.usage()
            data["llm"] = {"name": self.llm.name, **{k: getattr(usage, k) for k in usage.__dataclass_fields__}}
        return data

    def __repr__(self) -> str:
        where = str(self.path) if self.path else ":memory:"
        return f"Memory({where!r}, embedder={self.embedder.name!r})"


def _local_user() -> str:
    import getpass

    try:
        return f"local:{getpass.getuser()}"
    except (KeyError, OSError):  # no passwd entry (containers)
        return "local"


def _in_range(unit: MAU, start: datetime | None, end: datetime | None) -> bool:
    if start is None and end is None:
        return True
    if unit.event_time is None:
        return False
    return (start is None or unit.event_time >= start) and (end is None or unit.event_time < end)


def _parallel(fn: Callable[[str], T], items: Sequence[str], workers: int) -> list[T]:
    workers, items = validate.whole(workers, "workers", maximum=256), validate.texts(items)
    if workers == 1 or len(items) <= 1:
        return [fn(item) for item in items]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="omnimem") as pool:
        return list(pool.map(fn, items))


def _zone(name: str) -> ZoneInfo | timezone:
    if name.upper() == "UTC":
        return timezone.utc
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(f"unknown timezone {name!r}") from None


def _mismatch(path: Path | None, stored: str, wanted: str) -> str:
    return (
        f"store {path} was built with embedder {stored!r}, not {wanted!r}; open it without choosing an "
        f"embedder, or switch it with: omnimem reembed --embedder {wanted} --store {path}"
    )
