"""``LocalEngine``: the embedded engine behind ``Memory()`` and ``Memory(path=...)``.

It opens the store (SQLite in memory or in a folder, or PostgreSQL), the
dense and sparse indexes, the embedder, the optional knowledge graph and CLIP
search, builds what never changes (:class:`~omnimem.engine.deps.Deps`), the
writer's state (:class:`~omnimem.engine.state.WriterState`: the locks, and
the embedder and search ``reembed`` swaps), the writer
(:mod:`omnimem.engine.writer`, the one door for every write and the owner of
that state), the retriever and the enricher, and delegates each verb to the room that does it. It implements the
engine contract (:class:`omnimem.contract.Engine`): the facade checks
each request once and calls one method; what depends on this engine's settings
(its time zone, search defaults, the query and media limits) and the
preparation of units are done here. Beyond the contract it offers what only
exists in-process (``indexes``, ``reembed``, ``export_graph``, ``enricher``),
which :class:`omnimem.memory.LocalMemory` exposes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omnimem import otel
from omnimem.contract import validate
from omnimem.engine import governance, lifecycle, listing
from omnimem.config import Settings
from omnimem.embed import DEFAULT_EMBEDDER, Embedder, canonical_name, create_embedder
from omnimem.engine.backends import open_search, open_store
from omnimem.contract import (
    AddRequest, AskRequest, AudioRequest, DeleteRequest, DialogueRequest, EntityRequest, ExportRequest, ForgetRequest,
    ImageRequest, ImportRequest, ListRequest, LogRequest, PutRequest, ScopeRequest, SearchRequest, UnitRequest,
    UpdateRequest, TrustRequest, VideoRequest, When, MAX_IMAGE_BYTES,
)
from omnimem.embed.base import check_roles, role_scheme
from omnimem.embed.query import query_compatible, with_fast_queries
from omnimem.engine.deps import Deps
from omnimem.engine.state import WriterState
from omnimem.engine.writer import Writer
from omnimem.engine.enrich.worker import Enricher
from omnimem.errors import ConfigError, EmbedderMismatchError, InvalidInputError, NotFoundError
from omnimem.results import Answer, AuditRecord, Context, Entity
from omnimem.index.manager import IndexSet
from omnimem.engine import media_adds
from omnimem.engine.ingest import media
from omnimem.results import AddResult, MediaResult
from omnimem.engine.ingest.pipeline import Ingestor, Progress
from omnimem.engine.ingest.prepare import Pending, prepare, prepare_turn
from omnimem.engine.provenance import kept, stamp, turn_stamp
from omnimem.llm.base import LLM
from omnimem.mau import MAU, Modality, Scope, content_hash
from omnimem.contract.providers import create_provider
from omnimem.text import check_store_language
from omnimem.engine.retrieval.answer import answer_question
from omnimem.engine.retrieval.planner import Query, planner_name
from omnimem.engine.retrieval.planning import planned_search
from omnimem.engine.retrieval.search import Retriever
from omnimem.store.base import CandidateSearch, Store
from omnimem.index.search import EmbeddedSearch
from omnimem.timeparse import parse_time, zone
from omnimem.tokens import TokenCounter

if TYPE_CHECKING:  # the graph needs the [graph] extra (spaCy, rapidfuzz): imported when switched on
    from omnimem.graph.engine import KnowledgeGraph
    from omnimem.results import Neighbor
    from omnimem.index.clip import ClipSearch


class LocalEngine:
    """Store, indexes and models in this process; ``path=None`` keeps everything in memory."""

    def __init__(
        self, path: Path | None, *, settings: Settings, embedder: str | Embedder | None, llm: LLM | None,
        actor: str, count_tokens: TokenCounter, read_only: bool = False, url: str | None = None,
    ) -> None:
        store = open_store(path, url, settings=settings, read_only=read_only)  # embedded, or PostgreSQL
        self.path, self.url = path, url  # where the store is (the spans' backend attribute reads them)
        try:
            where = path if url is None else getattr(store, "url", url)
            model = _resolve_embedder(store, where, embedder if embedder is not None else settings.embedder,
                                      queries_only=store.read_only, language=settings.language,
                                      fast_queries=settings.fast_queries)
            self._search = open_search(store, model.dim, path, settings)
            self.deps = Deps(
                settings=settings, store=store, path=path, tz=zone(settings.timezone), default_actor=actor,
                count_tokens=count_tokens, llm=llm, graph=_make_graph(settings, store, model, llm) if settings.graph
                else None, clip=_make_clip(settings) if settings.clip_model else None,
            )
            self.state = WriterState(embedder=model, search=self._search, read_only=store.read_only, path=path)
            self.ingestor = Ingestor(self.deps, self.state)
            self.writer = Writer(self.deps, self.state, self.ingestor)  # every write; concurrent adds: one embedding
            self.retriever = Retriever(self.deps, self.state)
            self.enricher = Enricher(self.deps, self.writer)
            if settings.enrich == "async" and not read_only:  # threads start with the first job
                self.state.wake = self.enricher.wake
                depth = store.queue_depth()
                if depth["pending"] + depth["running"]:  # left by an earlier process
                    self.enricher.start()
        except BaseException:
            store.close()
            raise

    # -- lifecycle of the engine ----------------------------------------------
    def close(self) -> None:
        """Persist the indexes and release the store. Safe to call twice."""
        self.enricher.stop()  # after the job each worker is running; the rest stay queued in the store
        self.writer.close()

    @property
    def read_only(self) -> bool:
        return self.deps.read_only

    @property
    def tz(self) -> tzinfo:
        """The zone for times given without an offset (setting ``timezone``)."""
        return self.deps.tz

    @property
    def indexes(self) -> IndexSet:
        """The embedded backend's dense and sparse indexes (for inspection)."""
        if not isinstance(self._search, EmbeddedSearch):
            raise ConfigError("this backend searches in the database and keeps no index in the process")
        return self._search.indexes

    # -- writes -----------------------------------------------------------------
    def add(self, request: AddRequest) -> AddResult:
        """One text unit, which may supersede others of its user and agent (see :meth:`Memory.add`)."""
        r = request
        item = self._pending(r.text, r.time, r.speaker, r.source_id, r.scope, r.metadata)
        item = replace(item, provenance=stamp(r.source, r.trust, self.deps.actor))
        if r.supersedes:
            self.check_supersedable(r.supersedes, r.scope)
            item = replace(item, supersedes=r.supersedes)
        return self.ingest([item], allow_forgotten=r.allow_forgotten, action="supersede" if r.supersedes else "add")[0]

    def put(self, request: PutRequest) -> list[AddResult]:
        """Units stored as given, in one transaction, no novelty filter (see :meth:`Memory.put`); a unit replaced
        must be a current one of the same user and agent (the store checks it as it writes)."""
        items = [replace(self._pending(i.text, i.time, i.speaker, i.source_id, request.scope, i.metadata),
                         novelty=False, unit_id=i.unit_id, supersedes=i.supersedes,
                         provenance=stamp(i.source, i.trust, self.deps.actor)) for i in request.items]
        action = "supersede" if any(i.supersedes for i in items) else "add"
        return self.ingest(items, allow_forgotten=request.allow_forgotten, action=action)

    def _pending(self, text: str, time: When, speaker: str | None, source_id: str | None, scope: Scope,
                 metadata: dict[str, Any] | None) -> Pending:
        """A unit from fields the facade checked (not again here): its time read in this engine's zone."""
        when = parse_time(time, default_tz=self.tz)
        digest = content_hash(text, speaker=speaker, event_time=when, scope=scope, source_id=source_id)
        return Pending(text, speaker, when, scope, source_id, digest, metadata=metadata or {})

    def add_dialogue(self, request: DialogueRequest) -> list[AddResult]:
        """Turns validated as a whole, then stored in batches or restated first (see :meth:`Memory.add_dialogue`)."""
        items = [replace(prepare_turn(t, i, scope=request.scope, tz=self.tz), provenance=turn_stamp(t, i, self.deps.actor))
                 for i, t in enumerate(request.turns)]
        if request.restate:
            return self.restate(items, request.scope, request.progress)
        return self.ingest(items, request.progress, allow_forgotten=request.allow_forgotten)

    def ingest(self, items: Sequence[Pending], progress: Progress | None = None, **options: Any) -> list[AddResult]:
        """Store validated units (see :class:`omnimem.engine.ingest.pipeline.Ingestor`), grouped with concurrent adds."""
        return self.writer.add(items, progress, **options)

    def restate(self, items: list[Pending], scope: Scope, progress: Progress | None) -> list[AddResult]:
        return self.ingestor.restate(items, scope, progress, self.writer.ingest)

    def check_supersedable(self, ids: Sequence[str], owner: Scope) -> None:
        lifecycle.check_supersedable(self.deps, self.state, ids, owner)

    def update(self, request: UpdateRequest) -> AddResult:
        """A corrected version of a text unit that supersedes it (see :meth:`Memory.update`)."""
        r = request
        unit_id, text, time, speaker, reason = r.unit_id, r.text, r.time, r.speaker, r.reason
        old = lifecycle.scoped_unit(self.deps, self.state, unit_id, request.scope)
        if old.modality is not Modality.TEXT:
            raise InvalidInputError("only text units can be updated; add the new media and pass supersedes=")
        lifecycle.check_supersedable(self.deps, self.state, [old.id], old.scope)
        body = text if text is not None else (self.retriever.full_text(old) or old.summary)
        item = prepare(
            body, time=time if time is not None else old.event_time, speaker=speaker if speaker is not None else old.speaker,
            source_id=None, scope=old.scope, tz=self.deps.tz, metadata=old.metadata,
        )
        if item.content_hash == old.content_hash:
            raise InvalidInputError("the update changes nothing")
        item = replace(item, source_ids=old.source_ids, supersedes=(unit_id,), provenance=kept(old, self.deps.actor))
        return self.ingest([item], action="update", reason=reason, allow_forgotten=True)[0]

    def add_image(self, request: ImageRequest) -> AddResult:
        """One image unit, unless it is the same file or a near-duplicate of a recent image of its scope."""
        p, r = self.deps, request
        data, name = media.read_bytes(r.image, limit=MAX_IMAGE_BYTES)
        item, phash = media.image_item(data, filename=name, caption=r.caption, time=r.time, scope=r.scope, tz=p.tz,
                                       max_pixels=p.settings.max_media_pixels)
        if r.source_id is not None:
            item = replace(item, source_id=r.source_id)
        return media_adds.add_image(p, self.writer, item, phash, data, r.caption is not None)

    def add_audio(self, request: AudioRequest) -> MediaResult:
        """Speech segments streamed into units, 16 at a time (see :meth:`Memory.add_audio`)."""
        r = request
        return media_adds.add_audio(self.deps, self.writer, r.audio, r.time, r.scope, r.progress)

    def add_video(self, request: VideoRequest) -> MediaResult:
        """A video event unit, its scene-change frames and its speech (see :meth:`Memory.add_video`)."""
        r = request
        return media_adds.add_video(self.deps, self.writer, r.video, r.time, r.scope, r.fps, r.max_frames)

    def flush(self, timeout: float | None) -> bool:
        """Wait for the enrichment queue to drain (see :meth:`Memory.flush`)."""
        return self.enricher.flush(timeout)

    def set_trust(self, request: TrustRequest) -> MAU:
        """An admin's change of a unit's trust, with an audit entry (see :meth:`Memory.set_trust`)."""
        unit = lifecycle.scoped_unit(self.deps, self.state, request.unit_id, request.scope)
        return governance.set_trust(self.deps, self.writer, unit, request.trust, request.reason)

    def delete(self, request: DeleteRequest) -> None:
        lifecycle.delete(self.deps, self.writer, request.unit_id, request.scope, request.reason, request.chain)

    def forget(self, request: ForgetRequest) -> int:
        return lifecycle.forget(self.deps, self.writer, request.scope, **_selection(request))

    def preview_forget(self, request: ForgetRequest) -> list[MAU]:
        return lifecycle.preview_forget(self.deps, self.state, request.scope, **_selection(request))

    def import_records(self, request: ImportRequest) -> dict[str, int]:
        self.state.check_open(write=True)
        return governance.import_records(self.deps, self.writer, request.records,
                                         allow_forgotten=request.allow_forgotten, progress=request.progress,
                                         trust=request.trust)

    def reembed(self, embedder: Embedder) -> int:
        """Rebuild every vector with ``embedder``; then the engine, its indexes and its graph use it."""
        return self.writer.reembed(embedder, lambda rows: governance.new_vectors(self.deps, embedder, rows),
                                   self._new_search)

    def _new_search(self, embedder: Embedder) -> CandidateSearch:
        """The search over re-embedded vectors: new in-process indexes (counter carried over), or the database."""
        if isinstance(self._search, EmbeddedSearch):
            old = self._search.indexes
            self._search = EmbeddedSearch(self._search.store, IndexSet(
                self._search.store, embedder.dim, old.folder, sparse_context=old.sparse_context))
        return self._search

    # -- reads ------------------------------------------------------------------
    def get(self, request: UnitRequest) -> MAU:
        return lifecycle.scoped_unit(self.deps, self.state, request.unit_id, request.scope)

    def units(self, request: ListRequest) -> list[MAU]:
        """A page of the scope's units in event-time order (see :mod:`omnimem.engine.listing`)."""
        wanted = listing.make_filter(self.deps, **request.filters())
        return listing.page(self.deps, self.state, request.scope, wanted, request.limit, request.offset,
                            self.writer.exclusive)

    def count_units(self, request: ListRequest) -> int:
        wanted = listing.make_filter(self.deps, **request.filters())
        return len(listing.matching(self.deps, self.state, request.scope, wanted, self.writer.exclusive))

    def raw(self, request: UnitRequest) -> tuple[bytes, str]:
        """A unit's raw content (cold tier) and its content type; NotFoundError when it has none."""
        unit = lifecycle.scoped_unit(self.deps, self.state, request.unit_id, request.scope)
        if unit.raw_ref is None:
            raise NotFoundError(f"unit {unit.id} has no raw content")
        with self.state.reading():
            data = self.deps.store.read_raw(unit.raw_ref)
        fallback = "text/plain; charset=utf-8" if unit.modality is Modality.TEXT else "application/octet-stream"
        return data, str(unit.metadata.get("mime") or fallback)

    def full_text(self, request: UnitRequest) -> str | None:
        """A unit's whole text (a long text's cold-tier copy; its summary otherwise); None for media."""
        return self.retriever.full_text(lifecycle.scoped_unit(self.deps, self.state, request.unit_id, request.scope))

    def search(self, request: SearchRequest) -> Context:
        """Hybrid retrieval packed into a pyramid context; ``None`` arguments take this engine's settings."""
        r, settings = request, self.deps.settings
        text = validate.query(r.query, settings.max_query_chars)
        top_k = settings.top_k if r.top_k is None else r.top_k
        theta = settings.theta if r.theta is None else r.theta
        budget = settings.budget if r.budget is None else r.budget
        as_of = parse_time(r.as_of, default_tz=self.tz) if r.as_of is not None else None
        now = parse_time(r.now, default_tz=self.tz) if r.now is not None else None
        planner = settings.planner if r.planner is None else planner_name(r.planner)
        with self.state.reading(search=True):
            return planned_search(self.retriever, planner, Query(text, top_k, theta, budget, r.scope,
                                                                 r.include_superseded, as_of, now, r.min_trust))

    def ask(self, request: AskRequest) -> Answer:
        """Search, then answer from the context with this engine's LLM (the evidence only without one)."""
        ctx = self._evidence(SearchRequest(request.question, request.scope, top_k=request.top_k, budget=request.budget,
                                           min_trust=request.min_trust))
        return answer_question(self.deps.llm, ctx.query, ctx, instructions=request.instructions)

    @otel.traced("omnimem.search", otel.describe_search_request, static=otel.memory_static)
    def _evidence(self, request: SearchRequest) -> Context:
        """The search an ask answers from, in its own span under the ask's (as a ``Memory.search`` has)."""
        return self.search(request)

    def history(self, request: UnitRequest) -> list[AuditRecord]:
        return lifecycle.history(self.deps, self.state, request.unit_id, request.scope)

    def log(self, request: LogRequest) -> list[AuditRecord]:
        with self.state.reading():
            return self.deps.store.events(scope=request.scope, limit=request.limit)

    def export(self, request: ExportRequest) -> Iterator[dict[str, Any]]:
        self.state.check_open()
        return governance.export_records(self.deps, self.state, request.scope)

    def need_graph(self) -> KnowledgeGraph:
        if self.deps.graph is None:
            raise ConfigError("the knowledge graph is off; open the store with Memory(..., graph=True)")
        return self.deps.graph

    def entities(self, request: ScopeRequest) -> list[Entity]:
        graph, scope = self.need_graph(), request.scope
        found = graph.entities(scope)
        if scope.session_id is None:
            return found
        with self.state.reading():
            in_session = set(self.deps.store.ids_in_scope(scope))
        return [e for e in found if in_session & set(graph.details(e)["units"])]

    def neighbors(self, request: EntityRequest) -> list[Neighbor]:
        return self.need_graph().neighbors(request.name, request.scope, request.hops)

    def entity_details(self, request: EntityRequest) -> list[dict[str, Any]]:
        """The entities called ``name`` (or with that alias): aliases, relations and the units behind them."""
        graph = self.need_graph()
        return [graph.details(e) for e in graph.find(request.name, _graph_scope(request.scope))]

    def export_graph(self, scope: Scope, format: str) -> str:
        """A scope's knowledge graph as ``json`` or ``graphml`` (in-process only: no route serves it)."""
        return self.need_graph().export(_graph_scope(scope), format)

    def stats(self) -> dict[str, Any]:
        p, state = self.deps, self.state
        with state.reading():
            data: dict[str, Any] = {
                "path": str(p.path) if p.path else None,
                "embedder": state.embedder.name,
                "dim": state.embedder.dim,
                **p.store.stats(),
                "index": state.search.sizes(),
                "filters": p.store.filter_stats(),
                "llm": None,
                "queue": p.store.queue_depth(),
                "writer": self.writer.stats(),
            }
        if p.llm is not None:
            usage = p.llm.usage()
            data["llm"] = {"name": p.llm.name, **{k: getattr(usage, k) for k in usage.__dataclass_fields__}}
        return data


def _make_graph(settings: Settings, store: Store, embedder: Embedder, llm: LLM | None) -> KnowledgeGraph:
    from omnimem.graph.engine import KnowledgeGraph

    choice = settings.graph_extractor
    if choice == "llm" and llm is None:
        raise ConfigError("graph_extractor='llm' needs an LLM; configure one or use 'spacy'")
    use_llm = choice == "llm" or (choice == "auto" and llm is not None)
    extractor = create_provider("graph_extractor", "llm", llm=llm) if use_llm and llm is not None \
        else create_provider("graph_extractor", "spacy")
    return KnowledgeGraph(store, embedder.embed, extractor, hops=settings.graph_hops, beta=settings.graph_beta)


def _make_clip(settings: Settings) -> ClipSearch:
    from omnimem.index.clip import ClipSearch

    return ClipSearch(create_provider("clip", "clip", path=str(settings.clip_model)))


def _selection(request: ForgetRequest) -> dict[str, Any]:
    """A forget request as :func:`omnimem.engine.lifecycle.plan_forget` reads it."""
    return {"since": request.since, "until": request.until,
            "unit_ids": None if request.unit_ids is None else list(request.unit_ids),
            "everything": request.everything, "all_users": request.all_users, "reason": request.reason}


def _graph_scope(scope: Scope) -> Scope:
    """Entities belong to a user and an agent, not to a session."""
    return Scope(scope.user_id, scope.agent_id, None)


def _resolve_embedder(store: Store, path: Path | str | None, wanted: str | Embedder | None, *,
                      queries_only: bool = False, language: str = "en", fast_queries: bool = True) -> Embedder:
    """The embedder the store was built with, or the one asked for if it matches (or the store is new).

    A store open read-only (``queries_only``) also takes a model measured to embed queries like its own
    (:mod:`omnimem.embed.query`): nothing it embeds is ever stored. With ``fast_queries`` the store's model
    embeds its queries with such a model where one is installed (never what is stored).
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
        meta = store.init_meta(instance.name, instance.dim, roles=role_scheme(instance), language=language)
    if meta.dim != instance.dim:
        raise EmbedderMismatchError(f"store vectors have {meta.dim} dimensions, {instance.name} gives {instance.dim}")
    check_roles(meta.roles, instance, path)
    check_store_language(meta.language, language, path)
    return with_fast_queries(instance, fast_queries and not queries_only)


def _mismatch(path: Path | str | None, stored: str, wanted: str) -> str:
    option = "--url" if isinstance(path, str) else "--store"
    return (
        f"store {path} was built with embedder {stored!r}, not {wanted!r}; open it without choosing an "
        f"embedder, or switch it with: omnimem reembed --embedder {wanted} {option} {path}"
    )
