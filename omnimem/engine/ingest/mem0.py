"""Reading a mem0 export: the memories ``get_all`` returns, turned into an omnimem dump.

mem0's ``get_all`` answers a list of memories or ``{"results": [...]}`` (its
platform pages the list the same way). Each memory is an object with ``id``
(a UUID), ``memory`` (the text), ``user_id``, ``agent_id``, ``run_id``,
``metadata``, ``created_at``, ``updated_at`` and ``hash``, and sometimes
``actor_id``, ``role``, ``app_id``, ``categories``. Each becomes one text unit of
an ``omnimem-export`` dump, which :func:`omnimem.engine.governance.import_records`
then stores like any dump:

* the unit gets a fresh omnimem id; mem0's ``id`` is its source id (``source_ids``)
  and ``metadata["mem0"]["id"]``. An id from outside never becomes a unit id, so an
  import cannot learn whether another scope holds that id here (an existence
  oracle otherwise). The source id is part of the unit's content hash: importing
  the same export twice adds nothing (the second time, each memory is a duplicate);
* ``memory`` is the text; ``user_id`` and ``agent_id`` keep their names,
  ``run_id`` becomes ``session_id``;
* ``created_at`` is the event time (so time filters and "last week" see the
  memory when mem0 made it); the record time is the time of the import;
* ``metadata`` stays the unit's metadata, with mem0's other fields under its
  ``"mem0"`` key (``id``, ``hash``, ``updated_at``, ``actor_id``, ``role``,
  ``app_id``, ``categories``, as present).

Every memory is checked by the rules of every omnimem import
(:func:`omnimem.engine.ingest.dump.check_unit`) before anything is stored: one
that is not of that shape is a :class:`MalformedDataError` naming it
(``record N (id ...)``, N counting from 1 in the export, the id mem0's).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from omnimem.contract.loaders import memories_of
from omnimem.engine.ingest.dump import FORMAT, VERSION, check_unit
from omnimem.errors import InvalidInputError, MalformedDataError
from omnimem.timeparse import parse_time

_SCOPE = {"user_id": "user_id", "agent_id": "agent_id", "run_id": "session_id"}
_KEPT = ("hash", "updated_at", "actor_id", "role", "app_id", "categories")  # under metadata["mem0"], with "id"
_ID_CHARS = frozenset("0123456789abcdef-_")


def to_dump(export: object) -> list[dict[str, Any]]:
    """An ``omnimem-export`` dump holding the memories of a mem0 export (unit record N is memory N)."""
    units: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for n, memory in enumerate(memories_of(export), start=1):
        unit = _unit(memory, n)
        source = unit["source_ids"][0]
        if source in seen:
            raise MalformedDataError(f"record {n} (id {source}): the same id as record {seen[source]}")
        seen[source] = n
        units.append(unit)
    header = {"kind": "header", "format": FORMAT, "version": VERSION, "source": "mem0"}
    return [*units, header]  # the header last, so a dump's "record N" is the export's memory N


def _unit(memory: object, n: int) -> dict[str, Any]:
    if not isinstance(memory, Mapping):
        raise MalformedDataError(f"record {n}: not a JSON object")
    uid = memory.get("id")
    where = f"record {n}" + (f" (id {uid})" if isinstance(uid, str) else "")
    try:
        if not isinstance(uid, str) or not uid:
            raise InvalidInputError("no id (a mem0 memory's id is a UUID)")
        if len(uid) > 64 or not set(uid.lower()) <= _ID_CHARS:
            raise InvalidInputError("id must be 1-64 hex/-/_ characters (a mem0 memory's id is a UUID)")
        text = memory.get("memory")
        if not isinstance(text, str) or not text.strip():
            raise InvalidInputError("no memory text")
        scope = {ours: _optional_text(memory, theirs) for theirs, ours in _SCOPE.items()}
        created = memory.get("created_at")
        if created is not None:
            _time(created, "created_at")
        updated = memory.get("updated_at")
        if updated is not None:
            _time(updated, "updated_at")
        metadata = memory.get("metadata")
        if metadata is None:
            metadata = {}
        if not isinstance(metadata, Mapping):
            raise InvalidInputError("metadata must be an object")
        if "mem0" in metadata:
            raise InvalidInputError('metadata already has a "mem0" key, where the import keeps mem0\'s fields')
    except InvalidInputError as exc:
        raise MalformedDataError(f"{where}: {exc}") from None
    kept = {"id": uid, **{key: memory[key] for key in _KEPT if memory.get(key) is not None}}
    unit = {"kind": "unit", "id": uuid.uuid4().hex, "modality": "text", "text": text, **scope,
            "event_time": created, "source_ids": [uid], "metadata": {**metadata, "mem0": kept}}
    check_unit(unit, n, where)  # every import's rules (a NUL character, sizes), named by mem0's id
    return unit


def _optional_text(memory: Mapping[str, Any], key: str) -> str | None:
    value = memory.get(key)
    if value is not None and not isinstance(value, str):
        raise InvalidInputError(f"{key} must be a string")
    return value or None


def _time(value: object, key: str) -> None:
    if not isinstance(value, str):
        raise InvalidInputError(f"{key} must be an ISO 8601 time")
    try:
        parse_time(value)
    except (InvalidInputError, ValueError) as exc:
        raise InvalidInputError(f"{key} is not a time ({exc})") from None
