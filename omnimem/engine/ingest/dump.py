"""Validating an export dump before anything of it is stored.

A dump is untrusted input: every unit record is checked against its
modality (a text unit has no raw bytes, an audio unit numeric times, an image
unit a well-formed perceptual hash), and its content hash is recomputed from
its content and scope, never taken from the record, so a dump cannot make
another scope's content look like a duplicate. One bad record refuses the
whole dump with a :class:`MalformedDataError` naming the record.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from omnimem.errors import InvalidInputError, MalformedDataError
from omnimem.engine.ingest.media import media_hash
from omnimem.contract import MAX_TEXT_CHARS
from omnimem.engine.ingest.prepare import Pending
from omnimem.contract.checks import clean_text, make_scope
from omnimem.contract.validate import metadata as clean_metadata
from omnimem.mau import Modality, content_hash
from omnimem.timeparse import parse_time

FORMAT = "omnimem-export"
VERSION = 1
MAX_RAW = 50 * 1024 * 1024
_HEX = frozenset("0123456789abcdef")


@dataclass(frozen=True, slots=True)
class Checked:
    """A unit record that passed validation, ready for the write path."""

    item: Pending
    where: str  # "record 3 (id ab12...)", for messages
    superseded_by: str | None  # (its record time in the source store is checked, never trusted: see governance)
    claimed: object = None  # the source kind the record says it had: kept only as the imported unit's origin


def check_dump(records: Iterable[Mapping[str, Any]]) -> list[Checked]:
    """Every unit record of a dump, validated, with recomputed hashes; raises on the first bad record."""
    checked: list[Checked] = []
    header = False
    seen: dict[str, str] = {}
    for n, record in enumerate(records, start=1):
        if not isinstance(record, Mapping):
            raise MalformedDataError(f"record {n}: not a JSON object")
        kind = record.get("kind")
        if kind == "header":
            if record.get("format") != FORMAT or record.get("version") != VERSION:
                raise MalformedDataError(f"record {n}: not an {FORMAT} v{VERSION} dump")
            header = True
        elif kind == "unit":
            unit = check_unit(record, n)
            uid = unit.item.unit_id or ""
            if uid in seen:
                raise MalformedDataError(f"{unit.where}: the same id as {seen[uid]}")
            seen[uid] = unit.where
            checked.append(unit)
        elif kind not in ("entity", "event"):  # the graph is rebuilt from units; events stay in the source log
            raise MalformedDataError(f"record {n}: unknown record kind {kind!r}")
    if not header:
        raise MalformedDataError(f"the dump has no {FORMAT} header record")
    _check_versions(checked)
    return _with_hashes(checked)


def check_unit(record: Mapping[str, Any], n: int, where: str | None = None) -> Checked:
    """One unit record, validated (``where`` names it in messages; default ``record N (id ...)``)."""
    uid = record.get("id")
    if not isinstance(uid, str) or not uid or len(uid) > 64 or not set(uid) <= _HEX | set("-_"):
        raise MalformedDataError(f"record {n}: unit id must be 1-64 hex/-/_ characters")
    where = where or f"record {n} (id {uid})"
    try:
        modality = Modality(record.get("modality", "text"))
    except ValueError:
        raise MalformedDataError(f"{where}: unknown modality {record.get('modality')!r}") from None
    try:
        text = clean_text(record.get("text") or record.get("summary"), what="text")
        if len(text) > MAX_TEXT_CHARS:
            raise InvalidInputError(f"text longer than {MAX_TEXT_CHARS} characters")
        speaker = record.get("speaker")
        speaker = clean_text(speaker, what="speaker") if speaker is not None else None
        when = parse_time(record.get("event_time"))
        if record.get("record_time") is not None:
            parse_time(record.get("record_time"))
        scope = make_scope(record.get("user_id"), record.get("agent_id"), record.get("session_id"))
        sources = record.get("source_ids") or []
        if not isinstance(sources, list):
            raise InvalidInputError("source_ids must be a list of strings")
        source_ids = tuple(clean_text(s, what="source_ids") for s in sources)
        metadata = clean_metadata(record.get("metadata"))
        raw = _raw(record.get("raw"))
        _check_modality(modality, raw, metadata)
        ref = record.get("raw_ref")
        if ref is not None and (not isinstance(ref, str) or not set(ref) <= _HEX):
            raise InvalidInputError("raw_ref is not a content hash (path-like references are refused)")
        successor = record.get("superseded_by")
        if successor is not None and not isinstance(successor, str):
            raise InvalidInputError("superseded_by must be a unit id")
    except (ValueError, InvalidInputError) as exc:  # MalformedDataError is one too; each message has one prefix
        raise MalformedDataError(f"{where}: {exc}") from None
    item = Pending(text, speaker, when, scope, None, "", modality=modality, metadata=metadata, raw=raw,
                   novelty=False, unit_id=uid, source_ids=source_ids)
    return Checked(item, where, successor, record.get("source"))


def _raw(encoded: object) -> bytes | None:
    if encoded is None:
        return None
    if not isinstance(encoded, str) or len(encoded) > MAX_RAW * 4 // 3 + 4:
        raise InvalidInputError(f"raw content must be base64 text of at most {MAX_RAW} bytes")
    try:
        return base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidInputError("raw content is not base64") from None


def _check_modality(modality: Modality, raw: bytes | None, meta: Mapping[str, Any]) -> None:
    """What later searches and adds rely on, per modality."""
    if modality in (Modality.TEXT, Modality.VIDEO):
        if raw is not None:  # a text unit's full text is its text; a video unit stands for the clip
            raise InvalidInputError(f"a {modality.value} unit carries no raw content")
    elif raw is None:
        raise InvalidInputError(f"a {modality.value} unit needs its raw content inline")
    for key in ("source_sha256",):
        if key in meta and not _is_hex(meta[key], 64):
            raise InvalidInputError(f"metadata {key} must be a SHA-256 hex digest")
    if "parent_id" in meta and not (isinstance(meta["parent_id"], str) and meta["parent_id"]):
        raise InvalidInputError("metadata parent_id must be a unit id")
    if modality is Modality.IMAGE:
        if "phash" in meta and not _is_hex(meta["phash"], 16):
            raise InvalidInputError("metadata phash must be 16 hex digits")
        for key in ("width", "height"):
            if key in meta and not (type(meta[key]) is int and meta[key] > 0):
                raise InvalidInputError(f"metadata {key} must be a positive integer")
        _check_seconds(meta, "timestamp_s", required=False)
        loc = meta.get("location")
        if loc is not None and not (isinstance(loc, list) and len(loc) == 2 and all(_is_number(v) for v in loc)):
            raise InvalidInputError("metadata location must be [latitude, longitude]")
    if modality is Modality.AUDIO:
        _check_seconds(meta, "start_s", required=True)
        _check_seconds(meta, "end_s", required=True)
        if meta["end_s"] < meta["start_s"]:
            raise InvalidInputError("metadata end_s is before start_s")
        if not isinstance(meta.get("transcript", ""), str | None):
            raise InvalidInputError("metadata transcript must be text")
    if modality is Modality.VIDEO:
        _check_seconds(meta, "duration_s", required=False)
    if "mime" in meta and not isinstance(meta["mime"], str):
        raise InvalidInputError("metadata mime must be a string")


def _check_seconds(meta: Mapping[str, Any], key: str, *, required: bool) -> None:
    if key not in meta:
        if required:
            raise InvalidInputError(f"metadata {key} is missing")
        return
    if not _is_number(meta[key]) or meta[key] < 0:
        raise InvalidInputError(f"metadata {key} must be a non-negative number of seconds")


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _is_hex(value: object, length: int) -> bool:
    return isinstance(value, str) and len(value) == length and set(value.lower()) <= _HEX


def _check_versions(checked: list[Checked]) -> None:
    """A unit may be superseded only by a unit of its own user and agent."""
    owners = {c.item.unit_id: (c.item.scope.user_id, c.item.scope.agent_id) for c in checked}
    for c in checked:
        new = c.superseded_by
        if new in owners and owners[new] != owners[c.item.unit_id]:
            raise MalformedDataError(f"{c.where}: superseded_by {new} is a unit of another user or agent")


def _with_hashes(checked: list[Checked]) -> list[Checked]:
    """Content hashes recomputed the way ``add`` and the media paths make them."""
    videos = {c.item.unit_id: str(c.item.metadata.get("source_sha256") or "") for c in checked
              if c.item.modality is Modality.VIDEO}
    return [replace(c, item=replace(c.item, content_hash=_hash(c.item, videos))) for c in checked]


def _hash(item: Pending, videos: Mapping[str | None, str]) -> str:
    meta, scope = item.metadata, item.scope
    if item.modality is Modality.TEXT:
        if meta.get("restated") is True:
            return content_hash(item.text, speaker=None, event_time=None, scope=scope,
                                source_id="|".join(item.source_ids))
        source = item.source_ids[0] if len(item.source_ids) == 1 else None
        return content_hash(item.text, speaker=item.speaker, event_time=item.event_time, scope=scope, source_id=source)
    own = hashlib.sha256(item.raw if item.raw is not None else item.text.encode("utf-8")).hexdigest()
    parent = videos.get(meta.get("parent_id")) if "parent_id" in meta else None
    if item.modality is Modality.VIDEO:
        return media_hash(Modality.VIDEO, str(meta.get("source_sha256") or own), scope)
    if item.modality is Modality.IMAGE:
        if parent:
            return media_hash(Modality.IMAGE, parent, scope, f"#frame@{meta.get('timestamp_s')}")
        return media_hash(Modality.IMAGE, own, scope)
    span = f"{meta['start_s']}-{meta['end_s']}"
    if parent:
        return media_hash(Modality.AUDIO, parent, scope, f"#speech@{span}")
    return media_hash(Modality.AUDIO, str(meta.get("source_sha256") or own), scope, f"@{span}")

