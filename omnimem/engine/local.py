"""``LocalEngine``: the embedded engine behind ``Memory()`` and ``Memory(path=...)``.

It owns the store (SQLite in memory or in a folder), the dense and sparse
indexes, the embedder, the optional knowledge graph and CLIP search, the
LLM, the settings, the token counter and the locks, and runs ingest,
retrieval, lifecycle and governance on them. The facade validates arguments
and calls these methods; nothing outside the engine touches its locks.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omnimem.engine import governance, lifecycle, listing
from omnimem.config import Settings
from omnimem.embed import DEFAULT_EMBEDDER, Embedder, canonical_name, create_embedder
from omnimem.engine.backends import open_search, open_store
from omnimem.embed.query import query_compatible
from omnimem.engine.parts import Parts
from omnimem.engine.writer import Writer
from omnimem.engine.enrich.worker import Enricher
from omnimem.errors import ConfigError, EmbedderMismatchError, InvalidInputError, NotFoundError
from omnimem.entities import Entity
from omnimem.index.manager import IndexSet
from omnimem.engine.ingest import media
from omnimem.engine.ingest.media import MediaResult
from omnimem.engine.ingest.pipeline import Ingestor, Progress
from omnimem.engine.ingest.prepare import AddResult, Pending, prepare
from omnimem.llm.base import LLM
from omnimem.mau import MAU, Modality, Scope
from omnimem.engine.ingest.novelty import NoveltyFilter
from omnimem.providers import create_provider
from omnimem.engine.retrieval.pyramid import Context
from omnimem.engine.retrieval.search import Retriever
from omnimem.store.audit import AuditRecord
from omnimem.store.base import Store
from omnimem.index.search import EmbeddedSearch
from omnimem.timeparse import zone
from omnimem.tokens import TokenCounter

if TYPE_CHECKING:  # the graph needs the [graph] extra (spaCy, rapidfuzz): imported when switched on
    from omnimem.graph.engine import KnowledgeGraph, Neighbor
    from omnimem.index.clip import ClipSearch


class LocalEngine:
    """Store, indexes and models in this process; ``path=None`` keeps everything in memory."""

    def __init__(
        self, path: Path | None, *, settings: Settings, embedder: str | Embedder | None, llm: LLM | None,
        actor: str, count_tokens: TokenCounter, read_only: bool = False, url: str | None = None,
    ) -> None:
        store = open_store(path, url, settings=settings, read_only=read_only)  # embedded, or PostgreSQL
        try:
            where = path if url is None else getattr(store, "url", url)
            model = _resolve_embedder(store, where, embedder if embedder is not None else settings.embedder,
                                      queries_only=store.read_only)
            self._search = open_search(store, model.dim, path, settings)
            self.parts = Parts(
                settings=settings, store=store, embedder=model, search=self._search, path=path,
                tz=zone(settings.timezone), default_actor=actor, count_tokens=count_tokens,
                novelty=NoveltyFilter(settings.novelty_threshold, settings.novelty), llm=llm,
            )
            self.parts.graph = self._make_graph() if settings.graph else None
            self.parts.clip = self._make_clip() if settings.clip_model else None
            self.ingestor = Ingestor(self.parts)
            self.writer = Writer(self.parts, self.ingestor)  # concurrent adds share one embedding and commit
            self.retriever = Retriever(self.parts)
            self.enricher = Enricher(self.parts)
            if settings.enrich == "async" and not read_only:  # threads start with the first job
                self.parts.wake = self.enricher.wake
                depth = store.queue_depth()
                if depth["pending"] + depth["running"]:  # left by an earlier process
                    self.enricher.start()
        except BaseException:
            store.close()
            raise

    def _make_graph(self) -> KnowledgeGraph:
        from omnimem.graph.engine import KnowledgeGraph

        p = self.parts
        choice = p.settings.graph_extractor
        if choice == "llm" and p.llm is None:
            raise ConfigError("graph_extractor='llm' needs an LLM; configure one or use 'spacy'")
        use_llm = choice == "llm" or (choice == "auto" and p.llm is not None)
        extractor = create_provider("graph_extractor", "llm", llm=p.llm) if use_llm and p.llm is not None \
            else create_provider("graph_extractor", "spacy")
        return KnowledgeGraph(p.store, p.embedder.embed, extractor, hops=p.settings.graph_hops,
                              beta=p.settings.graph_beta)

    def _make_clip(self) -> ClipSearch:
        from omnimem.index.clip import ClipSearch

        return ClipSearch(create_provider("clip", "clip", path=str(self.parts.settings.clip_model)))

    # -- lifecycle of the engine ----------------------------------------------
    def close(self) -> None:
        """Persist the indexes and release the store. Safe to call twice."""
        p = self.parts
        self.enricher.stop()  # after the job each worker is running; the rest stay queued in the store
        with p.lock:
            if p.closed:
                return
            p.closed = True  # no new search starts from here
        p.wait_for_reads()  # searches run outside the lock: let those in flight finish first
        with p.lock:
            try:
                p.search.save()
            finally:
                p.store.close()

    @property
    def read_only(self) -> bool:
        return self.parts.read_only

    @property
    def tz(self) -> tzinfo:
        """The zone for times given without an offset (setting ``timezone``)."""
        return self.parts.tz

    @property
    def indexes(self) -> IndexSet:
        """The embedded backend's dense and sparse indexes (for inspection)."""
        if not isinstance(self._search, EmbeddedSearch):
            raise ConfigError("this backend searches in the database and keeps no index in the process")
        return self._search.indexes

    # -- writes -----------------------------------------------------------------
    def ingest(self, items: Sequence[Pending], progress: Progress | None = None, **options: Any) -> list[AddResult]:
        """Store validated units (see :class:`omnimem.ingest.pipeline.Ingestor`), grouped with concurrent adds."""
        return self.writer.add(items, progress, **options)

    def restate(self, items: list[Pending], scope: Scope, progress: Progress | None) -> list[AddResult]:
        return self.ingestor.restate(items, scope, progress)

    def check_supersedable(self, ids: Sequence[str], owner: Scope) -> None:
        lifecycle.check_supersedable(self.parts, ids, owner)

    def update(self, unit_id: str, scope: Scope, text: str | None, time: object, speaker: str | None,
               reason: str | None) -> AddResult:
        """A corrected version of a text unit that supersedes it (see :meth:`Memory.update`)."""
        old = lifecycle.scoped_unit(self.parts, unit_id, scope)
        if old.modality is not Modality.TEXT:
            raise InvalidInputError("only text units can be updated; add the new media and pass supersedes=")
        lifecycle.check_supersedable(self.parts, [old.id], old.scope)
        body = text if text is not None else (self.retriever.full_text(old) or old.summary)
        item = prepare(
            body, time=time if time is not None else old.event_time, speaker=speaker if speaker is not None else old.speaker,
            source_id=None, scope=old.scope, tz=self.parts.tz, metadata=old.metadata,
        )
        if item.content_hash == old.content_hash:
            raise InvalidInputError("the update changes nothing")
        item = replace(item, source_ids=old.source_ids, supersedes=(unit_id,))
        return self.ingest([item], action="update", reason=reason, allow_forgotten=True)[0]

    def add_image(self, item: Pending, phash: str, data: bytes, captioned: bool) -> AddResult:
        """One image unit, unless it is the same file or a near-duplicate of a recent image of its scope."""
        p = self.parts
        if not captioned and p.settings.vision_captions and p.llm is not None and p.settings.enrich == "sync":
            captioner = create_provider("captioner", "vision-llm", llm=p.llm)
            described = captioner.caption(data, str(item.metadata["mime"]))
            item = replace(item, text=described, metadata={**item.metadata, "caption": "vision-llm"})
        with p.write_lock:
            with p.lock:
                if p.store.find_hashes([item.content_hash]):  # the very same file: reported as a duplicate
                    return self.ingestor.ingest([item])[0]  # not through the writer: we hold its lock
                recent = p.store.recent_metadata(item.scope, Modality.IMAGE, p.settings.novelty_window * 5)
            from omnimem.media import hash_distance, is_near_duplicate

            for unit_id, meta in recent:
                other = meta.get("phash")
                if other and is_near_duplicate(phash, other):
                    distance = hash_distance(phash, other)
                    with p.lock:
                        p.store.add_stats({"image_near_duplicate": 1})
                    return AddResult(None, False, f"near-duplicate image (phash distance {distance})", None, unit_id)
            return self.ingestor.ingest([item])[0]

    def add_audio(self, audio: media.Source, time: object, scope: Scope, progress: Progress | None) -> MediaResult:
        """Speech segments streamed into units, 16 at a time (see :meth:`Memory.add_audio`)."""
        p = self.parts
        stats: dict[str, float] = {}
        results: list[AddResult] = []
        batch: list[Pending] = []
        for item in media.audio_items(audio, time=time, scope=scope, tz=p.tz, stats=stats,
                                      max_seconds=p.settings.max_media_seconds,
                                      transcriber=create_provider("transcriber", "whisper"),
                                      detector=create_provider("vad", "silero")):
            batch.append(item)
            if len(batch) >= 16:
                results.extend(self.ingest(batch, progress, keep_chain=bool(results)))
                batch = []
        if batch:
            results.extend(self.ingest(batch, progress, keep_chain=bool(results)))
        with p.write_lock, p.lock:
            p.store.add_stats({k: v for k, v in stats.items() if k != "speech_segments"})
        return MediaResult(tuple(results), stats)

    def add_video(self, video: media.Source, time: object, scope: Scope, fps: float, max_frames: int) -> MediaResult:
        """A video event unit, its scene-change frames and its speech (see :meth:`Memory.add_video`)."""
        p = self.parts
        detector = None
        if p.clip is not None:  # scene changes judged by CLIP embeddings instead of pixels
            from omnimem.media.scene import EmbeddingChangeDetector

            clip = p.clip.embedder
            detector = EmbeddingChangeDetector(lambda image: clip.embed_images([image])[0])
        items, stats, event_id = media.video_items(
            video, time=time, scope=scope, tz=p.tz, fps=fps, max_frames=max_frames, detector=detector,
            max_pixels=p.settings.max_media_pixels, max_seconds=p.settings.max_media_seconds,
        )
        results = self.ingest(items)
        if not results[0].accepted:  # the same video again: nothing new was stored
            return MediaResult(tuple(results), stats, results[0].duplicate_of)
        with p.write_lock, p.lock:
            p.store.add_stats(stats)
        return MediaResult(tuple(results), stats, event_id)

    def flush(self, timeout: float | None) -> bool:
        """Wait for the enrichment queue to drain (see :meth:`Memory.flush`)."""
        return self.enricher.flush(timeout)

    def delete(self, unit_id: str, scope: Scope, reason: str | None, chain: bool) -> None:
        lifecycle.delete(self.parts, unit_id, scope, reason, chain)

    def forget(self, scope: Scope, **selection: Any) -> int:
        return lifecycle.forget(self.parts, scope, **selection)

    def preview_forget(self, scope: Scope, **selection: Any) -> list[MAU]:
        return lifecycle.preview_forget(self.parts, scope, **selection)

    def import_records(self, records: Iterable[Mapping[str, Any]], allow_forgotten: bool,
                       progress: Progress | None = None) -> dict[str, int]:
        self.parts.check_open(write=True)
        return governance.import_records(self.parts, self.ingestor, records, allow_forgotten=allow_forgotten,
                                         progress=progress)

    def reembed(self, embedder: Embedder) -> int:
        """Rebuild every vector with ``embedder``; then the engine, its indexes and its graph use it."""
        p = self.parts
        with p.write_lock, p.lock:
            p.check_open(write=True)
            count = governance.rewrite_vectors(p, embedder)
            p.embedder = embedder
            if isinstance(self._search, EmbeddedSearch):
                old = self._search.indexes
                self._search = EmbeddedSearch(self._search.store, IndexSet(
                    self._search.store, embedder.dim, old.folder, sparse_context=old.sparse_context))  # counter moved
            p.search = self._search
            p.search.save()
            if p.graph is not None:  # entity resolution compares names with the same model
                p.graph.use_embedder(embedder.embed)
        return count

    # -- reads ------------------------------------------------------------------
    def get(self, unit_id: str, scope: Scope) -> MAU:
        return lifecycle.scoped_unit(self.parts, unit_id, scope)

    def units(self, scope: Scope, filters: Mapping[str, Any], limit: object, offset: object) -> list[MAU]:
        """A page of the scope's units in event-time order (see :mod:`omnimem.engine.listing`)."""
        return listing.page(self.parts, scope, listing.make_filter(self.parts, **filters), limit, offset)

    def count_units(self, scope: Scope, filters: Mapping[str, Any]) -> int:
        return len(listing.matching(self.parts, scope, listing.make_filter(self.parts, **filters)))

    def raw(self, unit_id: str, scope: Scope) -> tuple[bytes, str]:
        """A unit's raw content (cold tier) and its content type; NotFoundError when it has none."""
        unit = lifecycle.scoped_unit(self.parts, unit_id, scope)
        if unit.raw_ref is None:
            raise NotFoundError(f"unit {unit.id} has no raw content")
        with self.parts.lock:
            data = self.parts.store.read_raw(unit.raw_ref)
        fallback = "text/plain; charset=utf-8" if unit.modality is Modality.TEXT else "application/octet-stream"
        return data, str(unit.metadata.get("mime") or fallback)

    def full_text(self, unit: MAU) -> str | None:
        return self.retriever.full_text(unit)

    def search(self, text: str, k: int, theta: float, budget: int, scope: Scope, include_superseded: bool,
               as_of: datetime | None, now: datetime | None = None) -> Context:
        with self.parts.reading():
            return self.retriever.search(text, k, theta, budget, scope, include_superseded, as_of, now)

    def history(self, unit_id: str, scope: Scope) -> list[AuditRecord]:
        return lifecycle.history(self.parts, unit_id, scope)

    def log(self, scope: Scope, limit: int | None) -> list[AuditRecord]:
        with self.parts.lock:
            self.parts.check_open()
            return self.parts.store.events(scope=scope, limit=limit)

    def export(self, scope: Scope) -> Iterator[dict[str, Any]]:
        self.parts.check_open()
        return governance.export_records(self.parts, scope)

    def need_graph(self) -> KnowledgeGraph:
        if self.parts.graph is None:
            raise ConfigError("the knowledge graph is off; open the store with Memory(..., graph=True)")
        return self.parts.graph

    def entities(self, scope: Scope) -> list[Entity]:
        graph = self.need_graph()
        found = graph.entities(scope)
        if scope.session_id is None:
            return found
        with self.parts.lock:
            in_session = set(self.parts.store.ids_in_scope(scope))
        return [e for e in found if in_session & set(graph.details(e)["units"])]

    def neighbors(self, name: str, scope: Scope, hops: int) -> list[Neighbor]:
        return self.need_graph().neighbors(name, scope, hops)

    def stats(self) -> dict[str, Any]:
        p = self.parts
        with p.lock:
            p.check_open()
            data: dict[str, Any] = {
                "path": str(p.path) if p.path else None,
                "embedder": p.embedder.name,
                "dim": p.embedder.dim,
                **p.store.stats(),
                "index": p.search.sizes(),
                "filters": p.store.filter_stats(),
                "llm": None,
                "queue": p.store.queue_depth(),
                "writer": self.writer.stats(),
            }
        if p.llm is not None:
            usage = p.llm.usage()
            data["llm"] = {"name": p.llm.name, **{k: getattr(usage, k) for k in usage.__dataclass_fields__}}
        return data


def _resolve_embedder(store: Store, path: Path | str | None, wanted: str | Embedder | None, *,
                      queries_only: bool = False) -> Embedder:
    """The embedder the store was built with, or the one asked for if it matches (or the store is new).

    A store open read-only (``queries_only``) also takes a model measured to embed queries like its own
    (:mod:`omnimem.embed.query`): nothing it embeds is ever stored.
    """
    meta = store.meta()

    def fits(name: str) -> bool:
        return meta is None or name == meta.embedder or (queries_only and query_compatible(meta.embedder, name))

    if isinstance(wanted, str) or wanted is None:
        name = canonical_name(wanted) if wanted else (meta.embedder if meta else DEFAULT_EMBEDDER)
        if not fits(name):
            raise EmbedderMismatchError(_mismatch(path, meta.embedder if meta else "", name))
        instance = create_embedder(name)
    else:
        instance = wanted
        if not fits(instance.name):
            raise EmbedderMismatchError(_mismatch(path, meta.embedder if meta else "", instance.name))
    if meta is None:
        meta = store.init_meta(instance.name, instance.dim)
    if meta.dim != instance.dim:
        raise EmbedderMismatchError(f"store vectors have {meta.dim} dimensions, {instance.name} gives {instance.dim}")
    return instance


def _mismatch(path: Path | str | None, stored: str, wanted: str) -> str:
    option = "--url" if isinstance(path, str) else "--store"
    return (
        f"store {path} was built with embedder {stored!r}, not {wanted!r}; open it without choosing an "
        f"embedder, or switch it with: omnimem reembed --embedder {wanted} {option} {path}"
    )
