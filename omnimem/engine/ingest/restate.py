"""Write-time restatement: dialogue windows become self-contained memory units.

A turn like "I painted a sunset last weekend" means little once it is cut
from its conversation. :class:`Restater` rewrites dialogue, window by window,
into statements that stand alone: pronouns resolved to names, relative times
turned into absolute dates, with keywords, persons, entities, location and
topic, and the ids of the turns each statement came from (its provenance).

Windows and overlap
    Turns are cut into windows of ``window`` turns; each window after the
    first starts with the last ``overlap`` turns of the one before, so a
    question and its answer are never separated. 100 turns with window 40 and
    overlap 2 give windows starting at turns 0, 38 and 76. The overlap turns
    were already restated by the previous window, so **a unit whose source
    ids all lie in its window's overlap turns is dropped**; a unit that draws
    on an overlap turn *and* a new turn is kept.

Without an LLM
    Each turn becomes one unit with its speaker and absolute date made
    explicit and nothing else changed: "On 8 May 2023, Melanie said: I
    painted a sunset last weekend." Nothing is resolved that a model would
    have to guess.

Resumable ingest
    :meth:`Restater.restate` yields one :class:`WindowResult` per window, in
    window order, so the caller can store each window atomically before the
    next. Windows run in parallel on a bounded thread pool, but an LLM error
    in one window is raised only after every window before it was yielded.
    A unit's text is a deterministic function of the model's reply, and
    :attr:`RestatedUnit.key` of its source ids and text, so a re-run that
    gets the same replies finds what is already stored by content hash.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections import deque
from collections.abc import Generator, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone, tzinfo
from typing import Any

from pydantic import BaseModel, Field, field_validator, model_validator

from omnimem.errors import ConfigError, InvalidInputError, InvalidTimeError
from omnimem.llm.base import LLM, Message
from omnimem.timeparse import parse_time

log = logging.getLogger(__name__)


# --------------------------------------------------------------------------- values


@dataclass(frozen=True, slots=True)
class Turn:
    """One dialogue turn to restate; ``id`` is its provenance and must be unique."""

    id: str
    speaker: str | None
    text: str
    time: datetime | None = None


@dataclass(frozen=True, slots=True)
class RestatedUnit:
    """A self-contained statement and the turns it came from.

    ``time`` is when the event happened if the model gave a date, otherwise
    when its first source turn was said (the session time if turns have
    none). ``speaker`` is set when all source turns have the same speaker.
    """

    text: str
    source_ids: tuple[str, ...]
    time: datetime | None = None
    speaker: str | None = None
    keywords: tuple[str, ...] = ()
    persons: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    location: str | None = None
    topic: str | None = None

    @property
    def key(self) -> str:
        """Deterministic identity: a SHA-256 of the source ids and the text."""
        material = "\x1f".join(self.source_ids) + "\x1e" + self.text
        return hashlib.sha256(material.encode("utf-8")).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready view."""
        return {
            "text": self.text,
            "source_ids": list(self.source_ids),
            "time": self.time.isoformat() if self.time else None,
            "speaker": self.speaker,
            "keywords": list(self.keywords),
            "persons": list(self.persons),
            "entities": list(self.entities),
            "location": self.location,
            "topic": self.topic,
            "key": self.key,
        }


@dataclass(frozen=True, slots=True)
class WindowResult:
    """The units of one window; ``turn_ids`` are all turns it covered, overlap included."""

    index: int
    turn_ids: tuple[str, ...]
    units: tuple[RestatedUnit, ...] = field(default=())


def window_starts(count: int, window: int, overlap: int) -> list[int]:
    """Start index of each window over ``count`` turns.

    A new window starts ``window - overlap`` turns after the previous one,
    until a window reaches the last turn: ``window_starts(100, 40, 2) ==
    [0, 38, 76]`` and ``window_starts(40, 40, 2) == [0]``.
    """
    _check_window(window, overlap)
    if count <= 0:
        return []
    starts = [0]
    while starts[-1] + window < count:
        starts.append(starts[-1] + window - overlap)
    return starts


# --------------------------------------------------------------------------- LLM reply schema


class UnitReply(BaseModel):
    """One statement as the model writes it; checked and cleaned before use."""

    text: str = Field(description="The self-contained statement.")
    source_ids: list[str] = Field(default_factory=list, description="Ids of the turns it is drawn from.")
    time: str | None = Field(default=None, description="ISO date the event happened, or null.")
    keywords: list[str] = Field(default_factory=list)
    persons: list[str] = Field(default_factory=list)
    entities: list[str] = Field(default_factory=list)
    location: str | None = None
    topic: str | None = None

    @field_validator("source_ids", "keywords", "persons", "entities", mode="before")
    @classmethod
    def _list_of_strings(cls, value: Any) -> Any:
        # Models write a lone item without its list, and numeric-looking ids ("3") as numbers.
        if value is None:
            return []
        if isinstance(value, str | int) and not isinstance(value, bool):
            value = [value]
        if isinstance(value, list):
            return [str(v) if isinstance(v, int) and not isinstance(v, bool) else v for v in value]
        return value


class RestatementReply(BaseModel):
    """The reply schema: every unit drawn from one window."""

    units: list[UnitReply] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _bare_list(cls, value: Any) -> Any:
        # A bare array of units is an obvious enough answer to accept.
        return {"units": value} if isinstance(value, list) else value


RESTATE_PROMPT = """\
You turn part of a conversation into entries for a long-term memory.

Each entry is one self-contained statement that a reader who never saw the conversation understands on its own, \
months later:
- Replace pronouns and other references that only make sense inside the conversation ("I", "you", "he", "she", \
"they", "we", "my brother", "that place", "it") with the names or full descriptions they refer to. The speaker of \
each turn is named before its text.
- Replace relative times ("yesterday", "last week", "next month", "two years ago", "tonight") with absolute dates \
worked out from the date of the turn (the session date, unless the turn shows its own), and write the date into the \
statement, e.g. "on 2 March 2021" or "in the week before 3 March 2021".
- Keep every fact worth remembering: events, plans, decisions, preferences, opinions, relationships, possessions, \
names and numbers. Skip greetings and small talk that carry no information.
- Use only what the turns say. Do not guess names, dates or details they do not give; if a reference cannot be \
resolved, keep it as written.
- Turns listed under "Earlier turns (context only)" were already processed: use them to understand the new turns, \
and write entries only for what the new turns add.

Reply with only a JSON object: {"units": [{"text": ..., "source_ids": [...], "time": ..., "keywords": [...], \
"persons": [...], "entities": [...], "location": ..., "topic": ...}]}
- text: the self-contained statement.
- source_ids: the ids, shown in square brackets, of the turns the statement is drawn from.
- time: the date the event happened as YYYY-MM-DD (when only the week, month or year is known, its first day), or \
null when the statement is not tied to a time.
- keywords: a few words or short phrases someone might search for.
- persons: the names of the people involved.
- entities: other named things: organisations, places, products, works, events.
- location: where it happened, if stated, else null.
- topic: a short phrase for what the statement is about.

Example. Session date: Wednesday, 3 March 2021.
[a1] Ana: I got a puppy yesterday!
[a2] Tom: Nice! What did you call him?
[a3] Ana: Biscuit. My sister helped me choose him at the shelter in Leeds.
Reply: {"units": [{"text": "Ana got a puppy named Biscuit on 2 March 2021; Ana's sister helped Ana choose him at \
the shelter in Leeds.", "source_ids": ["a1", "a2", "a3"], "time": "2021-03-02", "keywords": ["puppy", "Biscuit", \
"shelter"], "persons": ["Ana"], "entities": ["Biscuit"], "location": "Leeds", "topic": "new pet"}]}
"""


# --------------------------------------------------------------------------- the restater


class Restater:
    """Restates dialogue window by window; offline when ``llm`` is ``None``.

    ``window`` turns per window, ``overlap`` of them shared with the previous
    window, at most ``workers`` windows asked of the LLM at once. Times
    without an offset are taken to be in ``default_tz``.
    """

    def __init__(
        self,
        llm: LLM | None,
        *,
        window: int = 40,
        overlap: int = 2,
        workers: int = 4,
        default_tz: tzinfo = timezone.utc,
        prompt: str = RESTATE_PROMPT,
    ) -> None:
        _check_window(window, overlap)
        if workers < 1:
            raise ConfigError(f"restatement workers must be >= 1, got {workers}")
        self.llm = llm
        self.window = window
        self.overlap = overlap
        self.workers = workers
        self.default_tz = default_tz
        self.prompt = prompt

    def __repr__(self) -> str:
        llm = getattr(self.llm, "name", None)
        return f"Restater(llm={llm!r}, window={self.window}, overlap={self.overlap}, workers={self.workers})"

    def restate(
        self, turns: Sequence[Turn], *, session_time: datetime | None = None
    ) -> Generator[WindowResult, None, None]:
        """Return a generator of each window's units, in window order.

        Validates all turns at once, before returning (non-empty unique ids,
        non-empty text), raising :class:`InvalidInputError`. An
        :class:`~omnimem.llm.errors.LLMError` from a window is raised after
        the windows before it have been yielded. Closing the generator early
        cancels windows not yet started.
        """
        checked = self._checked(turns)  # eagerly, so bad input fails before any window
        return self._windows(checked, self._aware(session_time))

    def messages(
        self, turns: Sequence[Turn], *, session_time: datetime | None = None, context_turns: int = 0
    ) -> list[Message]:
        """The chat sent for one window (public so prompts can be inspected and tested).

        The first ``context_turns`` turns are shown as context already processed.
        """
        session = self._aware(session_time)
        reference = session or min((t.time for t in turns if t.time is not None), default=None)
        if reference is None:
            header = "Session date: unknown; keep relative times as written unless a turn shows its date."
        else:
            header = f"Session date: {_long_date(reference)} ({reference.isoformat()})."
        lines = [header, ""]
        if context_turns:
            lines.append("Earlier turns (context only):")
            lines.extend(_turn_line(turn, reference) for turn in turns[:context_turns])
            lines += ["", "New turns:"]
        else:
            lines.append("Turns:")
        lines.extend(_turn_line(turn, reference) for turn in turns[context_turns:])
        return [{"role": "system", "content": self.prompt}, {"role": "user", "content": "\n".join(lines)}]

    # -- windows ------------------------------------------------------------

    def _windows(self, turns: Sequence[Turn], session: datetime | None) -> Generator[WindowResult, None, None]:
        plan = [
            (index, start, turns[start : start + self.window])
            for index, start in enumerate(window_starts(len(turns), self.window, self.overlap))
        ]
        if self.llm is None:
            for index, start, chunk in plan:
                yield self._offline_window(index, chunk, self._overlap_size(start), session)
            return
        yield from self._parallel(plan, session)

    def _parallel(
        self, plan: Sequence[tuple[int, int, Sequence[Turn]]], session: datetime | None
    ) -> Iterator[WindowResult]:
        # At most 2 * workers windows are submitted ahead of the one being
        # yielded: the pool stays busy while the caller stores, and a failure
        # or an early close wastes few LLM calls.
        pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="omnimem-restate")
        queued: deque[Future[WindowResult]] = deque()
        todo = iter(plan)

        def submit_next() -> None:
            step = next(todo, None)
            if step is not None:
                index, start, chunk = step
                context = self._overlap_size(start)
                queued.append(pool.submit(self._llm_window, index, chunk, context, session))

        try:
            for _ in range(2 * self.workers):
                submit_next()
            while queued:
                result = queued.popleft().result()  # re-raises the window's LLMError
                submit_next()
                yield result
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def _offline_window(
        self, index: int, chunk: Sequence[Turn], context: int, session: datetime | None
    ) -> WindowResult:
        units = tuple(_explicit_unit(turn, session) for turn in chunk[context:])
        return WindowResult(index, tuple(t.id for t in chunk), units)

    def _llm_window(self, index: int, chunk: Sequence[Turn], context: int, session: datetime | None) -> WindowResult:
        assert self.llm is not None
        reply = self.llm.complete_json(self.messages(chunk, session_time=session, context_turns=context),
                                       RestatementReply)
        by_id = {turn.id: turn for turn in chunk}
        order = {turn.id: position for position, turn in enumerate(chunk)}
        overlap_ids = {turn.id for turn in chunk[:context]}
        units: list[RestatedUnit] = []
        seen: set[str] = set()
        for number, raw in enumerate(reply.units):
            unit = self._unit_from_reply(raw, index, number, by_id, order, session)
            if unit is None:
                continue
            if overlap_ids.issuperset(unit.source_ids):
                log.debug("restate window %d: unit %d only restates overlap turns, dropped", index, number)
                continue
            if unit.key not in seen:
                seen.add(unit.key)
                units.append(unit)
        return WindowResult(index, tuple(by_id), tuple(units))

    def _unit_from_reply(
        self,
        raw: UnitReply,
        index: int,
        number: int,
        by_id: dict[str, Turn],
        order: dict[str, int],
        session: datetime | None,
    ) -> RestatedUnit | None:
        text = _squash(raw.text)
        if not text:
            log.warning("restate window %d: unit %d has no text, skipped", index, number)
            return None
        unknown = [i for i in raw.source_ids if i not in by_id]
        if unknown:
            log.warning("restate window %d: unit %d cites turn ids not in the window, dropped: %s",
                        index, number, unknown)
        ids = sorted({i for i in raw.source_ids if i in by_id}, key=order.__getitem__)
        if not ids:
            log.warning("restate window %d: unit %d has no valid source turn ids, skipped: %.80r",
                        index, number, text)
            return None
        sources = [by_id[i] for i in ids]
        speakers = {turn.speaker for turn in sources}
        return RestatedUnit(
            text=text,
            source_ids=tuple(ids),
            time=self._unit_time(raw.time, sources, session, index, number),
            speaker=speakers.pop() if len(speakers) == 1 else None,
            keywords=_names(raw.keywords),
            persons=_names(raw.persons),
            entities=_names(raw.entities),
            location=_squash(raw.location or "") or None,
            topic=_squash(raw.topic or "") or None,
        )

    def _unit_time(
        self, value: str | None, sources: Sequence[Turn], session: datetime | None, index: int, number: int
    ) -> datetime | None:
        if value is not None and value.strip() and value.strip().lower() not in ("null", "none", "unknown"):
            # A bare date is midnight where the conversation happened, not in UTC.
            said_at = next((turn.time for turn in sources if turn.time is not None), session)
            zone = said_at.tzinfo if said_at is not None and said_at.tzinfo is not None else self.default_tz
            try:
                return parse_time(value, default_tz=zone)
            except InvalidTimeError:
                log.warning("restate window %d: unit %d has an unparseable time %r; using when it was said",
                            index, number, value)
        said = [turn.time for turn in sources if turn.time is not None]
        return min(said) if said else session

    # -- input --------------------------------------------------------------

    def _checked(self, turns: Sequence[Turn]) -> list[Turn]:
        if isinstance(turns, str | bytes) or not isinstance(turns, Sequence):
            raise InvalidInputError("turns must be a sequence of Turn")
        checked: list[Turn] = []
        seen: set[str] = set()
        for position, turn in enumerate(turns):
            if not isinstance(turn, Turn):
                raise InvalidInputError(f"turn {position} must be a Turn, got {type(turn).__name__}")
            if not isinstance(turn.id, str) or not turn.id.strip():
                raise InvalidInputError(f"turn {position} needs a non-empty id (its provenance)")
            if turn.id in seen:
                raise InvalidInputError(f"turn {position}: id {turn.id!r} is used twice")
            if not isinstance(turn.text, str) or not turn.text.strip():
                raise InvalidInputError(f"turn {position} ({turn.id}) has no text")
            seen.add(turn.id)
            checked.append(Turn(turn.id, turn.speaker, turn.text.strip(), self._aware(turn.time)))
        return checked

    def _aware(self, value: datetime | None) -> datetime | None:
        if value is None or value.tzinfo is not None:
            return value
        return value.replace(tzinfo=self.default_tz)

    def _overlap_size(self, start: int) -> int:
        return self.overlap if start > 0 else 0


# --------------------------------------------------------------------------- helpers


def _check_window(window: int, overlap: int) -> None:
    if window < 1:
        raise ConfigError(f"restatement window must be >= 1 turn, got {window}")
    if not 0 <= overlap < window:
        raise ConfigError(f"restatement overlap must be >= 0 and smaller than the window ({window}), got {overlap}")


def _explicit_unit(turn: Turn, session: datetime | None) -> RestatedUnit:
    """The offline unit: the turn verbatim, with speaker and absolute date spelled out."""
    when = turn.time or session
    if turn.speaker and when:
        text = f"On {_date(when)}, {turn.speaker} said: {turn.text}"
    elif turn.speaker:
        text = f"{turn.speaker} said: {turn.text}"
    elif when:
        text = f"On {_date(when)}: {turn.text}"
    else:
        text = turn.text
    persons = (turn.speaker,) if turn.speaker else ()
    return RestatedUnit(text=text, source_ids=(turn.id,), time=when, speaker=turn.speaker, persons=persons)


def _turn_line(turn: Turn, reference: datetime | None) -> str:
    speaker = turn.speaker or "(unknown speaker)"
    if turn.time is not None and turn.time != reference:
        return f"[{turn.id}] {speaker} ({_long_date(turn.time)}): {_squash(turn.text)}"
    return f"[{turn.id}] {speaker}: {_squash(turn.text)}"


def _date(value: datetime) -> str:
    return f"{value.day} {value:%B %Y}"


def _long_date(value: datetime) -> str:
    clock = f", {value:%H:%M}" if (value.hour, value.minute) != (0, 0) else ""
    return f"{value:%A}, {_date(value)}{clock}"


_SPACES = re.compile(r"\s+")


def _squash(text: str) -> str:
    return _SPACES.sub(" ", text).strip()


def _names(values: Sequence[str]) -> tuple[str, ...]:
    """Cleaned, de-duplicated (case-insensitively), in the model's order."""
    out: dict[str, str] = {}
    for value in values:
        name = _squash(value) if isinstance(value, str) else ""
        if name:
            out.setdefault(name.casefold(), name)
    return tuple(out.values())


__all__ = [
    "RESTATE_PROMPT",
    "RestatedUnit",
    "RestatementReply",
    "Restater",
    "Turn",
    "UnitReply",
    "WindowResult",
    "window_starts",
]
