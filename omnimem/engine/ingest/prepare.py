"""Validating raw input into units-to-be, before anything is stored.

A whole batch is validated first, so bad input anywhere in it raises before
any of it is written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, tzinfo
from typing import Any

import unicodedata

from omnimem.errors import InvalidInputError
from omnimem.engine.provenance import Stamp, stamp
from omnimem.mau import Modality, Scope, content_hash
from omnimem.results import AddResult as AddResult  # defined there; this path keeps working
from omnimem.timeparse import parse_time
from omnimem.validate import metadata as clean_metadata, no_nul


MAX_TEXT_CHARS = 10_000_000  # one unit's text; export writes it and import reads it back


@dataclass(frozen=True, slots=True)
class Pending:
    """A validated input waiting for the novelty filter and the embedder."""

    text: str
    speaker: str | None
    event_time: datetime | None
    scope: Scope
    source_id: str | None
    content_hash: str
    modality: Modality = Modality.TEXT
    metadata: dict[str, Any] = field(default_factory=dict)
    raw: bytes | None = None  # raw content for the cold tier (media)
    novelty: bool = True  # apply the text novelty filter (media have their own filters)
    chain: bool = False  # link to the previous chained unit of the same call (media segments)
    unit_id: str | None = None  # a pre-assigned id, when other units must point at this one
    source_ids: tuple[str, ...] = ()  # several sources (a restated unit); else ``source_id``
    supersedes: tuple[str, ...] = ()  # ids of units this one replaces (kept for history, withheld from search)
    provenance: Stamp | None = None  # source kind, trust, surface, actor (None: stamped when the writer takes it)


def clean_text(value: object, *, what: str = "text") -> str:
    """Non-empty, valid UTF-8 text, with surrounding whitespace removed."""
    if isinstance(value, bytes | bytearray):
        try:
            value = bytes(value).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInputError(f"{what} is not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be a string, got {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError(f"{what} holds characters that are not valid UTF-8 (lone surrogates)") from None
    text = value.strip()
    if not visible(text):
        raise InvalidInputError(f"{what} is empty")
    return no_nul(text, what)


def visible(text: str) -> bool:
    """Whether ``text`` holds anything but whitespace, control, format (zero-width) or NUL characters."""
    return any(not ch.isspace() and unicodedata.category(ch) not in ("Cc", "Cf", "Cs", "Zs", "Zl", "Zp")
               for ch in text)


def clean_caption(value: object) -> str | None:
    """An image caption: text or ``None``; blank means none (the offline description is used)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInputError(f"caption must be a string, got {type(value).__name__}")
    return clean_text(value, what="caption") if visible(value) else None


def clean_id(value: object, what: str) -> str | None:
    """A scope or source id: non-empty, valid UTF-8, NFC-normalised (so "Ánna" is one user however typed)."""
    if value is None:
        return None
    if not isinstance(value, str):  # 5 is not "5": one rule for the API, ingest and every import
        raise InvalidInputError(f"{what} must be a string, got {type(value).__name__}")
    if not visible(value):
        raise InvalidInputError(f"{what} must be a non-empty string")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError(f"{what} holds characters that are not valid UTF-8 (lone surrogates)") from None
    no_nul(value, what)
    if len(value) > 1000:
        raise InvalidInputError(f"{what} is longer than 1000 characters")
    return unicodedata.normalize("NFC", value.strip())


def make_scope(user_id: object, agent_id: object, session_id: object) -> Scope:
    return Scope(clean_id(user_id, "user_id"), clean_id(agent_id, "agent_id"), clean_id(session_id, "session_id"))


def prepare(
    text: object,
    *,
    time: object,
    speaker: object,
    source_id: object,
    scope: Scope,
    tz: tzinfo,
    metadata: Mapping[str, Any] | None = None,
) -> Pending:
    """Validate one input; raises InvalidInputError / InvalidTimeError."""
    body = clean_text(text)
    if len(body) > MAX_TEXT_CHARS:
        raise InvalidInputError(f"text is longer than {MAX_TEXT_CHARS} characters")
    who = None if speaker is None else clean_text(speaker, what="speaker")
    when = parse_time(time, default_tz=tz)  # type: ignore[arg-type]
    source = clean_id(source_id, "source_id")
    digest = content_hash(body, speaker=who, event_time=when, scope=scope, source_id=source)
    return Pending(body, who, when, scope, source, digest, metadata=clean_metadata(metadata))


def stamped(items: Sequence[Pending], actor: str | None) -> Sequence[Pending]:
    """Every item with its provenance: those without one get the current channel's (a user's words)."""
    if all(item.provenance is not None for item in items):
        return items
    default = stamp(None, None, actor)
    return [item if item.provenance is not None else replace(item, provenance=default) for item in items]


def check_storable(items: Sequence[Pending]) -> None:
    """Every string of every item is valid UTF-8 (a last check for paths that skip :func:`prepare`, e.g. import)."""
    for n, item in enumerate(items):
        fields = (item.text, item.speaker, item.source_id, *item.source_ids, *item.scope.as_dict().values())
        try:
            for value in fields:
                if value is not None:
                    value.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidInputError(f"item {n}: text, speaker, source or scope ids hold lone surrogates") from None


def prepare_turn(turn: object, index: int, *, scope: Scope, tz: tzinfo) -> Pending:
    """One dialogue turn: a mapping with text, speaker, time and optional id."""
    if not isinstance(turn, Mapping):
        raise InvalidInputError(f"turn {index} must be a mapping with 'text', 'speaker', 'time'")
    if "text" not in turn:
        raise InvalidInputError(f"turn {index} has no 'text'")
    try:
        return prepare(
            turn["text"],
            time=turn.get("time"),
            speaker=turn.get("speaker"),
            source_id=turn.get("id"),
            scope=scope,
            tz=tz,
            metadata=turn.get("metadata"),
        )
    except InvalidInputError as exc:
        raise type(exc)(f"turn {index}: {exc}") from None
