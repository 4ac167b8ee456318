"""``OmnimemStore``: a LangGraph long-term memory store kept in omnimem (the ``[langgraph]`` extra).

A real ``langgraph.store.base.BaseStore``: pass it to ``graph.compile(store=...)``
and nodes read and write it through LangGraph's own API (``get``, ``put``,
``delete``, ``search``, ``list_namespaces`` and their ``a``-versions, all
through :meth:`OmnimemStore.batch`). ``search(namespace, query=...)`` runs
omnimem's hybrid retrieval (dense + BM25) and returns scored ``SearchItem``\\ s.

How items map onto omnimem (``docs/langgraph.md``):

- an item is one text unit; its value (any JSON object) round-trips exactly
  through the unit's metadata, with its namespace, key and creation time; the
  unit's text, which search matches, is the value's fields as ``path: value``
  lines (only the fields named by ``index=`` when given);
- the namespace's first label is the unit's ``user_id``, the rest (as JSON)
  its ``agent_id``, the key its ``session_id``: omnimem's scope filter keeps
  one namespace's items out of another's searches inside the index, and every
  result is checked against the exact namespace and key kept in the metadata;
- a label is an exact string, and omnimem's ids are trimmed and NFC-normalised,
  so a put whose first label is not already in that form (``"ann "``, a tab,
  U+3000, an NFD spelling) is refused: no spelling of a label reaches another
  user's memory. Deeper labels and keys may share an omnimem scope with their
  other spellings; an item is found by its exact namespace and key whatever
  else shares the scope;
- a put of an existing key stores a new unit that supersedes the old one
  (history kept, search sees the latest); ``put(..., None)`` / ``delete``
  removes every version with zero residue (:meth:`omnimem.Memory.delete`).

Puts bypass the novelty filter (a store keeps what it is given): each is one
:meth:`omnimem.Memory.put`, so the store works on any ``Memory``: in memory,
a folder, PostgreSQL, or a server (``Memory(url="http://...")``). A search may
take a trust floor (``min_trust=``, as :meth:`omnimem.Memory.search`).

With ``redact_pii`` the facade redacts an item's value and also any personal
data in its namespace labels and key as kept in the metadata; the item stays
reachable by its exact namespace and key through its ``source_id``, a digest
of them.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime, timezone
from typing import Any

from omnimem.errors import ConfigError, InvalidInputError, NotFoundError, StoreError, missing_extra

try:
    from langgraph.store.base import (BaseStore, GetOp, Item, ListNamespacesOp, MatchCondition, Op, PutOp, Result,
                                      SearchItem, SearchOp)
except ImportError:
    raise missing_extra("langgraph", "langgraph") from None

from omnimem.contract.checks import clean_id, floor
from omnimem.integrations import writing_as
from omnimem.mau import MAU
from omnimem.memory import Memory

META = "langgraph"  # the metadata key that holds an item (namespace, key, value, created_at)
PAGE = 500  # units read per page when listing
PUT_ATTEMPTS = 8  # a put that lost a race with another put of the same item reads the new version and tries again


class OmnimemStore(BaseStore):
    """LangGraph's ``BaseStore`` over an omnimem :class:`~omnimem.Memory`.

    ``budget`` (tokens) bounds the pyramid context a query search packs before
    its hits become items (default: the memory's setting); a search returns at
    most ``limit`` items of it, only of units at least ``min_trust`` trusted when given.
    """

    __slots__ = ("memory", "budget", "min_trust")

    def __init__(self, memory: Any, *, budget: int | None = None, min_trust: str | None = None) -> None:
        if not isinstance(memory, Memory):
            raise ConfigError(f"OmnimemStore needs an omnimem Memory, got {type(memory).__name__}")
        self.memory: Any = memory  # typed as given: its verbs take the scope as a **mapping
        self.budget = budget
        self.min_trust = floor(min_trust)

    # -- LangGraph's entry points ------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order; results in the same order (None for puts)."""
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op.namespace, op.key))
            elif isinstance(op, PutOp):
                self._put(op)
                results.append(None)
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                raise InvalidInputError(f"unknown store operation {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` on a worker thread (omnimem's calls block)."""
        return await asyncio.to_thread(self.batch, list(ops))

    # -- operations ---------------------------------------------------------------------------------
    def _get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        versions = self._versions(namespace, key)
        if not versions:
            return None
        item = _item(max(versions, key=lambda u: u.record_time))
        item.namespace, item.key = namespace, key  # exact, as asked (the metadata's copy may be redacted)
        return item

    def _put(self, op: PutOp) -> None:
        namespace, key = _namespace(op.namespace), _key(op.key)
        if op.value is None:
            self._delete(namespace, key)
            return
        if not isinstance(op.value, Mapping):
            raise InvalidInputError(f"a store value must be a mapping, got {type(op.value).__name__}")
        _check_user_label(namespace[0])
        for attempt in range(PUT_ATTEMPTS):
            try:
                result = self._put_once(namespace, key, op)
                break
            except NotFoundError:  # another put of the same item superseded the version read: read it again
                if attempt == PUT_ATTEMPTS - 1:
                    raise StoreError(f"{key!r} in {namespace} kept changing under {PUT_ATTEMPTS} puts at once; "
                                     "try again") from None
        if not result.accepted:
            raise StoreError(f"the store did not keep {key!r} in {namespace}: {result.reason}")

    def _put_once(self, namespace: tuple[str, ...], key: str, op: PutOp) -> Any:
        """Write ``op``'s value as the item's new version, superseding the versions read just before."""
        versions = self._versions(namespace, key)
        old = max(versions, key=lambda u: u.record_time) if versions else None
        scope = _scope_args(namespace, key)
        now = datetime.now(timezone.utc)
        created = old.metadata[META]["created_at"] if old is not None else now.isoformat()
        assert op.value is not None
        record = {"namespace": list(namespace), "key": key, "value": dict(op.value), "created_at": created}
        text = render(op.value, None if op.index is None or op.index is False else list(op.index)) or key
        item = {"text": text, "time": now, "source_id": _item_id(namespace, key), "metadata": {META: record},
                "supersedes": [u.id for u in versions]}
        with writing_as("langgraph"):  # redact_pii: the facade redacts the text and the record
            return self.memory.put([item], allow_forgotten=True, **scope)[0]

    def _delete(self, namespace: tuple[str, ...], key: str) -> None:
        """Remove every version of the item (zero residue); a missing item is a no-op, as in LangGraph."""
        scope = _scope_args(namespace, key)
        for unit in self._versions(namespace, key):
            try:
                self.memory.delete(unit.id, chain=True, reason="langgraph store delete", **scope)
            except NotFoundError:
                pass  # already gone with an earlier version's chain
        if self._versions(namespace, key):
            raise StoreError(f"the store could not delete {key!r} in {namespace}: a version is still stored")

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        wanted = op.offset + op.limit
        if op.query:
            settings = self.memory.settings  # None on a remote Memory: the server's default top_k (0, the budget)
            ctx = self.memory.search(op.query, top_k=max(settings.top_k if settings else 0, wanted * 2),
                                     budget=self.budget, min_trust=self.min_trust, **_prefix_scope(prefix))
            hits = sorted(ctx.hits, key=lambda h: h.rank)
            found = [SearchItem(**_fields(h.unit), score=float(h.score)) for h in hits if _holds(h.unit, prefix)]
        else:  # no query: the newest first, as LangGraph's own stores list
            found = [SearchItem(**_fields(u)) for u in self._units(prefix)]
            found.sort(key=lambda i: i.updated_at, reverse=True)
        if op.filter:
            found = [i for i in found if all(_matches(i.value.get(k), v) for k, v in op.filter.items())]
        return found[op.offset:wanted]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        seen: set[tuple[str, ...]] = set()
        for unit in self._units(()):
            namespace = tuple(unit.metadata[META]["namespace"])
            if all(_namespace_matches(c, namespace) for c in op.match_conditions or ()):
                seen.add(namespace[:op.max_depth] if op.max_depth is not None else namespace)
        return sorted(seen)[op.offset:op.offset + op.limit]

    # -- reading units ------------------------------------------------------------------------------
    def _versions(self, namespace: tuple[str, ...], key: str) -> list[MAU]:
        """The current (not superseded) units holding exactly (namespace, key): normally one.

        Every unit of the omnimem scope is read, since other spellings of the deeper labels and the key
        (``" k"`` and ``"k"``, NFD and NFC) share it; only the exact namespace and key kept in each unit's
        metadata decide. A namespace whose first label a put now refuses is still read exactly: an item an
        older omnimem stored under it can be read and deleted.
        """
        return [u for u in self._every_unit(_scope_args(namespace, key)) if _is_item(u, namespace, key)]

    def _units(self, prefix: tuple[str, ...]) -> Iterator[MAU]:
        """Every current item unit under ``prefix``."""
        return (u for u in self._every_unit(_prefix_scope(prefix)) if _holds(u, prefix))

    def _every_unit(self, scope: dict[str, str]) -> Iterator[MAU]:
        """Every current unit of an omnimem scope, page by page."""
        offset = 0
        while True:
            page = self.memory.units(limit=PAGE, offset=offset, **scope)
            yield from page
            if len(page) < PAGE:
                return
            offset += PAGE


# -- the mapping ------------------------------------------------------------------------------------
def _namespace(namespace: tuple[str, ...]) -> tuple[str, ...]:
    if not namespace or not all(isinstance(label, str) and label.strip() for label in namespace):
        raise InvalidInputError(f"a namespace is a non-empty tuple of non-empty strings, got {namespace!r}")
    return tuple(namespace)


def _check_user_label(label: str) -> None:
    """Refuse a first label that omnimem's user id would change (trimmed, NFC): it would reach that user."""
    if clean_id(label, "a namespace's first label") != label:  # an invisible or too long label: its own message
        raise InvalidInputError(
            f"namespace label {label!r} is not in canonical form: the first label is kept as omnimem's user_id, "
            "which has no leading or trailing whitespace and is NFC-normalised "
            f"(did you mean {unicodedata.normalize('NFC', label.strip())!r}?)")


def _key(key: object) -> str:
    if not isinstance(key, str) or not key.strip():
        raise InvalidInputError(f"a key is a non-empty string, got {key!r}")
    return key


def _rest(labels: tuple[str, ...]) -> str:
    return json.dumps(list(labels), ensure_ascii=False)  # unambiguous: ("a/b",) and ("a", "b") differ


def _scope_args(namespace: tuple[str, ...], key: str) -> dict[str, str]:
    return {"user_id": namespace[0], "agent_id": _rest(namespace[1:]), "session_id": key}


def _prefix_scope(prefix: tuple[str, ...]) -> dict[str, str]:
    """The omnimem scope that contains every namespace under ``prefix``: its first label's user.

    Deeper labels are checked on each result (an agent id matches exactly, a prefix must also see the
    namespaces below it).
    """
    return {"user_id": prefix[0]} if prefix else {}


def _holds(unit: MAU, prefix: tuple[str, ...]) -> bool:
    """Whether ``unit`` is a store item whose namespace starts with ``prefix``."""
    record = unit.metadata.get(META)
    return isinstance(record, dict) and tuple(record.get("namespace", ()))[:len(prefix)] == prefix


def _is_item(unit: MAU, namespace: tuple[str, ...], key: str) -> bool:
    record = unit.metadata.get(META)
    if not isinstance(record, dict):
        return False
    if unit.source_ids:  # its digest of the exact namespace and key
        return unit.source_ids[0] == _item_id(namespace, key)
    return tuple(record.get("namespace", ())) == namespace and record.get("key") == key  # stored before digests


def _item_id(namespace: tuple[str, ...], key: str) -> str:
    """An item's source id: a digest of its exact namespace and key (no spelling of either is another's)."""
    return "langgraph:" + hashlib.sha256(json.dumps([list(namespace), key]).encode("utf-8")).hexdigest()[:40]


def _fields(unit: MAU) -> dict[str, Any]:
    record = unit.metadata[META]
    updated = unit.event_time or unit.record_time
    return {"namespace": tuple(record["namespace"]), "key": record["key"], "value": record["value"],
            "created_at": datetime.fromisoformat(record["created_at"]), "updated_at": updated}


def _item(unit: MAU) -> Item:
    return Item(**_fields(unit))


def render(value: Mapping[str, Any], paths: list[str] | None = None) -> str:
    """The text a value is searched by: ``path: value`` lines of its leaves (of ``paths`` only, when given)."""
    lines: list[str] = []
    if paths is None:
        _leaves(value, "", lines)
    else:
        for path in paths:
            for found in _select(value, path.split(".")):
                _leaves(found, path, lines)
    return "\n".join(lines)


def _leaves(value: Any, path: str, out: list[str]) -> None:
    if isinstance(value, Mapping):
        for k, v in value.items():
            _leaves(v, f"{path}.{k}" if path else str(k), out)
    elif isinstance(value, list | tuple):
        for v in value:
            _leaves(v, path, out)
    elif value is not None and str(value).strip():
        out.append(f"{path}: {value}" if path else str(value))


def _select(value: Any, parts: list[str]) -> Iterator[Any]:
    """The values at a LangGraph field path (``a.b``, ``a[*].b``, ``a[0]``, ``a[-1]``)."""
    if not parts:
        yield value
        return
    head, rest = parts[0], parts[1:]
    name, _, index = head.partition("[")
    if not isinstance(value, Mapping) or name not in value:
        return
    inner = value[name]
    if not index:
        yield from _select(inner, rest)
    elif isinstance(inner, list):
        position = index.rstrip("]")
        chosen = inner if position == "*" else inner[int(position):][:1] if position.lstrip("-").isdigit() else []
        for element in chosen:
            yield from _select(element, rest)


def _namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    part = namespace[:len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path):]
    return all(p == "*" or p == n for p, n in zip(path, part))


def _matches(value: Any, wanted: Any) -> bool:
    """LangGraph's filter semantics: equality, nested objects, and $eq/$ne/$gt/$gte/$lt/$lte."""
    if isinstance(wanted, Mapping):
        if any(str(k).startswith("$") for k in wanted):
            return all(_compare(value, op, operand) for op, operand in wanted.items())
        return isinstance(value, Mapping) and all(_matches(value.get(k), v) for k, v in wanted.items())
    return bool(value == wanted)


def _compare(value: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return bool(value == operand)
    if op == "$ne":
        return bool(value != operand)
    if value is None:
        return False
    checks = {"$gt": float.__gt__, "$gte": float.__ge__, "$lt": float.__lt__, "$lte": float.__le__}
    if op not in checks:
        raise InvalidInputError(f"unknown filter operator {op!r}; use $eq, $ne, $gt, $gte, $lt or $lte")
    return bool(checks[op](float(value), float(operand)))
