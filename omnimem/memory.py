"""``Memory``: the one facade users touch. It checks each call once and delegates to an engine.

Every verb builds one typed request (:mod:`omnimem.contract`) from its keyword arguments, checks it (types,
ranges, ids, scope), and hands it to the engine, so the same bad argument raises the same error before any
work, in this process or before the network. ``Memory()``, ``Memory(path=...)`` and
``Memory(url="postgresql://...")`` are a :class:`LocalMemory` over :class:`~omnimem.engine.local.LocalEngine`,
which also offers what exists only in this process (the store, the indexes, the models, ``reembed``,
``export_graph``). ``Memory(url="http(s)://...", api_key=...)`` is a plain :class:`Memory` over the engine the
remote wing registers for those URLs (:class:`~omnimem.remote.engine.RemoteEngine`); it simply has no
in-process attributes (``hasattr(m, "store")`` is False) and its ``settings`` is ``None``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, ClassVar, Self, TypeVar, overload

from omnimem import otel
from omnimem.contract import validate
from omnimem.config import Settings
from omnimem.embed import Embedder, create_embedder
from omnimem.contract import (
    AddRequest, AskRequest, AudioRequest, DeleteRequest, DialogueRequest, Engine, EntityRequest, ExportRequest,
    ImageRequest, ImportRequest, ListRequest, LogRequest, PutRequest, ScopeRequest, SearchRequest, UnitRequest,
    TrustRequest, UpdateRequest, VideoRequest,
)
from omnimem.engine.ingest import mem0
from omnimem.engine.ingest.pipeline import Progress
from omnimem.contract import checks
from omnimem.contract.checks import clean_id, clean_text, make_scope
from omnimem.engine.ingest.redact import redaction
from omnimem.engine.lifecycle import check_id
from omnimem.engine.listing import MAX_PAGE
from omnimem.errors import ConfigError, InvalidInputError, missing_dependency
from omnimem.llm import LLM, resolve_llm
from omnimem.mau import MAU
from omnimem.results import AddResult, Answer, AuditRecord, Context, Entity, MediaResult, Neighbor
from omnimem.store.base import Store
from omnimem.tokens import TokenCounter, resolve_counter

if TYPE_CHECKING:  # the graph needs the [graph] extra (spaCy, rapidfuzz): imported when switched on
    from omnimem.engine.enrich.worker import Enricher
    from omnimem.engine.local import LocalEngine  # imported by LocalMemory: a remote Memory loads no FAISS
    from omnimem.graph.engine import KnowledgeGraph
    from omnimem.index.manager import IndexSet
    from omnimem.index.clip import ClipSearch

T = TypeVar("T")
EngineFactory = Callable[..., Engine]  # (url, *, api_key, timeout, retries, backoff) -> an engine


class Memory:
    """Lifelong memory for an agent.

    ``Memory()`` lives in memory; ``Memory(path="./mem")`` is an embedded store
    on disk (SQLite hot tier, content-addressed cold tier, FAISS + BM25
    indexes); ``Memory(url="postgresql://...")`` runs on PostgreSQL + pgvector
    (``docs/postgres.md``); these three are a :class:`LocalMemory`.
    ``Memory(url="http://host:port", api_key=...)`` is the same facade over an
    omnimem server (``docs/http-api.md``). One argument chooses the engine; the
    facade checks arguments and delegates to it (:mod:`omnimem.engine`). Scope
    ids (``user_id``, ``agent_id``, ``session_id``) are keyword-only everywhere.
    """

    engine: Engine
    path: Path | None
    url: str | None
    actor: str
    _url_engines: ClassVar[dict[str, EngineFactory]] = {}  # URL prefix -> the engine serving it
    trace_operations: ClassVar[bool] = False  # a remote engine's server traces its operations (omnimem.otel)

    def __new__(cls, path: str | Path | None = None, *, url: str | None = None, **options: Any) -> Memory:
        """In-process engines make a :class:`LocalMemory`; a URL a registered engine serves, a plain Memory."""
        if cls is Memory and _url_engine(url) is None:
            return super().__new__(LocalMemory)
        return super().__new__(cls)

    @classmethod
    def register_url_engine(cls, prefixes: Sequence[str], engine: EngineFactory) -> None:
        """Let ``Memory(url=...)`` with one of these prefixes run on the engine ``engine(url, api_key=...,
        timeout=..., retries=..., backoff=...)`` makes (an engine class, or a function returning one);
        ``omnimem`` registers its own on import: ``http://`` and ``https://`` for the remote engine."""
        for prefix in prefixes:
            Memory._url_engines[prefix] = engine

    # Typed as what __new__ makes: Memory() and Memory(path=...) are a LocalMemory (LocalMemory(url="postgresql://...")
    # types a database one); Memory(url=...) a Memory.
    @overload
    def __init__(self: LocalMemory, path: str | Path | None = None, *,  # type: ignore[misc]
                 url: None = None, **options: Any) -> None: ...

    @overload
    def __init__(self, path: None = None, *, url: str, api_key: str | None = None, timeout: float = 60.0,
                 retries: int = 3, backoff: float = 0.2, **unsupported: Any) -> None: ...

    def __init__(self, path: str | Path | None = None, *, url: str | None = None, api_key: str | None = None,
                 timeout: float = 60.0, retries: int = 3, backoff: float = 0.2, **unsupported: Any) -> None:
        """A Memory over a registered URL engine (a server); the in-process options do not apply there."""
        factory = _url_engine(url)
        if factory is None or url is None:
            raise ConfigError(f"no engine serves {str(url)[:40]!r}; use http(s)://host:port, Memory() or "
                              "Memory(path=...)")
        if path is not None:
            raise InvalidInputError("pass either path= (an embedded store) or url= (a server), not both")
        given = sorted(k for k, v in unsupported.items() if v is not None)
        if given:
            raise ConfigError(f"{', '.join(given)} cannot be set on a remote Memory; the server's settings apply")
        self.url, self.path, self.actor = url.rstrip("/"), None, "remote"
        self.engine = factory(self.url, api_key=api_key, timeout=timeout, retries=retries, backoff=backoff)

    # -- lifecycle ------------------------------------------------------------
    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Persist the indexes and release the store (a remote one: close the connections). Safe to call twice."""
        self.engine.close()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until queued enrichment has landed (no job pending or running); False if ``timeout``
        seconds passed first. Failed jobs do not count (``stats()["queue"]``, ``omnimem queue``).

        Adds return before any model runs (setting ``enrich="async"``, the default): restatement, LLM
        summaries, captions, graph rows and supersession land later, each enriched version superseding
        the unit it enriches. With ``enrich="off"`` an ``omnimem worker`` process must drain the queue.
        """
        if timeout is not None:
            timeout = validate.real(timeout, "timeout", low=0.0, high=1e9)
        return self.engine.flush(timeout)

    @property
    def read_only(self) -> bool:
        """Whether this store was opened read-only (searches and reads work, writes raise); remotely, the server's."""
        return self.engine.read_only

    @property
    def settings(self) -> Settings | None:
        """The settings this process applies; ``None`` on a remote Memory, where the server's settings apply."""
        return None

    # -- writes -----------------------------------------------------------------
    @otel.traced("omnimem.add", otel.describe_add, static=otel.memory_static)
    def add(self, text: str | bytes, *, time: str | datetime | None = None, speaker: str | None = None,
            source_id: str | None = None, user_id: str | None = None, agent_id: str | None = None,
            session_id: str | None = None, metadata: Mapping[str, Any] | None = None,
            supersedes: Sequence[str] | None = None, allow_forgotten: bool = False, source: str | None = None,
            trust: str | None = None) -> AddResult:
        """Remember one piece of text; returns its id or why it was skipped.

        ``supersedes`` names units this one replaces: they stay for history
        but are withheld from search; only units of the same user and agent
        can be replaced. Content that was deleted is not stored again unless
        ``allow_forgotten`` (see "What remains after a forget" in the README). ``source`` (default ``"user"``)
        and ``trust`` (up to what the caller's key allows): docs/security.md.
        """
        pii = redaction(self.settings)  # redact_pii: the original text goes no further than this
        return self.engine.add(AddRequest(
            pii.text(clean_text(text)), make_scope(user_id, agent_id, session_id), time,
            None if speaker is None else clean_text(speaker, what="speaker"), clean_id(source_id, "source_id"),
            None if metadata is None else pii.metadata(validate.metadata(metadata)),
            None if supersedes is None else tuple(validate.unit_ids(supersedes, "supersedes")),
            allow_forgotten, checks.check_source(source), None if trust is None else checks.check_trust(trust),
        ))

    def put(self, items: Sequence[Mapping[str, Any]], *, user_id: str | None = None, agent_id: str | None = None,
            session_id: str | None = None, allow_forgotten: bool = False) -> list[AddResult]:
        """Store units exactly as given, in one transaction: a framework store's write (LangGraph, CrewAI, the
        OpenAI Agents SDK's session); results in order.

        Each item is a mapping with ``text`` and optionally ``time``, ``speaker``, ``source_id``, ``metadata``,
        ``supersedes`` (units of the scope's user and agent it replaces), ``id`` (the caller's unit id: 32 hex
        digits), ``source`` and ``trust`` (as :meth:`add`). No novelty filter: only the same input again (text,
        time, speaker, scope, source_id) is skipped. An ``id`` already stored fails the whole call (StoreError)
        and stores none of it. At most ``MAX_PUT`` (256) items a call.
        """
        pii = redaction(self.settings)
        checked = tuple(replace(i, text=pii.text(i.text), metadata=pii.metadata(i.metadata))
                        for i in checks.put_items(items))
        return self.engine.put(PutRequest(checked, make_scope(user_id, agent_id, session_id),
                                          validate.flag(allow_forgotten, "allow_forgotten")))

    def update(self, unit_id: str, *, text: str | None = None, time: str | datetime | None = None,
               speaker: str | None = None, reason: str | None = None, user_id: str | None = None,
               agent_id: str | None = None, session_id: str | None = None) -> AddResult:
        """Replace a unit with a corrected version; the old one is kept for history.

        Fields not given are taken from the old unit. The new unit supersedes
        the old (search returns the new one; ``include_superseded=True`` both).
        A unit outside the given scope is not found.
        """
        return self.engine.update(UpdateRequest(
            check_id(unit_id), make_scope(user_id, agent_id, session_id),
            None if text is None else redaction(self.settings).text(clean_text(text)), time,
            None if speaker is None else clean_text(speaker, what="speaker"), validate.note(reason),
        ))

    @otel.traced("omnimem.add_dialogue", otel.describe_add_dialogue, static=otel.memory_static)
    def add_dialogue(self, turns: Iterable[Mapping[str, Any]], *, user_id: str | None = None,
                     agent_id: str | None = None, session_id: str | None = None, restate: bool = False,
                     allow_forgotten: bool = False, progress: Progress | None = None) -> list[AddResult]:
        """Remember a list of turns (``text``, ``speaker``, ``time``, optional ``id``, ``source``, ``trust``, ``role``).

        Every turn is validated before any is stored. Turns are written in
        batches, each atomic; re-running after a crash skips what was stored.
        With ``restate=True`` the turns are rewritten window by window into
        self-contained units first (see :meth:`_restate`).
        """
        return self.engine.add_dialogue(DialogueRequest(
            redaction(self.settings).turns(checks.turns(turns)), make_scope(user_id, agent_id, session_id), restate,
            allow_forgotten, progress,
        ))

    # -- media -------------------------------------------------------------
    def add_image(self, image: str | Path | bytes, caption: str | None = None, *, time: str | datetime | None = None,
                  source_id: str | None = None, user_id: str | None = None, agent_id: str | None = None,
                  session_id: str | None = None) -> AddResult:
        """Remember an image; its bytes go to the cold tier, its caption (or what is known) is searched.

        Without a caption the summary comes from the configured vision LLM when
        ``vision_captions`` is on, else offline from the file name, EXIF date and
        place, and size. A near-duplicate (perceptual hash) of a recent image of
        the same scope is skipped. With ``clip_model`` set, the image also gets a
        CLIP vector for text-to-image search.
        """
        scope = make_scope(user_id, agent_id, session_id)
        caption = redaction(self.settings).optional(checks.clean_caption(caption))
        source = None if source_id is None else clean_text(source_id, what="source_id")
        return self.engine.add_image(ImageRequest(validate.media_file(image), scope, caption, time, source))

    def add_audio(self, audio: str | Path | bytes, *, time: str | datetime | None = None, user_id: str | None = None,
                  agent_id: str | None = None, session_id: str | None = None, progress: Progress | None = None
    ) -> MediaResult:
        """Remember what was said in a recording: one unit per speech segment, silence dropped.

        The file is streamed, and segments are stored as they are transcribed,
        so a long recording needs bounded memory and an interruption keeps what
        was stored (re-running skips it).
        """
        scope = make_scope(user_id, agent_id, session_id)
        return self.engine.add_audio(AudioRequest(validate.media_file(audio), scope, time, progress))

    def add_video(self, video: str | Path | bytes, *, time: str | datetime | None = None, fps: float = 1.0,
                  max_frames: int = 200, user_id: str | None = None, agent_id: str | None = None,
                  session_id: str | None = None) -> MediaResult:
        """Remember a video: one event unit, its scene-change frames, and its speech, all linked."""
        fps = validate.real(fps, "fps", low=0.0, high=1000.0, open_low=True)
        max_frames = validate.whole(max_frames, "max_frames", maximum=100_000)
        scope = make_scope(user_id, agent_id, session_id)
        return self.engine.add_video(VideoRequest(validate.media_file(video), scope, time, fps, max_frames))

    def delete(self, unit_id: str, *, reason: str | None = None, chain: bool = False, user_id: str | None = None,
               agent_id: str | None = None, session_id: str | None = None) -> None:
        """Remove one unit from every tier and index, with no residue (see :meth:`forget`).

        A unit it replaced becomes current again (logged against that unit);
        ``chain=True`` removes every version instead: the units it replaced and
        the ones that replaced it. A unit outside the given scope is not found.
        """
        self.engine.delete(DeleteRequest(check_id(unit_id), make_scope(user_id, agent_id, session_id),
                                         validate.note(reason), chain))

    def set_trust(self, unit_id: str, trust: str, *, reason: str | None = None, user_id: str | None = None,
                  agent_id: str | None = None, session_id: str | None = None) -> MAU:
        """An admin's change of a unit's trust (``trusted``, ``untrusted``), with an audit entry; the unit."""
        return self.engine.set_trust(TrustRequest(check_id(unit_id), make_scope(user_id, agent_id, session_id),
                                                  checks.check_trust(trust), validate.note(reason)))

    @otel.traced("omnimem.forget", otel.describe_forget, static=otel.memory_static)
    def forget(self, *, user_id: str | None = None, agent_id: str | None = None, session_id: str | None = None,
               since: str | datetime | None = None, until: str | datetime | None = None,
               unit_ids: Sequence[str] | None = None, all: bool = False, all_users: bool = False,
               reason: str | None = None) -> int:
        """Remove units with zero residue; returns how many.

        Select by scope, by event-time range (``since`` inclusive, ``until``
        exclusive), or by a list of ids; criteria combine. Nothing selected
        means nothing, never "everything": wiping the store needs ``all=True``,
        and a forget by session or time alone must name a user or agent or
        pass ``all_users=True``. Content leaves the hot tier, the cold tier
        (unless another unit shares the file), both indexes (rewritten on
        disk), the graph, and SQLite's free pages and WAL. Units the removed
        ones replaced become current again. What stays is described in the
        README ("What remains after a forget").
        """
        return self.engine.forget(
            checks.forget_request(user_id, agent_id, session_id, since, until, unit_ids, all, all_users, reason))

    def preview_forget(self, *, user_id: str | None = None, agent_id: str | None = None,
                       session_id: str | None = None, since: str | datetime | None = None,
                       until: str | datetime | None = None, unit_ids: Sequence[str] | None = None, all: bool = False,
                       all_users: bool = False, reason: str | None = None) -> list[MAU]:
        """The units :meth:`forget` with the same arguments would remove; removes nothing."""
        return self.engine.preview_forget(
            checks.forget_request(user_id, agent_id, session_id, since, until, unit_ids, all, all_users, reason))

    # -- reads ------------------------------------------------------------------
    def units(self, *, modality: str | None = None, speaker: str | None = None, since: str | datetime | None = None,
              until: str | datetime | None = None, include_superseded: bool = False, limit: int = 50, offset: int = 0,
              user_id: str | None = None, agent_id: str | None = None, session_id: str | None = None) -> list[MAU]:
        """A page of a scope's units, ordered by event time, then in the order they were stored; filters combine.

        ``since`` is inclusive and ``until`` exclusive, on event time; superseded
        units are left out unless ``include_superseded``.
        """
        return self.engine.units(ListRequest(
            make_scope(user_id, agent_id, session_id), modality, speaker, since, until,
            include_superseded, validate.whole(limit, "limit", maximum=MAX_PAGE),
            validate.whole(offset, "offset", minimum=0, maximum=1_000_000_000),
        ))

    def count_units(self, *, modality: str | None = None, speaker: str | None = None,
                    since: str | datetime | None = None, until: str | datetime | None = None,
                    include_superseded: bool = False, user_id: str | None = None, agent_id: str | None = None,
                    session_id: str | None = None) -> int:
        """How many units :meth:`units` would list with these filters (over all pages)."""
        return self.engine.count_units(ListRequest(
            make_scope(user_id, agent_id, session_id), modality, speaker, since, until,
            include_superseded,
        ))

    def get(self, unit_id: str, *, user_id: str | None = None, agent_id: str | None = None,
            session_id: str | None = None) -> MAU:
        """The unit with this id; NotFoundError if there is none in the given scope."""
        return self.engine.get(UnitRequest(check_id(unit_id), make_scope(user_id, agent_id, session_id)))

    def raw(self, unit_id: str, *, user_id: str | None = None, agent_id: str | None = None,
            session_id: str | None = None) -> tuple[bytes, str]:
        """A unit's raw content (an image, an audio clip, a long text) and its content type.

        NotFoundError if the unit is not in the given scope or has no raw content.
        """
        return self.engine.raw(UnitRequest(check_id(unit_id), make_scope(user_id, agent_id, session_id)))

    def full_text(self, unit_id: str, *, user_id: str | None = None, agent_id: str | None = None,
                  session_id: str | None = None) -> str | None:
        """A unit's level-2 text: a long text's whole text (cold tier), a transcript, or the summary."""
        return self.engine.full_text(UnitRequest(check_id(unit_id), make_scope(user_id, agent_id, session_id)))

    @otel.traced("omnimem.search", otel.describe_search, static=otel.memory_static)
    def search(self, query: str, *, top_k: int | None = None, theta: float | None = None, budget: int | None = None,
               user_id: str | None = None, agent_id: str | None = None, session_id: str | None = None,
               include_superseded: bool = False, as_of: str | datetime | None = None,
               now: str | datetime | None = None, planner: str | None = None, min_trust: str | None = None) -> Context:
        """Hybrid retrieval (dense + BM25, fused) packed into a pyramid context.

        ``top_k`` bounds the hits: the context holds at most the ``top_k`` best
        candidates of the fused ranking (those of them that fit ``budget``);
        ``None`` takes the ``top_k`` setting, whose default 0 means as many as
        the budget holds. Superseded units are withheld unless ``include_superseded``; ``as_of``
        answers from what the memory held at that time (record time). ``now`` (default: the wall
        clock) is the time relative times in the query ("last week", "two months ago", "in March")
        are read against, when the ``time_weight`` setting favours the units inside that window.
        ``planner`` (default: the ``planner`` setting, whose default is none) plans the search: ``"none"``
        one search, ``"offline"`` rewritten queries and a second hop, ``"llm"`` the configured model's
        analysis and adequacy check; what it did and cost is ``Context.plan`` (docs/planner.md); ``min_trust``.
        """
        return self.engine.search(SearchRequest(
            clean_text(query, what="query"), make_scope(user_id, agent_id, session_id), checks.top_k(top_k),
            None if theta is None else validate.real(theta, "theta", low=-1.0, high=1.0), checks.budget(budget),
            include_superseded, as_of, now, checks.planner(planner), checks.floor(min_trust),
        ))

    # -- graph API ------------------------------------------------------------
    def entities(self, *, user_id: str | None = None, agent_id: str | None = None, session_id: str | None = None
    ) -> list[Entity]:
        """Entities of a scope (``str()`` shows name, type and aliases)."""
        return self.engine.entities(ScopeRequest(make_scope(user_id, agent_id, session_id)))

    def neighbors(self, name: str, *, hops: int = 2, user_id: str | None = None, agent_id: str | None = None,
                  session_id: str | None = None) -> list[Neighbor]:
        """Entities within ``hops`` of the entity called ``name`` (or with that alias), scored."""
        hops = validate.whole(hops, "hops", minimum=0, maximum=10)
        scope = make_scope(user_id, agent_id, session_id)
        return self.engine.neighbors(EntityRequest(clean_text(name, what="name"), scope, hops))

    def entity_details(self, name: str, *, user_id: str | None = None, agent_id: str | None = None
    ) -> list[dict[str, Any]]:
        """The entities called ``name`` (or with that alias): aliases, relations and the units behind them."""
        return self.engine.entity_details(
            EntityRequest(clean_text(name, what="name"), make_scope(user_id, agent_id, None)))

    @staticmethod
    def exists(path: str | Path) -> bool:
        """Whether ``path`` holds an omnimem store (``Memory(path)`` creates one where there is none)."""
        from omnimem.store.sqlite.opening import DB_NAME

        folder = validate.store_path(path)
        if folder is None:
            raise InvalidInputError("exists() needs a store path")
        try:
            return (folder / DB_NAME).is_file()
        except OSError:  # a name too long for the file system, a path through a file: no store there
            return False

    @otel.traced("omnimem.ask", otel.describe_ask, static=otel.memory_static)
    def ask(self, question: str, *, user_id: str | None = None, agent_id: str | None = None,
            session_id: str | None = None, budget: int | None = None, top_k: int | None = None,
            instructions: str | None = None, min_trust: str | None = None) -> Answer:
        """Answer from memory with the configured LLM; offline, return the evidence only.

        ``instructions`` replaces the default system prompt (benchmarks use it); ``min_trust`` answers only from
        units at least that trusted (as :meth:`search`).
        """
        return self.engine.ask(AskRequest(
            clean_text(question, what="query"), make_scope(user_id, agent_id, session_id), checks.top_k(top_k),
            checks.budget(budget), instructions, checks.floor(min_trust),
        ))

    def history(self, unit_id: str, *, user_id: str | None = None, agent_id: str | None = None,
                session_id: str | None = None) -> list[AuditRecord]:
        """Every logged event about a unit, oldest first (also after it was deleted).

        With a scope, a unit outside it (or whose owner is no longer known) is not found.
        """
        return self.engine.history(UnitRequest(check_id(unit_id), make_scope(user_id, agent_id, session_id)))

    def log(self, *, user_id: str | None = None, agent_id: str | None = None, session_id: str | None = None,
            limit: int | None = None) -> list[AuditRecord]:
        """The audit log (append-only), optionally for one scope and only the last ``limit`` events."""
        scope = make_scope(user_id, agent_id, session_id)
        return self.engine.log(LogRequest(scope, None if limit is None else validate.whole(limit, "limit")))

    # -- data access and model changes ------------------------------------------
    def export(self, *, user_id: str | None = None, agent_id: str | None = None, session_id: str | None = None,
               all: bool = False) -> Iterator[dict[str, Any]]:
        """Everything held about a scope as JSON-ready records (see :mod:`omnimem.engine.governance`)."""
        scope, everything = make_scope(user_id, agent_id, session_id), validate.flag(all, "all")
        if scope.is_empty() and not everything:
            raise InvalidInputError("export needs a scope; pass all=True to export the whole store")
        return self.engine.export(ExportRequest(scope, everything))

    def import_records(self, records: Iterable[Mapping[str, Any]], *, allow_forgotten: bool = False,
                       progress: Progress | None = None, trust: str | None = None) -> dict[str, int]:
        """Load a dump made by :meth:`export`; every record is validated before any is stored.

        Units already present are skipped; so is content that was deleted here,
        and units recorded before their user or agent was forgotten, unless
        ``allow_forgotten``. ``progress(n)`` is called as units are dealt with (n of them at a time, the
        ``units`` count in all). Returns counts: units, stored, skipped, forgotten. Source ``"import"``, ``trust``.
        """
        return self.engine.import_records(ImportRequest(
            redaction(self.settings).records(validate.records(records)), allow_forgotten, progress,
            None if trust is None else checks.check_trust(trust)))

    def import_mem0(self, export: object, *, allow_forgotten: bool = False,
                    progress: Progress | None = None) -> dict[str, int]:
        """Load a mem0 export (what its ``get_all`` returns: a list of memories or ``{"results": [...]}``),
        keeping ids, times and scopes (``run_id`` becomes ``session_id``; see :mod:`omnimem.engine.ingest.mem0`).

        Every memory is checked before any is stored: a bad one is a MalformedDataError naming it. Then
        as :meth:`import_records` (the same counts; importing the same export twice adds nothing).
        """
        return self.import_records(mem0.to_dump(export), allow_forgotten=allow_forgotten, progress=progress)

    def search_many(self, queries: Sequence[str], *, workers: int = 4, **kwargs: Any) -> list[Context]:
        """``search`` for many queries on a thread pool; results in input order."""
        return _parallel(lambda q: self.search(q, **kwargs), queries, workers)

    def ask_many(self, questions: Sequence[str], *, workers: int = 4, **kwargs: Any) -> list[Answer]:
        """``ask`` for many questions on a thread pool; results in input order."""
        return _parallel(lambda q: self.ask(q, **kwargs), questions, workers)

    def stats(self) -> dict[str, Any]:
        """Counts and configuration, for ``omnimem stats``."""
        return self.engine.stats()

    def __repr__(self) -> str:
        return f"Memory(url={self.url!r})"


class LocalMemory(Memory):
    """A :class:`Memory` whose engine runs in this process: what ``Memory()``, ``Memory(path=...)`` and
    ``Memory(url="postgresql://...")`` make. It adds what exists only here: the engine's parts (``store``,
    ``indexes``, ``embedder``, ``llm``, ``graph``, ``clip``, ``count_tokens``), its ``settings``, and the
    in-process verbs ``reembed`` and ``export_graph``."""

    engine: LocalEngine
    trace_operations: ClassVar[bool] = True

    def __new__(cls, path: str | Path | None = None, *, url: str | None = None, **options: Any) -> LocalMemory:
        return object.__new__(cls)

    def __init__(self, path: str | Path | None = None, *, url: str | None = None,
                 embedder: str | Embedder | None = None, llm: LLM | str | bool | None = None,
                 settings: Settings | None = None, config_file: str | Path | None = None, actor: str | None = None,
                 tokenizer: TokenCounter | str | None = None, read_only: bool = False, **overrides: Any) -> None:
        if settings is not None and (overrides or config_file is not None):
            raise ConfigError("pass either settings= or individual settings, not both")
        if url is not None:  # one argument chooses the engine: in memory, a folder, or a URL
            if path is not None:
                raise InvalidInputError("pass either path= (an embedded store) or url= (a server), not both")
            if not checks.is_database_url(str(url)):
                raise ConfigError(f"no engine serves {str(url)[:40]!r}; use postgresql://user:pw@host:5432/db, "
                                  "postgresql+pgserver://./pgdata (a local one), Memory() or Memory(path=...)")
        chosen = settings or Settings.load(config_file=config_file, **overrides)
        if url is None and path is None and checks.is_database_url(chosen.url):
            url = chosen.url  # $OMNIMEM_URL or the config file's url
        self.path = validate.store_path(path)
        self.url = None if url is None else str(url)
        self.actor = actor or _local_user()
        try:
            from omnimem.engine.local import LocalEngine
        except ModuleNotFoundError as missing:  # a client-only install (pip install --no-deps omnimem)
            raise missing_dependency(missing) from None
        self.engine = LocalEngine(
            self.path, settings=chosen, embedder=embedder, count_tokens=resolve_counter(tokenizer),
            llm=None if llm is False else resolve_llm(None if llm is True else llm, config_file=config_file),
            actor=self.actor, read_only=bool(read_only), url=self.url,
        )

    # -- the engine's parts, for inspection (tools, tests, benchmarks) ---------
    @property
    def settings(self) -> Settings:
        return self.engine.deps.settings

    @property
    def store(self) -> Store:
        return self.engine.deps.store

    @property
    def indexes(self) -> IndexSet:
        return self.engine.indexes

    @property
    def embedder(self) -> Embedder:
        return self.engine.state.embedder

    @property
    def llm(self) -> LLM | None:
        return self.engine.deps.llm

    @property
    def graph(self) -> KnowledgeGraph | None:
        return self.engine.deps.graph

    @property
    def clip(self) -> ClipSearch | None:
        return self.engine.deps.clip

    @property
    def enricher(self) -> Enricher:
        """The enrichment queue's workers (``omnimem worker`` runs them; ``store`` holds the queue)."""
        return self.engine.enricher

    @property
    def count_tokens(self) -> TokenCounter:
        """Budgets are in this counter's tokens (default cl100k)."""
        return self.engine.deps.count_tokens

    # -- verbs that exist only in this process ------------------------------------
    def export_graph(self, *, format: str = "json", user_id: str | None = None, agent_id: str | None = None) -> str:
        """A scope's knowledge graph as ``json`` or ``graphml`` (entities with aliases and units, relations)."""
        if format not in ("json", "graphml"):
            raise InvalidInputError(f"unknown graph format {format!r}; use json or graphml")
        return self.engine.export_graph(make_scope(user_id, agent_id, None), format)

    def reembed(self, embedder: str | Embedder) -> int:
        """Rebuild every vector with another embedding model; the store then records that model."""
        self.engine.state.check_open(write=True)
        instance = create_embedder(embedder) if isinstance(embedder, str) else embedder
        return self.engine.reembed(instance)

    def __repr__(self) -> str:
        where = str(self.path) if self.path else str(getattr(self.store, "url", None) or ":memory:")
        return f"Memory({where!r}, embedder={self.embedder.name!r})"


def _url_engine(url: object) -> EngineFactory | None:
    if isinstance(url, str):
        for prefix, factory in Memory._url_engines.items():
            if url.startswith(prefix):
                return factory
    return None


def _local_user() -> str:
    import getpass

    try:
        return f"local:{getpass.getuser()}"
    except (KeyError, OSError):  # no passwd entry (containers)
        return "local"


def _parallel(fn: Callable[[str], T], items: Sequence[str], workers: int) -> list[T]:
    workers, items = validate.whole(workers, "workers", maximum=256), validate.texts(items)
    if workers == 1 or len(items) <= 1:
        return [fn(item) for item in items]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="omnimem") as pool:
        return list(pool.map(fn, items))
