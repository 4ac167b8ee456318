"""Google ADK over omnimem (the ``[adk]`` extra): ``OmnimemMemoryService``, a ``BaseMemoryService``.

``Runner(..., memory_service=OmnimemMemoryService(memory))`` gives an ADK agent
omnimem's memory: ADK's ``load_memory`` and ``preload_memory`` tools, and
``search_memory`` on a tool's or callback's context, search it; ADK's
``add_session_to_memory`` (from a callback, or called on the service) stores a
session in it.

- The scope is ADK's own: a session of user ``u`` in app ``a`` is kept as
  omnimem's ``user_id=u``, ``agent_id=a``, ``session_id=<the session id>``, and
  a search names ADK's ``app_name`` and ``user_id``, so one user's search never
  reads another's memory. ``all_users=True`` makes a service whose searches
  read every user's memory of the app (writes still belong to their user).
- What is kept of a session: each event's text (its text parts; thoughts, tool
  calls and tool results are left out, so what ``load_memory`` returned is not
  stored again as a memory), one unit per event, its author the speaker, its
  time the event's. The event id is the unit's source id: a session added again,
  or grown since, stores each event once.
- A search returns one ``MemoryEntry`` per hit of the pyramid context, best
  first: its text as the pyramid rendered it (the speaker moved to ``author``),
  ``timestamp`` the event time (ISO 8601), ``id`` the unit id, and
  ``custom_metadata`` what :func:`omnimem.integrations.hit_metadata` says of the
  hit, with the ``session_id`` it came from and the metadata stored with it.

The service takes any ``Memory``: in memory, a folder, PostgreSQL, or a server
through ``Memory(url="http://...")``. ``docs/adk.md`` shows it in a runner.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from omnimem.errors import ConfigError, InvalidInputError, missing_extra

try:
    from google.adk.events import Event
    from google.adk.memory import BaseMemoryService
    from google.adk.memory.base_memory_service import SearchMemoryResponse
    from google.adk.memory.memory_entry import MemoryEntry
    from google.adk.sessions import Session
    from google.genai import types
except ImportError:
    raise missing_extra("google-adk", "adk") from None

from omnimem.context import Context, Hit
from omnimem.contract.checks import floor
from omnimem.integrations import clip_query, hit_metadata, writing_as


class OmnimemMemoryService(BaseMemoryService):  # type: ignore[misc,unused-ignore]  # Any without the extra
    """ADK's memory service kept in an omnimem ``Memory``.

    ``top_k`` (hits) and ``budget`` (tokens of the packed context) bound each
    search and default to the memory's settings. ``all_users=True``: searches
    read every user's memory of the app, not only the searching user's.
    """

    def __init__(self, memory: Any, *, top_k: int | None = None, budget: int | None = None,
                 all_users: bool = False, min_trust: str | None = None) -> None:
        if not isinstance(all_users, bool):
            raise InvalidInputError(f"all_users must be True or False, got {all_users!r}")
        self.memory, self.min_trust = memory, floor(min_trust)  # searches: only units at least this trusted
        self.top_k, self.budget, self.all_users = top_k, budget, all_users

    # -- writes --------------------------------------------------------------------------------------
    async def add_session_to_memory(self, session: Session) -> None:
        """Store the session's events (ADK may add a session many times: each event is stored once)."""
        if not isinstance(session, Session):
            raise InvalidInputError(f"add_session_to_memory takes an ADK Session, got {type(session).__name__}")
        await asyncio.to_thread(self._store, session.app_name, session.user_id, session.events, session.id, None)

    async def add_events_to_memory(self, *, app_name: str, user_id: str, events: Sequence[Event],
                                   session_id: str | None = None,
                                   custom_metadata: Mapping[str, object] | None = None) -> None:
        """Store some events of a session (a delta); ``custom_metadata`` is kept with each of them."""
        if isinstance(events, Event) or not isinstance(events, Sequence):
            raise InvalidInputError("add_events_to_memory takes a list of ADK Events")
        await asyncio.to_thread(self._store, app_name, user_id, events, session_id, custom_metadata)

    async def add_memory(self, *, app_name: str, user_id: str, memories: Sequence[MemoryEntry],
                         custom_metadata: Mapping[str, object] | None = None) -> None:
        """Store memories written directly (their text; ``author`` the speaker, ``timestamp`` the time)."""
        if isinstance(memories, MemoryEntry) or not isinstance(memories, Sequence):
            raise InvalidInputError("add_memory takes a list of ADK MemoryEntry")
        turns = []
        for index, entry in enumerate(memories):
            if not isinstance(entry, MemoryEntry):
                raise InvalidInputError(f"memory {index} is not an ADK MemoryEntry")
            text = _text(entry.content)
            if not text:
                raise InvalidInputError(f"memory {index} has no text")
            turns.append(_turn(text, entry.author, entry.timestamp, entry.id, custom_metadata))
        await asyncio.to_thread(self._add, app_name, user_id, None, turns)

    async def delete_memory(self, *, app_name: str, user_id: str, memory_id: str | None = None) -> None:
        """Remove one memory (a ``MemoryEntry.id``) of this user and app, with no residue; None removes nothing."""
        if memory_id is not None:
            await asyncio.to_thread(self.memory.delete, memory_id, reason="ADK delete_memory", user_id=user_id,
                                    agent_id=app_name)

    def _store(self, app_name: str, user_id: str, events: Sequence[Any], session_id: str | None,
               custom_metadata: Mapping[str, object] | None) -> None:
        turns = []
        for index, event in enumerate(events):
            if not isinstance(event, Event):
                raise InvalidInputError(f"event {index} is not an ADK Event")
            text = _text(event.content)
            if text:
                when = datetime.fromtimestamp(event.timestamp, timezone.utc)
                turns.append(_turn(text, event.author, when, event.id, custom_metadata))
        self._add(app_name, user_id, session_id, turns)

    def _add(self, app_name: str, user_id: str, session_id: str | None, turns: list[dict[str, Any]]) -> None:
        _named(user_id, "user_id")
        if turns:
            with writing_as("adk"):
                self.memory.add_dialogue(turns, user_id=user_id, agent_id=app_name, session_id=session_id)

    # -- reads ---------------------------------------------------------------------------------------
    async def search_memory(self, *, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        """The memories of this user (every user with ``all_users=True``) in this app for a query, best first."""
        context = await asyncio.to_thread(self.search, query, app_name=app_name, user_id=user_id)
        return SearchMemoryResponse(memories=[to_entry(hit) for hit in context.hits])

    def search(self, query: str, *, app_name: str, user_id: str) -> Context:
        """The pyramid context the entries come from (its token count, what was dropped)."""
        _named(user_id, "user_id")
        return self.memory.search(  # type: ignore[no-any-return]
            clip_query(self.memory, query), top_k=self.top_k, budget=self.budget, user_id=None if self.all_users else user_id,
            agent_id=app_name, min_trust=self.min_trust,
        )


def to_entry(hit: Hit) -> MemoryEntry:
    """One pyramid hit as an ADK ``MemoryEntry``."""
    unit = hit.unit
    text = hit.render()
    if unit.speaker and text.startswith(f"{unit.speaker}: "):
        text = text[len(unit.speaker) + 2:]  # ADK shows "author: text" itself
    role = "user" if unit.speaker == "user" else "model"
    metadata = {**hit_metadata(hit), "session_id": unit.scope.session_id, "metadata": dict(unit.metadata)}
    return MemoryEntry(content=types.Content(role=role, parts=[types.Part(text=text)]), custom_metadata=metadata,
                       id=unit.id, author=unit.speaker,
                       timestamp=None if unit.event_time is None else unit.event_time.isoformat())


def _text(content: types.Content | None) -> str:
    """The words of an event or entry: its text parts (not thoughts), joined."""
    if content is None or not content.parts:
        return ""
    return "\n".join(p.text.strip() for p in content.parts if p.text and p.text.strip() and not p.thought)


def _turn(text: str, author: str | None, when: object, source_id: str | None,
          custom_metadata: Mapping[str, object] | None) -> dict[str, Any]:
    turn: dict[str, Any] = {"text": text, "speaker": author or None, "time": when, "id": source_id or None}
    if custom_metadata is not None:
        if not isinstance(custom_metadata, Mapping):
            raise InvalidInputError("custom_metadata must be a mapping")
        turn["metadata"] = dict(custom_metadata)
    return turn


def _named(user_id: object, what: str) -> None:
    """ADK always names the user a memory belongs to: a missing one is a scope left out, not "every user"."""
    if user_id is None or (isinstance(user_id, str) and not user_id.strip()):
        raise ConfigError(f"OmnimemMemoryService needs ADK's {what}: whose memory it is")
