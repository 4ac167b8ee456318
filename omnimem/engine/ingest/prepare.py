"""Validating raw input into units-to-be, before anything is stored.

A whole batch is validated first, so bad input anywhere in it raises before
any of it is written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, tzinfo
from typing import Any

from omnimem.contract import MAX_TEXT_CHARS
from omnimem.contract.checks import clean_id, clean_text
from omnimem.errors import InvalidInputError
from omnimem.engine.provenance import Stamp, stamp
from omnimem.mau import Modality, Scope, content_hash
from omnimem.timeparse import parse_time
from omnimem.contract.validate import metadata as clean_metadata


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
