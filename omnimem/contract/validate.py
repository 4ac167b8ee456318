"""Argument checks of the facade: every bad value becomes an :class:`InvalidInputError`.

``Memory`` calls these before delegating, so a wrong type, a NaN or an
absurd size never reaches SQLite, numpy or the file system as a raw
exception.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from omnimem.errors import InvalidInputError

MAX_METADATA_BYTES = 1_000_000  # the size bound of every free-form JSON field (metadata, event details)
MAX_JSON_BYTES = MAX_METADATA_BYTES
# Nesting levels a stored JSON field may have. A read wraps a field in a few
# levels (a search hit holds a unit holding its metadata), and the serialisers
# of reads stop far above this (pydantic-core at about 255 levels, json and
# the C scanner at Python's recursion limit), so what is accepted always reads.
MAX_JSON_DEPTH = 32


def store_path(path: object) -> Path | None:
    """The store folder: ``None`` (in memory), a string or a path, without NUL bytes."""
    if path is None:
        return None
    if isinstance(path, bytes) or not isinstance(path, str | os.PathLike):
        raise InvalidInputError(f"path must be a folder name (str or Path), got {type(path).__name__}")
    text = os.fspath(path)
    if not isinstance(text, str) or not text or "\x00" in text:
        raise InvalidInputError("path must be a non-empty folder name without NUL characters")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError("path holds characters that are not valid UTF-8 (lone surrogates)") from None
    return Path(text)


def media_file(value: object) -> bytes | Path:
    """Media given as bytes or as the path of an existing file."""
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if not isinstance(value, str | os.PathLike) or isinstance(os.fspath(value), bytes):
        raise InvalidInputError(f"media must be bytes or a file path, got {type(value).__name__}")
    path = store_path(value)  # the same checks as a folder name: no NUL, valid UTF-8
    assert path is not None
    try:
        if path.is_file():
            return path
    except (OSError, ValueError):
        pass
    raise InvalidInputError(f"{str(path)[:200]} is not a file")


def unit_id(value: object, what: str = "unit_id") -> str:
    """One unit id (a non-empty string), not a list of them."""
    if not isinstance(value, str):
        hint = "; pass one id (call it once per id)" if isinstance(value, list | tuple | set) else ""
        raise InvalidInputError(f"{what} must be a string, got {type(value).__name__}{hint}")
    if not value or "\x00" in value or len(value) > 200 or not _utf8(value):
        raise InvalidInputError(f"{what} {value[:40]!r} is not a unit id")
    return value


def unit_ids(value: object, what: str = "unit_ids") -> list[str]:
    """A list of unit ids; one string is refused (it is not a list of its characters)."""
    if isinstance(value, str | bytes) or not isinstance(value, list | tuple | set | frozenset):
        raise InvalidInputError(f"{what} must be a list of unit ids, got {type(value).__name__}")
    return [unit_id(v, what) for v in value]


def records(value: object) -> Any:
    """What ``import_records`` reads: an iterable of mappings (not one mapping, not a string)."""
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise InvalidInputError("records must be an iterable of mappings (what export() yields)")
    return value


def texts(value: object) -> Any:
    """A list of queries or questions (one string is refused: it is not a list of its characters)."""
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise InvalidInputError(f"pass a list of queries, got {type(value).__name__}")
    return value


def flag(value: object, what: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidInputError(f"{what} must be True or False, got {type(value).__name__}")
    return value


def note(value: object, what: str = "reason") -> str | None:
    """Optional free text for the audit log (a reason): a string of valid UTF-8, at most 10,000 characters."""
    if value is None:
        return None
    if not isinstance(value, str) or not _utf8(value) or len(value) > 10_000:
        raise InvalidInputError(f"{what} must be text (valid UTF-8, at most 10,000 characters)")
    return no_nul(value, what)


def no_nul(value: str, what: str) -> str:
    """``value`` unless it holds U+0000, which is refused in every text field (text, speaker, scope and source
    ids, queries, reasons) on every backend: PostgreSQL cannot store it in a text column, and one rule on
    SQLite too keeps a store movable between backends. Metadata may hold it (JSON escapes it)."""
    if "\x00" in value:
        raise InvalidInputError(f"{what} holds a NUL character (U+0000), which omnimem does not store")
    return value


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def whole(value: object, what: str, *, minimum: int = 1, maximum: int = 1_000_000) -> int:
    """A whole number within [minimum, maximum] (``True`` and ``"5"`` are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"{what} must be an integer, got {type(value).__name__}")
    if not minimum <= value <= maximum:
        raise InvalidInputError(f"{what} must be within [{minimum}, {maximum}], got {value}")
    return value


def real(value: object, what: str, *, low: float, high: float, open_low: bool = False) -> float:
    """A finite number within [low, high] ((low, high] with ``open_low``)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInputError(f"{what} must be a number, got {type(value).__name__}")
    number = float(value)
    if not math.isfinite(number) or number > high or number < low or (open_low and number == low):
        raise InvalidInputError(f"{what} must be a finite number within {'(' if open_low else '['}{low}, {high}], "
                                f"got {value!r}")
    return number


def query(value: object, limit: int) -> str:
    """A query no longer than ``limit`` characters (checked before any cleaning or embedding)."""
    if isinstance(value, str) and len(value) > limit:
        raise InvalidInputError(f"query is {len(value)} characters long; the limit is {limit} (setting max_query_chars)")
    return value  # type: ignore[return-value]  # clean_text checks the type next


def json_depth(value: object, limit: int = MAX_JSON_DEPTH) -> int:
    """How deeply ``value`` nests lists and mappings (a scalar: 0), counted up to ``limit + 1`` only.

    Iterative, so a value nested thousands deep (or a cycle) is measured without recursion.
    """
    deepest = 0
    todo: list[tuple[object, int]] = [(value, 0)]
    while todo:
        item, depth = todo.pop()
        if isinstance(item, Mapping):
            children: Iterable[object] = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        depth += 1
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        todo.extend((child, depth) for child in children)
    return deepest


def json_field(value: object, what: str) -> Any:
    """A free-form JSON value as stored: at most ``MAX_JSON_DEPTH`` levels and ``MAX_JSON_BYTES`` bytes as
    JSON, string keys, finite numbers, valid UTF-8. Returns a plain copy (later changes by the caller do not
    leak in). Every write path checks its JSON fields here, so one limit holds everywhere."""
    if json_depth(value) > MAX_JSON_DEPTH:
        raise InvalidInputError(f"{what} nests deeper than {MAX_JSON_DEPTH} levels")
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:  # a ValueError too: caught first
        raise InvalidInputError(f"{what} holds characters that are not valid UTF-8 (lone surrogates)") from None
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidInputError(f"{what} must be JSON (string keys, finite numbers, no cycles): {exc}") from None
    if size > MAX_JSON_BYTES:
        raise InvalidInputError(f"{what} is {size} bytes as JSON; the limit is {MAX_JSON_BYTES}")
    return json.loads(text)


def metadata(value: object, what: str = "metadata") -> dict[str, Any]:
    """A JSON-serialisable mapping with string keys and valid UTF-8, of bounded size and depth."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"{what} must be a mapping, got {type(value).__name__}")
    copied: dict[str, Any] = json_field(dict(value), what)
    return copied
