"""``Memory``: the one facade users touch. It validates and delegates."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from omnimem import otel, validate
from omnimem.engine.retrieval.answer import Answer, answer_question
from omnimem.config import Settings
from omnimem.embed import Embedder, create_embedder
from omnimem.engine.backends import is_database_url
from omnimem.engine.local import LocalEngine
from omnimem.errors import ConfigError, InvalidInputError
from omnimem.entities import Entity
from omnimem.index.manager import IndexSet
from omnimem.llm import LLM, resolve_llm
from omnimem.engine.ingest import media
from omnimem.engine.ingest.media import MediaResult
from omnimem.engine.ingest.pipeline import Progress
from omnimem.engine.ingest.prepare import AddResult, clean_caption, clean_text, make_scope, prepare, prepare_turn
from omnimem.mau import MAU
from omnimem.engine.retrieval.pyramid import Context
from omnimem.store.audit import AuditRecord
from omnimem.store.base import Store
from omnimem.timeparse import parse_time
from omnimem.tokens import TokenCounter, resolve_counter

if TYPE_CHECKING:  # the graph needs the [graph] extra (spaCy, rapidfuzz): imported when switched on
    from omnimem.graph.engine import KnowledgeGraph, Neighbor
    from omnimem.index.clip import ClipSearch

T = TypeVar("T")


class Memory:
    """Lifelong memory for an agent.

    ``Memory()`` lives in memory; ``Memory(path="./mem")`` is an embedded store
    on disk (SQLite hot tier, content-addressed cold tier, FAISS + BM25
    indexes); ``Memory(url="postgresql://...")`` runs on PostgreSQL + pgvector
    (``docs/postgres.md``). One argument chooses the engine; the facade checks arguments and delegates
    to it (:mod:`omnimem.engine`). Scope ids (``user_id``, ``agent_id``,
    ``session_id``) are keyword-only everywhere.
    """

    _url_engines: ClassVar[dict[str, type[Memory]]] = {}  # URL prefix -> facade subclass serving it

    def __new__(cls, path: str | Path | None = None, *, url: str | None = None, **_: Any) -> Memory:
        """``url="http(s)://..."`` makes a :class:`omnimem.remote.memory.RemoteMemory` (the same facade over HTTP)."""
        if cls is Memory and isinstance(url, str):
            for prefix, engine in Memory._url_engines.items():
                if url.startswith(prefix):
                    return super().__new__(engine)
        return super().__new__(cls)

    @classmethod
    def register_url_engine(cls, prefixes: Sequence[str], engine: type[Memory]) -> None:
        """Let ``Memory(url=...)`` with one of these prefixes build ``engine`` (``omnimem`` registers its own
        on import: ``http://`` and ``https://`` for the remote client)."""
        for prefix in prefixes:
            Memory._url_engines[prefix] = engine

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        url: str | None = None,
        embedder: str | Embedder | None = None,
        llm: LLM | str | bool | None = None,
        settings: Settings | None = None,
        config_file: str | Path | None = None,
        actor: str | None = None,
        tokenizer: TokenCounter | str | None = None,
        read_only: bool = False,
        **overrides: Any,
    ) -> None:
        if settings is not None and (overrides or config_file is not None):
            raise ConfigError("pass either settings= or individual settings, not both")
        if url is not None:  # one argument chooses the engine: in memory, a folder, or a URL
            if path is not None:
                raise InvalidInputError("pass either path= (an embedded store) or url= (a server), not both")
            if not is_database_url(str(url)):
                raise ConfigError(f"no engine serves {str(url)[:40]!r}; use postgresql://user:pw@host:5432/db, "
                                  "postgresql+pgserver://./pgdata (a local one), Memory() or Memory(path=...)")
        self.settings = settings or Settings.load(config_file=config_file, **overrides)
        if url is None and path is None and is_database_url(self.settings.url):
            url = self.settings.url  # $OMNIMEM_URL or the config file's url
        self.path = validate.store_path(path)
        self.url = None if url is None else str(url)
        self.actor = actor or _local_user()
        self.engine = LocalEngine(
            self.path, settings=self.settings, embedder=embedder, count_tokens=resolve_counter(tokenizer),
            llm=None if llm is False else resolve_llm(None if llm is True else llm, config_file=config_file),
            actor=self.actor,
            read_only=bool(read_only), url=self.url,
        )

    # -- the engine's parts, for inspection (tools, tests, benchmarks) ---------
    @property
    def store(self) -> Store:
        return self.engine.parts.store

    @property
    def indexes(self) -> IndexSet:
        return self.engine.indexes

    @property
    def embedder(self) -> Embedder:
        return self.engine.parts.embedder

    @property
    def llm(self) -> LLM | None:
        return self.engine.parts.llm

    @property
    def graph(self) -> KnowledgeGraph | None:
        return self.engine.parts.graph

    @property
    def clip(self) -> ClipSearch | None:
        return self.engine.parts.clip

    @property
    def count_tokens(self) -> TokenCounter:
        """Budgets are in this counter's tokens (default cl100k)."""
        return self.engine.parts.count_tokens

    # -- lifecycle ------------------------------------------------------------
    def __enter__(self) -> Memory:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Persist the indexes and release the store. Safe to call twice."""
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
        """Whether this store was opened read-only (searches and reads work, writes raise)."""
        return self.engine.read_only

    # -- writes -----------------------------------------------------------------
    @otel.traced("omnimem.add", otel.describe_add, static=otel.memory_static)
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
        but are withheld from search; only units of the same user and agent
        can be replaced. Content that was deleted is not stored again unless
        ``allow_forgotten`` (see "What remains after a forget" in the README).
        """
        scope = make_scope(user_id, agent_id, session_id)
        item = prepare(text, time=time, speaker=speaker, source_id=source_id, scope=scope, tz=self.engine.tz,
                       metadata=metadata)
        if supersedes is not None:
            supersedes = validate.unit_ids(supersedes, "supersedes")
        if supersedes:
            self.engine.check_supersedable(supersedes, scope)
            item = replace(item, supersedes=tuple(supersedes))
        return self.engine.ingest([item], allow_forgotten=allow_forgotten, action="supersede" if supersedes else "add")[0]

    def update(
        self,
        unit_id: str,
        *,
        text: str | None = None,
        time: str | datetime | None = None,
        speaker: str | None = None,
        reason: str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
    ) -> AddResult:
        """Replace a unit with a corrected version; the old one is kept for history.

        Fields not given are taken from the old unit. The new unit supersedes
        the old (search returns the new one; ``include_superseded=True`` both).
        A unit outside the given scope is not found.
        """
        scope = make_scope(user_id, agent_id, session_id)
        return self.engine.update(unit_id, scope, text, time, speaker, validate.note(reason))

    @otel.traced("omnimem.add_dialogue", otel.describe_add_dialogue, static=otel.memory_static)
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
        items = [prepare_turn(t, i, scope=scope, tz=self.engine.tz) for i, t in enumerate(turns)]
        if restate:
            return self.engine.restate(items, scope, progress)
        return self.engine.ingest(items, progress, allow_forgotten=allow_forgotten)

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
        caption = clean_caption(caption)
        data, name = media.read_bytes(image, limit=media.MAX_IMAGE_BYTES)
        item, phash = media.image_item(data, filename=name, caption=caption, time=time, scope=scope,
                                       tz=self.engine.tz, max_pixels=self.settings.max_media_pixels)
        if source_id is not None:
            item = replace(item, source_id=clean_text(source_id, what="source_id"))
        return self.engine.add_image(item, phash, data, captioned=bool(caption and caption.strip()))

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
        return self.engine.add_audio(audio, time, scope, progress)

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
        return self.engine.add_video(video, time, scope, fps, max_frames)

    def delete(
        self, unit_id: str, *, reason: str | None = None, chain: bool = False, user_id: str | None = None,
        agent_id: str | None = None, session_id: str | None = None,
    ) -> None:
        """Remove one unit from every tier and index, with no residue (see :meth:`forget`).

        A unit it replaced becomes current again (logged against that unit);
        ``chain=True`` removes every version instead: the units it replaced and
        the ones that replaced it. A unit outside the given scope is not found.
        """
        self.engine.delete(unit_id, make_scope(user_id, agent_id, session_id), validate.note(reason), chain)

    @otel.traced("omnimem.forget", otel.describe_forget, static=otel.memory_static)
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
        all_users: bool = False,
        reason: str | None = None,
    ) -> int:
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
            make_scope(user_id, agent_id, session_id), since=since, until=until,
            unit_ids=None if unit_ids is None else validate.unit_ids(unit_ids), everything=validate.flag(all, "all"),
            all_users=all_users, reason=validate.note(reason),
        )

    def preview_forget(
        self, *, user_id: str | None = None, agent_id: str | None = None, session_id: str | None = None,
        since: str | datetime | None = None, until: str | datetime | None = None,
        unit_ids: Sequence[str] | None = None, all: bool = False, all_users: bool = False,
        reason: str | None = None,
    ) -> list[MAU]:
        """The units :meth:`forget` with the same arguments would remove; removes nothing."""
        return self.engine.preview_forget(
            make_scope(user_id, agent_id, session_id), since=since, until=until,
            unit_ids=None if unit_ids is None else validate.unit_ids(unit_ids), everything=validate.flag(all, "all"),
            all_users=all_users, reason=validate.note(reason),
        )

    # -- reads ------------------------------------------------------------------
    def units(
        self, *, modality: str | None = None, speaker: str | None = None, since: str | datetime | None = None,
        until: str | datetime | None = None, include_superseded: bool = False, limit: int = 50, offset: int = 0,
        user_id: str | None = None, agent_id: str | None = None, session_id: str | None = None,
    ) -> list[MAU]:
        """A page of a scope's units, ordered by event time, then in the order they were stored; filters combine.

        ``since`` is inclusive and ``until`` exclusive, on event time; superseded
        units are left out unless ``include_superseded``.
        """
        filters = {"modality": modality, "speaker": speaker, "since": since, "until": until,
                   "include_superseded": include_superseded}
        return self.engine.units(make_scope(user_id, agent_id, session_id), filters, limit, offset)

    def count_units(
        self, *, modality: str | None = None, speaker: str | None = None, since: str | datetime | None = None,
        until: str | datetime | None = None, include_superseded: bool = False, user_id: str | None = None,
        agent_id: str | None = None, session_id: str | None = None,
    ) -> int:
        """How many units :meth:`units` would list with these filters (over all pages)."""
        filters = {"modality": modality, "speaker": speaker, "since": since, "until": until,
                   "include_superseded": include_superseded}
        return self.engine.count_units(make_scope(user_id, agent_id, session_id), filters)

    def get(
        self, unit_id: str, *, user_id: str | None = None, agent_id: str | None = None, session_id: str | None = None
    ) -> MAU:
        """The unit with this id; NotFoundError if there is none in the given scope."""
        return self.engine.get(unit_id, make_scope(user_id, agent_id, session_id))

    def raw(
        self, unit_id: str, *, user_id: str | None = None, agent_id: str | None = None, session_id: str | None = None
    ) -> tuple[bytes, str]:
        """A unit's raw content (an image, an audio clip, a long text) and its content type.

        NotFoundError if the unit is not in the given scope or has no raw content.
        """
        return self.engine.raw(unit_id, make_scope(user_id, agent_id, session_id))

    @otel.traced("omnimem.search", otel.describe_search, static=otel.memory_static)
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
        now: str | datetime | None = None,
    ) -> Context:
        """Hybrid retrieval (dense + BM25, fused) packed into a pyramid context.

        ``top_k`` bounds the hits: the context holds at most the ``top_k`` best
        candidates of the fused ranking (those of them that fit ``budget``);
        ``None`` takes the ``top_k`` setting, whose default 0 means as many as
        the budget holds. Superseded units are withheld unless ``include_superseded``; ``as_of``
        answers from what the memory held at that time (record time). ``now`` (default: the wall
        clock) is the time relative times in the query ("last week", "two months ago", "in March")
        are read against, when the ``time_weight`` setting favours the units inside that window.
        """
        text = clean_text(validate.query(query, self.settings.max_query_chars), what="query")
        k = self.settings.top_k if top_k is None else validate.whole(top_k, "top_k", maximum=10_000)
        th = self.settings.theta if theta is None else validate.real(theta, "theta", low=-1.0, high=1.0)
        limit = self.settings.budget if budget is None else validate.whole(budget, "budget")
        scope = make_scope(user_id, agent_id, session_id)
        when = parse_time(as_of, default_tz=self.engine.tz) if as_of is not None else None
        at = parse_time(now, default_tz=self.engine.tz) if now is not None else None
        return self.engine.search(text, k, th, limit, scope, include_superseded, when, at)

    # -- graph API ------------------------------------------------------------
    def entities(
        self, *, user_id: str | None = None, agent_id: str | None = None, session_id: str | None = None
    ) -> list[Entity]:
        """Entities of a scope (``str()`` shows name, type and aliases)."""
        return self.engine.entities(make_scope(user_id, agent_id, session_id))

    def neighbors(
        self, name: str, *, hops: int = 2, user_id: str | None = None, agent_id: str | None = None,
        session_id: str | None = None,
    ) -> list[Neighbor]:
        """Entities within ``hops`` of the entity called ``name`` (or with that alias), scored."""
        hops = validate.whole(hops, "hops", minimum=0, maximum=10)
        scope = make_scope(user_id, agent_id, session_id)
        return self.engine.neighbors(clean_text(name, what="name"), scope, hops)

    def entity_details(
        self, name: str, *, user_id: str | None = None, agent_id: str | None = None
    ) -> list[dict[str, Any]]:
        """The entities called ``name`` (or with that alias): aliases, relations and the units behind them."""
        graph, scope = self.engine.need_graph(), make_scope(user_id, agent_id, None)
        return [graph.details(e) for e in graph.find(clean_text(name, what="name"), scope)]

    def export_graph(self, *, format: str = "json", user_id: str | None = None, agent_id: str | None = None) -> str:
        """A scope's knowledge graph as ``json`` or ``graphml`` (entities with aliases and units, relations)."""
        if format not in ("json", "graphml"):
            raise InvalidInputError(f"unknown graph format {format!r}; use json or graphml")
        return self.engine.need_graph().export(make_scope(user_id, agent_id, None), format)

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

    def history(
        self, unit_id: str, *, user_id: str | None = None, agent_id: str | None = None, session_id: str | None = None
    ) -> list[AuditRecord]:
        """Every logged event about a unit, oldest first (also after it was deleted).

        With a scope, a unit outside it (or whose owner is no longer known) is not found.
        """
        return self.engine.history(unit_id, make_scope(user_id, agent_id, session_id))

    def log(
        self, *, user_id: str | None = None, agent_id: str | None = None, session_id: str | None = None,
        limit: int | None = None,
    ) -> list[AuditRecord]:
        """The audit log (append-only), optionally for one scope and only the last ``limit`` events."""
        scope = make_scope(user_id, agent_id, session_id)
        return self.engine.log(scope, None if limit is None else validate.whole(limit, "limit"))

    # -- data access and model changes ------------------------------------------
    def export(
        self, *, user_id: str | None = None, agent_id: str | None = None, session_id: str | None = None,
        all: bool = False,
    ) -> Iterator[dict[str, Any]]:
        """Everything held about a scope as JSON-ready records (see :mod:`omnimem.engine.governance`)."""
        scope = make_scope(user_id, agent_id, session_id)
        if scope.is_empty() and not validate.flag(all, "all"):
            raise InvalidInputError("export needs a scope; pass all=True to export the whole store")
        return self.engine.export(scope)

    def import_records(self, records: Iterable[Mapping[str, Any]], *, allow_forgotten: bool = False,
                       progress: Progress | None = None) -> dict[str, int]:
        """Load a dump made by :meth:`export`; every record is validated before any is stored.

        Units already present are skipped; so is content that was deleted here,
        and units recorded before their user or agent was forgotten, unless
        ``allow_forgotten``. ``progress(n)`` is called as units are dealt with (n of them at a time, the
        ``units`` count in all). Returns counts: units, stored, skipped, forgotten.
        """
        return self.engine.import_records(validate.records(records), allow_forgotten, progress)

    def reembed(self, embedder: str | Embedder) -> int:
        """Rebuild every vector with another embedding model; the store then records that model."""
        self.engine.parts.check_open(write=True)
        instance = create_embedder(embedder) if isinstance(embedder, str) else embedder
        return self.engine.reembed(instance)

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
        where = str(self.path) if self.path else str(getattr(self.store, "url", None) or ":memory:")
        return f"Memory({where!r}, embedder={self.embedder.name!r})"


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
