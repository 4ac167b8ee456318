"""The facade's checks: each argument of a verb checked once, before its request is built.

:class:`omnimem.memory.Memory` calls these on every verb's keyword arguments,
so a bad argument raises the same :class:`~omnimem.errors.InvalidInputError`
on every engine, before any work and before the network; the write path and
the shells share the id and text rules (``clean_id``: one spelling of a user
however typed).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from omnimem.contract import validate
from omnimem.contract import MAX_PUT, MAX_TEXT_CHARS, ForgetRequest, PutItem
from omnimem.errors import InvalidInputError
from omnimem.mau import SOURCES, TRUST_LEVELS, Scope
from omnimem.contract.validate import no_nul

ROLE_SOURCES = {"user": "user", "human": "user", "assistant": "assistant", "ai": "assistant", "tool": "tool",
                "function": "tool"}  # a turn's role (or a speaker that is one) -> its source kind
_HEX = frozenset("0123456789abcdef")
PUT_FIELDS = frozenset({"text", "time", "speaker", "source_id", "metadata", "supersedes", "id", "source", "trust"})


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
    if len(text) > MAX_TEXT_CHARS:
        raise InvalidInputError(f"{what} is longer than {MAX_TEXT_CHARS} characters")
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


def check_source(value: object, what: str = "source") -> str | None:
    """A source kind as a caller gave it (None: the default)."""
    if value is None:
        return None
    if not isinstance(value, str) or value not in SOURCES:
        raise InvalidInputError(f"{what} must be one of {', '.join(SOURCES)}, got {value!r}")
    return value


def check_trust(value: object, what: str = "trust") -> str:
    if not isinstance(value, str) or value not in TRUST_LEVELS:
        raise InvalidInputError(f"{what} must be one of {', '.join(TRUST_LEVELS)}, got {value!r}")
    return value


def is_database_url(url: str | None) -> bool:
    """Whether ``url`` names a database this process opens itself (``postgresql://``, ``postgres://``, or
    ``postgresql+pgserver://FOLDER``: a local server this process starts or reuses)."""
    return url is not None and url.split(":", 1)[0].lower() in ("postgresql", "postgres", "postgresql+pgserver")


def top_k(value: object) -> int | None:
    return None if value is None else validate.whole(value, "top_k", maximum=10_000)


def budget(value: object) -> int | None:
    return None if value is None else validate.whole(value, "budget")


def planner(value: object) -> str | None:
    if value is not None and value not in ("none", "offline", "llm"):
        raise InvalidInputError(f"planner must be none, offline or llm, not {value!r}")
    return None if value is None else str(value)


def floor(value: object) -> str | None:
    """A search's or an ask's ``min_trust`` (None: every unit)."""
    return None if value is None else check_trust(value, "min_trust")


def turns(given: Iterable[object]) -> tuple[Mapping[str, Any], ...]:
    """Every turn a mapping with a text (its fields are read by the engine, in its time zone)."""
    if isinstance(given, str | bytes) or not isinstance(given, Iterable):
        raise InvalidInputError("turns must be a list of mappings")
    checked = []
    for index, turn in enumerate(given):
        if not isinstance(turn, Mapping):
            raise InvalidInputError(f"turn {index} must be a mapping with 'text', 'speaker', 'time'")
        if "text" not in turn:
            raise InvalidInputError(f"turn {index} has no 'text'")
        checked.append(turn)
    return tuple(checked)


def put_items(given: object) -> tuple[PutItem, ...]:
    """The items of a ``put``, each checked whole (its text, ids, metadata, source kind and trust)."""
    if isinstance(given, str | bytes | Mapping) or not isinstance(given, Sequence):
        raise InvalidInputError("put takes a list of items (mappings with a 'text')")
    if len(given) > MAX_PUT:
        raise InvalidInputError(f"put takes at most {MAX_PUT} items at once (one transaction); got {len(given)}")
    return tuple(_put_item(item, n) for n, item in enumerate(given))


def _put_item(item: object, n: int) -> PutItem:
    if not isinstance(item, Mapping):
        raise InvalidInputError(f"item {n} must be a mapping with a 'text', got {type(item).__name__}")
    unknown = sorted(set(item) - PUT_FIELDS, key=repr)
    if unknown:
        raise InvalidInputError(f"item {n}: unknown field {unknown[0]!r}; an item has {', '.join(sorted(PUT_FIELDS))}")
    if "text" not in item:
        raise InvalidInputError(f"item {n} has no 'text'")
    speaker, supersedes, trust = item.get("speaker"), item.get("supersedes"), item.get("trust")
    metadata = item.get("metadata")
    return PutItem(
        clean_text(item["text"], what=f"item {n}: text"), item.get("time"),
        None if speaker is None else clean_text(speaker, what=f"item {n}: speaker"),
        clean_id(item.get("source_id"), f"item {n}: source_id"),
        None if metadata is None else validate.metadata(metadata),
        () if supersedes is None else tuple(validate.unit_ids(supersedes, f"item {n}: supersedes")),
        _chosen_id(item.get("id"), n),
        check_source(item.get("source"), f"item {n}: source"),
        None if trust is None else check_trust(trust, f"item {n}: trust"),
    )


def _chosen_id(value: object, n: int) -> str | None:
    """A unit id a put chooses: 32 lowercase hexadecimal digits, the form of omnimem's own ids."""
    if value is None or (isinstance(value, str) and len(value) == 32 and set(value) <= _HEX):
        return value
    raise InvalidInputError(f"item {n}: id must be 32 lowercase hexadecimal digits, got {str(value)[:40]!r}")


def forget_request(user_id: str | None, agent_id: str | None, session_id: str | None, since: str | datetime | None,
                   until: str | datetime | None, unit_ids: Sequence[str] | None, everything: bool, all_users: bool,
                   reason: str | None) -> ForgetRequest:
    return ForgetRequest(make_scope(user_id, agent_id, session_id), since, until,
                         None if unit_ids is None else tuple(validate.unit_ids(unit_ids)),
                         validate.flag(everything, "all"), all_users, validate.note(reason))
