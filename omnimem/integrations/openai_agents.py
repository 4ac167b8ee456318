"""The OpenAI Agents SDK over omnimem (the ``[openai-agents]`` extra): a ``Session`` and a memory tool.

``OmnimemSession(memory, session_id=..., user_id=...)`` implements the SDK's
``Session`` protocol (``get_items``, ``add_items``, ``pop_item``,
``clear_session``), so ``Runner.run(agent, input, session=...)`` keeps the
conversation in omnimem:

- each item is one text unit in the scope (``user_id``, ``agent_id``,
  ``session_id``); the item itself round-trips exactly through the unit's
  metadata with its position in the conversation, and the unit's text (what
  search matches) is the item's words: a message's text, a tool call's name and
  arguments, a tool's output;
- items are stored whole: the novelty filter, which drops text that repeats the
  last turns, is off for them (a conversation keeps every "yes");
- only units this session wrote are read back, popped or cleared, and only from
  its exact scope;
- positions are unique per conversation across session objects, threads and
  processes: a position is part of its unit's id, so of two writers that take
  the same one, the second stores nothing and tries again after the first.

``memory_tool(memory, user_id=...)`` is a function tool, ``search_memory``, that
returns the pyramid context of a search in its scope (``min_trust=``: only units
at least that trusted). Both take any ``Memory``, a remote
``Memory(url="http://...")`` too: the session writes with
:meth:`omnimem.Memory.put`. ``docs/openai-agents.md`` shows both.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from omnimem.errors import ConfigError, InvalidInputError, NotFoundError, StoreError, WriteConflictError, missing_extra

try:
    from agents import FunctionTool, function_tool
    from agents.memory import SessionSettings
except ImportError:
    raise missing_extra("openai-agents", "openai-agents") from None

from omnimem.contract import MAX_PUT  # a put of up to this many items is one transaction
from omnimem.contract.checks import clean_id, floor, make_scope
from omnimem.mau import MAU
from omnimem.integrations import explicit_scope, writing_as
from omnimem.memory import Memory

META = "openai_agents"  # the metadata key that holds an item and its position: {"seq": n, "item": {...}}
PAGE = 1000  # units read per page
ATTEMPTS = 100  # tries of one batch against other writers taking the same positions


class OmnimemSession:
    """The SDK's ``Session`` protocol kept in an omnimem :class:`~omnimem.Memory` (local or remote).

    ``user_id`` is required (the conversation belongs to someone); ``agent_id``
    is optional and, when given, is part of the scope too. ``session_settings``
    is the SDK's (its ``limit`` bounds what ``get_items()`` returns).
    """

    def __init__(self, memory: Any, *, session_id: str, user_id: str, agent_id: str | None = None,
                 session_settings: SessionSettings | None = None) -> None:
        if not isinstance(memory, Memory):
            raise ConfigError(f"OmnimemSession needs an omnimem Memory, got {type(memory).__name__}")
        if user_id is None:
            raise InvalidInputError("OmnimemSession needs a user_id: a conversation belongs to someone")
        self.memory: Any = memory
        self.session_id: str = clean_id(session_id, "session_id") or ""
        self.user_id: str = clean_id(user_id, "user_id") or ""
        self.agent_id = clean_id(agent_id, "agent_id")
        if not self.session_id:
            raise InvalidInputError("session_id must be a non-empty string")
        self.session_settings = session_settings
        self._lock = threading.Lock()  # one change of this object at a time (other objects and processes: the ids)

    # -- the Session protocol ------------------------------------------------------------------------
    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The conversation in order; with ``limit`` (or the settings' limit) its latest ``limit`` items."""
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise InvalidInputError(f"limit must be a whole number >= 0 or None, got {limit!r}")
        items = [_record(u)["item"] for u in await asyncio.to_thread(self._units)]
        return items if limit is None else items[-limit:] if limit else []

    async def add_items(self, items: list[Any]) -> None:
        """Append items (the SDK's input items: JSON mappings) to the conversation, in order."""
        if isinstance(items, Mapping) or not isinstance(items, Sequence):
            raise InvalidInputError("add_items takes a list of items")
        if items:
            await asyncio.to_thread(self._add, list(items))

    async def pop_item(self) -> Any:
        """Remove the latest item and return it; None when the conversation is empty."""
        return await asyncio.to_thread(self._pop)

    async def clear_session(self) -> None:
        """Remove every item of this session, with no residue (:meth:`omnimem.Memory.forget`)."""
        await asyncio.to_thread(self._clear)

    # -- the work, on a worker thread -----------------------------------------------------------------
    def _scope(self) -> dict[str, Any]:
        return {"user_id": self.user_id, "agent_id": self.agent_id, "session_id": self.session_id}

    def _units(self) -> list[MAU]:
        """This session's item units, in conversation order."""
        scope, found, offset = self._scope(), [], 0
        while True:
            page = self.memory.units(limit=PAGE, offset=offset, **scope)
            found += [u for u in page if u.scope == make_scope(**scope) and isinstance(u.metadata.get(META), dict)]
            if len(page) < PAGE:
                return sorted(found, key=lambda u: _record(u)["seq"])
            offset += PAGE

    def _add(self, items: list[Any]) -> None:
        checked = [_item(i, n) for n, i in enumerate(items)]
        with self._lock:
            for start in range(0, len(checked), MAX_PUT):  # a put is one transaction of the store
                self._append(checked[start:start + MAX_PUT])

    def _append(self, items: list[dict[str, Any]]) -> None:
        """Store ``items`` after the session's last position, in one transaction of the store.

        A position is part of its unit's id (:meth:`_position_id`), so of two writers that read the same last
        position (two sessions on one conversation, two processes) only one can store it: the other's
        transaction fails on the store's unique unit id, stores nothing, and is tried again after the
        positions the first one took.
        """
        with writing_as("openai-agents"):  # redact_pii: the facade redacts the item as stored and as read back
            self._append_once(items)

    def _append_once(self, items: list[dict[str, Any]]) -> None:
        for _ in range(ATTEMPTS):
            units = self._units()
            start = _record(units[-1])["seq"] + 1 if units else 0
            now = datetime.now(timezone.utc)
            pending = []
            for seq, item in enumerate(items, start):
                speaker = item.get("role") or item.get("type") or "item"
                pending.append({"text": item_text(item) or str(speaker), "time": now, "speaker": str(speaker),
                                "source_id": f"{self.session_id}#{seq}", "id": self._position_id(seq),
                                "metadata": {META: {"seq": seq, "item": item}}, "source": item_source(item)})
            try:
                results = self.memory.put(pending, allow_forgotten=True, **self._scope())
            except StoreError:
                if not {p["id"] for p in pending} & {u.id for u in self._units()}:
                    raise  # not a position another writer took
                continue
            for result in results:
                if not result.accepted:
                    raise StoreError(f"the session {self.session_id!r} did not keep an item: {result.reason}")
            return
        raise WriteConflictError(f"the session {self.session_id!r} lost every position it tried to other writers "
                                 f"({ATTEMPTS} tries); nothing of this add_items was stored; the call can be repeated")

    def _position_id(self, seq: int) -> str:
        """The unit id of position ``seq`` of this conversation: the same in every session object and process."""
        key = json.dumps(["openai-agents", self.user_id, self.agent_id, self.session_id, seq])
        return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]

    def _pop(self) -> Any:
        with self._lock:
            for _ in range(ATTEMPTS):
                units = self._units()
                if not units:
                    return None
                last = units[-1]
                try:
                    self.memory.delete(last.id, reason="openai-agents session pop_item", **self._scope())
                except NotFoundError:  # another session object or process popped it first: pop the next one
                    continue
                return _record(last)["item"]
            raise WriteConflictError(f"the session {self.session_id!r} lost every item it tried to pop to other "
                                     f"writers ({ATTEMPTS} tries); the call can be repeated")

    def _clear(self) -> None:
        with self._lock:
            ids = [u.id for u in self._units()]
            if ids:
                self.memory.forget(unit_ids=ids, reason="openai-agents session clear_session", **self._scope())


def memory_tool(memory: Any, *, user_id: str | None = None, agent_id: str | None = None,
                session_id: str | None = None, budget: int | None = None, top_k: int | None = None,
                name: str = "search_memory", all_users: bool = False, min_trust: str | None = None) -> FunctionTool:
    """A function tool that searches ``memory`` in the given scope and returns the pyramid context.

    The model calls it with a ``query``; the answer is :meth:`omnimem.Context.render`'s text (one
    ``[time] speaker: text`` line per memory, best first, within ``budget`` tokens), or a line saying
    nothing was found. Any ``Memory`` works, a remote one too. The tool names its ``user_id``, or
    ``all_users=True`` searches every user's memory; neither is a :class:`~omnimem.errors.ConfigError`.
    """
    explicit_scope("memory_tool", user_id, all_users)
    make_scope(user_id, agent_id, session_id)  # bad ids fail here, not in the middle of a run
    trust_floor = floor(min_trust)

    async def search_memory(query: str) -> str:
        """Search the user's long-term memory (earlier conversations, facts, preferences).

        Args:
            query: What to look for, in words.
        """
        ctx = await asyncio.to_thread(memory.search, query, top_k=top_k, budget=budget, user_id=user_id,
                                      agent_id=agent_id, session_id=session_id, min_trust=trust_floor)
        return str(ctx.render()) if ctx.hits else "No memories found."

    return function_tool(search_memory, name_override=name)


def item_source(item: Mapping[str, Any]) -> str:
    """What an SDK item is: a tool's output (a function call's output, a ``tool`` message), the user's words or
    the assistant's (its messages, calls and reasoning)."""
    if item.get("role") == "tool" or str(item.get("type", "")).endswith("_output"):
        return "tool"
    return "user" if item.get("role") == "user" else "assistant"


def item_text(item: Mapping[str, Any]) -> str:
    """The words of an SDK item that search should match: message text, a call and its arguments, an output."""
    parts: list[str] = []
    content = item.get("content")
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):
        parts += [p["text"] for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str)]
        parts += [p["refusal"] for p in content if isinstance(p, Mapping) and isinstance(p.get("refusal"), str)]
    if isinstance(item.get("name"), str):
        parts.append(f"{item['name']}({item.get('arguments') or ''})")
    output = item.get("output")
    if isinstance(output, str):
        parts.append(output)
    for piece in item.get("summary") or ():  # reasoning items
        if isinstance(piece, Mapping) and isinstance(piece.get("text"), str):
            parts.append(piece["text"])
    return "\n".join(p for p in parts if p.strip())


def _item(item: object, position: int) -> dict[str, Any]:
    if not isinstance(item, Mapping):
        raise InvalidInputError(f"item {position} must be a mapping (an SDK input item), got {type(item).__name__}")
    return dict(item)


def _record(unit: MAU) -> dict[str, Any]:
    record: dict[str, Any] = unit.metadata[META]
    return record
