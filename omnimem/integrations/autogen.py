"""AutoGen over omnimem (the ``[autogen]`` extra): ``OmnimemMemory``, an ``autogen_core.memory.Memory``.

``AssistantAgent(..., memory=[OmnimemMemory(memory, user_id="ana")])`` gives an
AutoGen agent omnimem's memory: before each inference the agent calls
``update_context``, which searches the memory for the latest message's text and
adds the pyramid context of that search (within ``budget`` tokens) to the
model's context as one ``SystemMessage``.

- ``add(MemoryContent)`` remembers one text unit in the memory's scope (its
  time: when it was added): ``text/plain`` and ``text/markdown`` content as
  given, ``application/json`` content as its JSON text (so search matches its
  words) with the object itself kept whole; the MIME type and the content's
  metadata are kept with the unit. Images and bytes are refused
  (``InvalidInputError``): ``Memory.add_image`` stores images.
- ``query(text)`` returns one ``MemoryContent`` per hit of the pyramid context,
  best first: the hit's text as the pyramid rendered it (a JSON object as
  stored), its metadata the stored metadata with, over it, what
  :func:`omnimem.integrations.hit_metadata` says of the hit and the unit ``id``.
- ``clear()`` forgets every unit of the memory's scope with no residue
  (:meth:`omnimem.Memory.forget`); ``close()`` leaves the omnimem ``Memory``
  open: it is the caller's, who closes it.
- A memory names its ``user_id`` (and may name ``agent_id``, ``session_id``);
  ``all_users=True`` instead makes a read-only memory over every user's
  memories (``add`` and ``clear`` on it are a ``ConfigError``); neither is a
  ``ConfigError``.

It takes any ``Memory``: in memory, a folder, PostgreSQL, or a server through
``Memory(url="http://...")``. ``docs/autogen.md`` shows it in an agent.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from omnimem.errors import ConfigError, InvalidInputError, missing_extra

try:
    from autogen_core import CancellationToken
    from autogen_core.memory import Memory, MemoryContent, MemoryMimeType, MemoryQueryResult, UpdateContextResult
    from autogen_core.model_context import ChatCompletionContext
    from autogen_core.models import LLMMessage, SystemMessage
except ImportError:
    raise missing_extra("autogen-core", "autogen") from None

from omnimem.context import Context, Hit
from omnimem.contract.checks import floor
from omnimem.integrations import clip_query, explicit_scope, hit_metadata, writing_as

META = "autogen"  # the unit metadata key: {"mime_type": ..., "metadata": {...}} and, for JSON, "content"
TEXT_TYPES = (MemoryMimeType.TEXT.value, MemoryMimeType.MARKDOWN.value)
HEADER = "Relevant memory content:\n"  # what the SystemMessage of update_context starts with


class OmnimemMemory(Memory):  # type: ignore[misc,unused-ignore]  # Any without the extra
    """An AutoGen ``Memory`` kept in an omnimem ``Memory``, for one scope.

    ``top_k`` (hits) and ``budget`` (tokens of the packed context) bound each
    search and default to the memory's settings; ``name`` names it (AutoGen's
    ``ListMemory`` has one too).
    """

    def __init__(self, memory: Any, *, user_id: str | None = None, agent_id: str | None = None,
                 session_id: str | None = None, all_users: bool = False, top_k: int | None = None,
                 budget: int | None = None, name: str = "omnimem", min_trust: str | None = None) -> None:
        explicit_scope("OmnimemMemory", user_id, all_users)
        self.memory, self.min_trust = memory, floor(min_trust)  # searches: only units at least this trusted
        self.user_id, self.agent_id, self.session_id = user_id, agent_id, session_id
        self.all_users, self.top_k, self.budget = all_users, top_k, budget
        self.name = name

    # -- the Memory protocol --------------------------------------------------------------------------
    async def add(self, content: MemoryContent, cancellation_token: CancellationToken | None = None) -> None:
        """Remember one piece of content in this memory's scope."""
        text, kept = _stored(content)
        await asyncio.to_thread(self._add, text, kept)

    async def query(self, query: str | MemoryContent = "", cancellation_token: CancellationToken | None = None,
                    **kwargs: Any) -> MemoryQueryResult:
        """The memories for a query, best first (``top_k=`` and ``budget=`` bound this call)."""
        unknown = set(kwargs) - {"top_k", "budget"}
        if unknown:
            raise InvalidInputError(f"unknown query argument(s) {sorted(unknown)}; use top_k or budget")
        text = query if isinstance(query, str) else _text(query)
        context = await asyncio.to_thread(self.search, text, **kwargs)
        return MemoryQueryResult(results=[to_content(hit) for hit in context.hits])

    async def update_context(self, model_context: ChatCompletionContext) -> UpdateContextResult:
        """Add the pyramid context for the latest message's text to the model context, as a ``SystemMessage``."""
        text = _latest_text(await model_context.get_messages())
        if not text:
            return UpdateContextResult(memories=MemoryQueryResult(results=[]))
        context = await asyncio.to_thread(self.search, text)
        if context.hits:
            await model_context.add_message(SystemMessage(content=HEADER + context.render()))
        return UpdateContextResult(memories=MemoryQueryResult(results=[to_content(hit) for hit in context.hits]))

    async def clear(self) -> None:
        """Forget every unit of this memory's scope, with no residue."""
        self._writable("clear")
        await asyncio.to_thread(self.memory.forget, user_id=self.user_id, agent_id=self.agent_id,
                                session_id=self.session_id, reason="AutoGen Memory.clear")

    async def close(self) -> None:
        """Nothing to release: the omnimem ``Memory`` stays open (whoever opened it closes it)."""

    # -- the work, on a worker thread -----------------------------------------------------------------
    def search(self, query: str, *, top_k: int | None = None, budget: int | None = None) -> Context:
        """The pyramid context a query's memories come from (its token count, what was dropped)."""
        return self.memory.search(  # type: ignore[no-any-return]
            clip_query(self.memory, query), top_k=self.top_k if top_k is None else top_k, budget=self.budget if budget is None else budget,
            user_id=self.user_id, agent_id=self.agent_id, session_id=self.session_id, min_trust=self.min_trust,
        )

    def _add(self, text: str, kept: dict[str, Any]) -> None:
        self._writable("add")
        with writing_as("autogen"):
            self.memory.add(text, time=datetime.now(timezone.utc), user_id=self.user_id, agent_id=self.agent_id,
                            session_id=self.session_id, metadata={META: kept})

    def _writable(self, verb: str) -> None:
        if self.user_id is None:
            raise ConfigError(f"OmnimemMemory(all_users=True) reads every user's memory and cannot {verb}: "
                              "give it a user_id to write")


def to_content(hit: Hit) -> MemoryContent:
    """One pyramid hit as an AutoGen ``MemoryContent``."""
    unit = hit.unit
    kept = unit.metadata.get(META)
    kept = kept if isinstance(kept, dict) else {}
    mime = kept.get("mime_type")
    stored = kept.get("metadata")
    metadata = {**(stored if isinstance(stored, dict) else {}), **hit_metadata(hit), "id": unit.id}
    if mime == MemoryMimeType.JSON.value and isinstance(kept.get("content"), dict):
        return MemoryContent(content=kept["content"], mime_type=MemoryMimeType.JSON, metadata=metadata)
    return MemoryContent(content=hit.render(), mime_type=_mime(mime), metadata=metadata)


def _mime(value: object) -> MemoryMimeType:
    return MemoryMimeType.MARKDOWN if value == MemoryMimeType.MARKDOWN.value else MemoryMimeType.TEXT


def _stored(content: object) -> tuple[str, dict[str, Any]]:
    """The text a content is searched by and what is kept of it (MIME type, metadata, a JSON object whole)."""
    if not isinstance(content, MemoryContent):
        raise InvalidInputError(f"add takes an AutoGen MemoryContent, got {type(content).__name__}")
    mime = content.mime_type.value if isinstance(content.mime_type, MemoryMimeType) else str(content.mime_type)
    kept: dict[str, Any] = {"mime_type": mime, "metadata": dict(content.metadata or {})}
    if mime == MemoryMimeType.JSON.value:
        if not isinstance(content.content, dict):
            raise InvalidInputError("application/json memory content must be a dict")
        kept["content"] = content.content
        try:
            return json.dumps(content.content, ensure_ascii=False, sort_keys=True), kept
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(f"application/json memory content is not JSON: {exc}") from None
    if mime not in TEXT_TYPES or not isinstance(content.content, str):
        raise InvalidInputError(f"OmnimemMemory stores text/plain, text/markdown or application/json content, "
                                f"not {mime} ({type(content.content).__name__}); Memory.add_image stores images")
    return content.content, kept


def _text(content: MemoryContent) -> str:
    """A query given as a ``MemoryContent``: its text (a JSON object's JSON text)."""
    if isinstance(content, MemoryContent):
        if isinstance(content.content, str):
            return content.content
        if isinstance(content.content, dict):
            return json.dumps(content.content, ensure_ascii=False, sort_keys=True)
    raise InvalidInputError("query must be a string or a MemoryContent holding text")


def _latest_text(messages: Sequence[LLMMessage]) -> str:
    """The text of the latest message that has some (system messages, such as memory's own, left out)."""
    for message in reversed(messages):
        if isinstance(message, SystemMessage):
            continue
        content = message.content
        parts = [content] if isinstance(content, str) else [p for p in content if isinstance(p, str)]
        text = " ".join(p.strip() for p in parts if p.strip())
        if text:
            return text
    return ""
