"""The engine contract: one method per facade verb, each taking one typed request, and the limits callers share.

:class:`~omnimem.memory.Memory` builds a request from its keyword arguments,
checks it once (types, ranges, ids, scope: everything that does not depend on
an engine's settings) and hands it to its engine. Two engines implement
:class:`Engine`: :class:`~omnimem.engine.local.LocalEngine` (SQLite or
PostgreSQL in this process) and :class:`~omnimem.remote.engine.RemoteEngine`
(an omnimem server over HTTP). What depends on the engine's own settings stays
with the engine: defaults of ``top_k``/``theta``/``budget``, the query length
limit, the time zone naive times are read in, media limits; so times travel as
given (a string or a datetime) and a remote engine's server resolves them as
its local twin would.

Every request is a frozen dataclass whose fields are already checked;
``progress`` callbacks are the only in-process fields (a remote engine calls
them once its answer arrives). The verbs the table marks ``local_only``
(``export_graph``, ``reembed``) and the composed fan-outs (``search_many``,
``ask_many``) are not engine methods: the first exist only on
:class:`~omnimem.memory.LocalMemory`, the others are built on ``search`` and
``ask`` in the facade. ``tests/architecture/test_surfaces.py`` checks that both
engines match this Protocol parameter for parameter.

It stands below the engines and the shells alike (:mod:`omnimem.contract.caller`
holds the context a shell sets around its calls), so a shell needs nothing from
:mod:`omnimem.engine`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from omnimem.mau import MAU, Scope
from omnimem.results import AddResult, Answer, AuditRecord, Context, Entity, MediaResult, Neighbor

MAX_TEXT_CHARS = 10_000_000  # one unit's text; export writes it and import reads it back
MAX_IMAGE_BYTES = 50 * 1024 * 1024  # one image
MAX_PUT = 256  # items of one ``put``: one transaction of the store (the writer's batch)
ANONYMOUS_UPLOAD = "upload"  # the file name the remote client sends for raw bytes: stored without a name

Progress = Callable[[int], None]
When = str | datetime | None  # a time as the caller gave it; the engine reads it in its own zone
Media = Path | bytes  # a checked file path, or the bytes themselves


@dataclass(frozen=True, slots=True)
class AddRequest:
    text: str
    scope: Scope
    time: When = None
    speaker: str | None = None
    source_id: str | None = None
    metadata: dict[str, Any] | None = None
    supersedes: tuple[str, ...] | None = None
    allow_forgotten: bool = False
    source: str | None = None  # None: "user"
    trust: str | None = None  # None: the source kind's default, capped by the caller's key


@dataclass(frozen=True, slots=True)
class PutItem:
    """One unit of a ``put``, stored as given (no novelty filter); ``unit_id`` None: a fresh id."""

    text: str
    time: When = None
    speaker: str | None = None
    source_id: str | None = None
    metadata: dict[str, Any] | None = None
    supersedes: tuple[str, ...] = ()
    unit_id: str | None = None
    source: str | None = None  # None: "user"
    trust: str | None = None  # None: the source kind's default, capped by the caller's key


@dataclass(frozen=True, slots=True)
class PutRequest:
    """Units of one scope written in one transaction (a framework store's write)."""

    items: tuple[PutItem, ...]
    scope: Scope
    allow_forgotten: bool = False


@dataclass(frozen=True, slots=True)
class UpdateRequest:
    unit_id: str
    scope: Scope
    text: str | None = None
    time: When = None
    speaker: str | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class DialogueRequest:
    turns: tuple[Mapping[str, Any], ...]
    scope: Scope
    restate: bool = False
    allow_forgotten: bool = False
    progress: Progress | None = None


@dataclass(frozen=True, slots=True)
class ImageRequest:
    image: Media
    scope: Scope
    caption: str | None = None  # None: no caption (a blank one was given as None)
    time: When = None
    source_id: str | None = None


@dataclass(frozen=True, slots=True)
class AudioRequest:
    audio: Media
    scope: Scope
    time: When = None
    progress: Progress | None = None


@dataclass(frozen=True, slots=True)
class VideoRequest:
    video: Media
    scope: Scope
    time: When = None
    fps: float = 1.0
    max_frames: int = 200


@dataclass(frozen=True, slots=True)
class UnitRequest:
    """One unit by id, seen from a scope (``get``, ``raw``, ``history``)."""

    unit_id: str
    scope: Scope


@dataclass(frozen=True, slots=True)
class TrustRequest:
    """An admin's change of one unit's trust (``set_trust``)."""

    unit_id: str
    scope: Scope
    trust: str
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class DeleteRequest:
    unit_id: str
    scope: Scope
    reason: str | None = None
    chain: bool = False


@dataclass(frozen=True, slots=True)
class ForgetRequest:
    """What ``forget`` removes and ``preview_forget`` lists (``everything`` is the facade's ``all``)."""

    scope: Scope
    since: When = None
    until: When = None
    unit_ids: tuple[str, ...] | None = None
    everything: bool = False
    all_users: bool = False
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class ListRequest:
    """A listing's filters and page (``count_units`` ignores the page)."""

    scope: Scope
    modality: str | None = None
    speaker: str | None = None
    since: When = None
    until: When = None
    include_superseded: bool = False
    limit: int = 50
    offset: int = 0

    def filters(self) -> dict[str, Any]:
        return {"modality": self.modality, "speaker": self.speaker, "since": self.since, "until": self.until,
                "include_superseded": self.include_superseded}


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """A search; ``None`` takes the engine's setting (``top_k``, ``theta``, ``budget``)."""

    query: str
    scope: Scope
    top_k: int | None = None
    theta: float | None = None
    budget: int | None = None
    include_superseded: bool = False
    as_of: When = None
    now: When = None  # what relative times in the query are read against (None: the wall clock)
    planner: str | None = None  # None: the engine's planner setting; "none", "offline" or "llm"
    min_trust: str | None = None  # only units at least this trusted (None: every unit)


@dataclass(frozen=True, slots=True)
class AskRequest:
    question: str
    scope: Scope
    top_k: int | None = None
    budget: int | None = None
    instructions: str | None = None
    min_trust: str | None = None  # answer only from units at least this trusted (None: every unit)


@dataclass(frozen=True, slots=True)
class LogRequest:
    scope: Scope
    limit: int | None = None


@dataclass(frozen=True, slots=True)
class ExportRequest:
    scope: Scope
    everything: bool = False  # an empty scope needs it (checked by the facade)


@dataclass(frozen=True, slots=True)
class ImportRequest:
    records: Iterable[Mapping[str, Any]]
    allow_forgotten: bool = False
    progress: Progress | None = None
    trust: str | None = None  # what the imported units are trusted as (None: untrusted)


@dataclass(frozen=True, slots=True)
class ScopeRequest:
    """A whole scope (``entities``)."""

    scope: Scope


@dataclass(frozen=True, slots=True)
class EntityRequest:
    """The entities called ``name`` (``entity_details``) or around it (``neighbors``, within ``hops``)."""

    name: str
    scope: Scope
    hops: int = 2


@runtime_checkable
class Engine(Protocol):
    """What :class:`~omnimem.memory.Memory` delegates to; every argument was checked by the facade."""

    @property
    def read_only(self) -> bool: ...

    def close(self) -> None: ...

    def flush(self, timeout: float | None) -> bool: ...

    def add(self, request: AddRequest) -> AddResult: ...

    def put(self, request: PutRequest) -> list[AddResult]: ...

    def update(self, request: UpdateRequest) -> AddResult: ...

    def add_dialogue(self, request: DialogueRequest) -> list[AddResult]: ...

    def add_image(self, request: ImageRequest) -> AddResult: ...

    def add_audio(self, request: AudioRequest) -> MediaResult: ...

    def add_video(self, request: VideoRequest) -> MediaResult: ...

    def delete(self, request: DeleteRequest) -> None: ...

    def set_trust(self, request: TrustRequest) -> MAU: ...

    def forget(self, request: ForgetRequest) -> int: ...

    def preview_forget(self, request: ForgetRequest) -> list[MAU]: ...

    def units(self, request: ListRequest) -> list[MAU]: ...

    def count_units(self, request: ListRequest) -> int: ...

    def get(self, request: UnitRequest) -> MAU: ...

    def raw(self, request: UnitRequest) -> tuple[bytes, str]: ...

    def full_text(self, request: UnitRequest) -> str | None: ...

    def search(self, request: SearchRequest) -> Context: ...

    def ask(self, request: AskRequest) -> Answer: ...

    def history(self, request: UnitRequest) -> list[AuditRecord]: ...

    def log(self, request: LogRequest) -> list[AuditRecord]: ...

    def export(self, request: ExportRequest) -> Iterator[dict[str, Any]]: ...

    def import_records(self, request: ImportRequest) -> dict[str, int]: ...

    def entities(self, request: ScopeRequest) -> list[Entity]: ...

    def entity_details(self, request: EntityRequest) -> list[dict[str, Any]]: ...

    def neighbors(self, request: EntityRequest) -> list[Neighbor]: ...

    def stats(self) -> dict[str, Any]: ...
