"""Reading a mem0 export: the memories ``get_all`` returns, turned into an omnimem dump.

mem0's ``get_all`` answers a list of memories or ``{"results": [...]}`` (its
platform pages the list the same way). Each memory is an object with ``id``
(a UUID), ``memory`` (the text), ``user_id``, ``agent_id``, ``run_id``,
``metadata``, ``created_at``, ``updated_at`` and ``hash``, and sometimes
``actor_id``, ``role``, ``app_id``, ``categories``. Each becomes one text unit of
an ``omnimem-export`` dump, which :func:`omnimem.engine.governance.import_records`
then validates and stores like any dump (all or nothing):

* ``id`` stays the unit's id (importing the same export twice adds nothing);
* ``memory`` is the text; ``user_id`` and ``agent_id`` keep their names,
  ``run_id`` becomes ``session_id``;
* ``created_at`` is the event time (so time filters and "last week" see the
  memory when mem0 made it), ``updated_at`` the record time;
* ``metadata`` stays the unit's metadata, with mem0's other fields under its
  ``"mem0"`` key (``hash``, ``updated_at``, ``actor_id``, ``role``, ``app_id``,
  ``categories``, as present).

A memory that is not of that shape is a :class:`MalformedDataError` naming it
(``record N (id ...)``, N counting from 1 in the export), before anything is stored.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from omnimem.engine.ingest.dump import FORMAT, VERSION
from omnimem.errors import InvalidInputError, MalformedDataError
from omnimem.timeparse import parse_time

_SCOPE = {"user_id": "user_id", "agent_id": "agent_id", "run_id": "session_id"}
_KEPT = ("hash", "updated_at", "actor_id", "role", "app_id", "categories")  # under metadata["mem0"]


def memories_of(export: object) -> list[Mapping[str, Any]]:
    """The memories of a mem0 export: a list, or an object with a ``results`` list."""
    if isinstance(export, Mapping):
        if not isinstance(export.get("results"), list):
            raise MalformedDataError('a mem0 export is a list of memories or {"results": [...]}')
        export = export["results"]
    if isinstance(export, str | bytes) or not isinstance(export, Iterable):
        raise MalformedDataError('a mem0 export is a list of memories or {"results": [...]}')
    return list(export)


def to_dump(export: object) -> list[dict[str, Any]]:
    """An ``omnimem-export`` dump holding the memories of a mem0 export (unit record N is memory N)."""
    units = [_unit(memory, n) for n, memory in enumerate(memories_of(export), start=1)]
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
    kept = {key: memory[key] for key in _KEPT if memory.get(key) is not None}
    return {"kind": "unit", "id": uid, "modality": "text", "text": text, **scope, "event_time": created,
            "record_time": updated or created, "metadata": {**metadata, **({"mem0": kept} if kept else {})}}


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
