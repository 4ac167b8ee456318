"""Pydantic AI over omnimem (the ``[pydantic-ai]`` extra): memory tools and a history processor that recalls.

- ``memory_tools(memory, user_id=...)``: a ``pydantic_ai.FunctionToolset`` of two tools,
  ``search_memory(query)`` (the pyramid context of a search in the toolset's scope) and
  ``add_memory(text)`` (one unit remembered in that scope), for ``Agent(toolsets=[...])``.
- ``recall_processor(memory, user_id=...)``: a history processor for Pydantic AI's
  ``ProcessHistory`` capability. Before the model answers a run's prompt it searches the memory
  for that prompt and puts what it found, as a system prompt part, just before the prompt; the
  part stays in the run's messages, so a run recalls once, not again after each tool call.

Both take any ``Memory`` and go through its public verbs only: in memory, a folder, PostgreSQL,
or a server through ``Memory(url="http://...")``. Reads name their ``user_id`` or say
``all_users=True``. What each hit's metadata says (:func:`omnimem.integrations.hit_metadata`)
travels beside the text the model reads: in the tool return's ``metadata`` and in the recall
part's ``metadata`` (neither is sent to the model). ``docs/pydantic-ai.md`` shows both in a run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any

from omnimem.errors import ConfigError, InvalidInputError, missing_extra

try:
    from pydantic_ai import FunctionToolset, ModelRetry, Tool, ToolReturn
    from pydantic_ai.messages import ModelMessage, ModelRequest, SystemPromptPart, UserPromptPart
except ImportError:
    raise missing_extra("pydantic-ai-slim", "pydantic-ai") from None

from omnimem.config import Settings
from omnimem.context import Context, Hit
from omnimem.contract.checks import floor
from omnimem.integrations import explicit_scope, hit_metadata

META = "omnimem"  # the metadata key of a tool return and of the recall part: what the hits' metadata says
HEADING = "Memories that may be relevant:"
HistoryProcessor = Callable[[list[ModelMessage]], Awaitable[list[ModelMessage]]]  # what ProcessHistory takes


def hit_record(hit: Hit) -> dict[str, Any]:
    """One hit as the application sees it beside the model's text: its id, its rendered text, its metadata."""
    return {"id": hit.unit.id, "text": hit.text, **hit_metadata(hit)}


def memory_tools(memory: Any, *, user_id: str | None = None, agent_id: str | None = None,
                 session_id: str | None = None, all_users: bool = False, budget: int | None = None,
                 top_k: int | None = None, speaker: str | None = None, add: bool = True,
                 min_trust: str | None = None) -> FunctionToolset[Any]:
    """The tools ``search_memory`` and ``add_memory`` over ``memory``, in one scope.

    ``search_memory(query)`` returns :meth:`omnimem.Context.render`'s text (the memories that fit ``budget``
    tokens, with their times and speakers) or ``No memories found.``; the return's
    ``metadata`` holds ``{"omnimem": [one record per hit]}``. ``add_memory(text)`` remembers the text in
    the scope (``user_id``, ``agent_id``, ``session_id``), as said by ``speaker``, at the time of the call;
    its return says whether it was stored (a repeat is not). ``add=False`` leaves ``add_memory`` out.
    The toolset names its ``user_id``, or ``all_users=True`` searches every user's memory (search only:
    with ``add=False``). Bad input the model sends (an empty query) goes back to it as a retry. ``min_trust``
    keeps the search to units at least that trusted.
    """
    explicit_scope("memory_tools", user_id, all_users)
    trust_floor = floor(min_trust)
    if all_users and add:
        raise ConfigError("memory_tools(all_users=True) searches every user's memory but add_memory writes into "
                          "one user's: pass add=False, or a user_id")
    scope = {"user_id": user_id, "agent_id": agent_id, "session_id": session_id}

    async def search_memory(query: str) -> ToolReturn:
        """Search the user's long-term memory: earlier conversations, facts, preferences.

        Args:
            query: What to look for, in words.
        """
        ctx: Context = await _call(memory.search, query, top_k=top_k, budget=budget, min_trust=trust_floor, **scope)
        return ToolReturn(return_value=ctx.render() if ctx.hits else "No memories found.",
                          metadata={META: [hit_record(h) for h in ctx.hits]})

    async def add_memory(text: str) -> ToolReturn:
        """Remember a fact about the user for later conversations (one short, self-contained statement).

        Args:
            text: The fact, in words.
        """
        result = await _call(memory.add, text, time=datetime.now(timezone.utc), speaker=speaker, **scope)
        said = f"Remembered (id {result.id})." if result.accepted else f"Not stored: {result.reason}."
        return ToolReturn(return_value=said, metadata={META: result.to_dict()})

    tools: list[Tool[Any]] = [Tool(search_memory, takes_ctx=False)]
    if add:
        tools.append(Tool(add_memory, takes_ctx=False))
    _check_ids(scope)
    return FunctionToolset(tools)


async def _call(verb: Any, *args: Any, **kwargs: Any) -> Any:
    """A memory verb on a worker thread (omnimem's calls block); bad input the model sent is its to retry."""
    try:
        return await asyncio.to_thread(verb, *args, **kwargs)
    except InvalidInputError as error:
        raise ModelRetry(str(error)) from error


def _check_ids(scope: dict[str, str | None]) -> None:
    """Bad scope ids fail when the tools or the processor are made, not in the middle of a run."""
    for name, value in scope.items():
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise InvalidInputError(f"{name} must be a non-empty string or None, got {value!r}")


def recall_processor(memory: Any, *, user_id: str | None = None, agent_id: str | None = None,
                     session_id: str | None = None, all_users: bool = False, budget: int | None = None,
                     top_k: int | None = None, heading: str = HEADING,
                     min_trust: str | None = None) -> HistoryProcessor:
    """A history processor that recalls from ``memory`` before the model answers a run's prompt.

    Give it to the agent as ``capabilities=[ProcessHistory(recall_processor(memory, user_id=...))]``.
    Each model request, it finds the latest request that holds a user prompt; unless that request already
    carries a recall part, it searches the scope for the prompt's text (its newest ``max_query_chars``
    characters) and, when something is found, puts a :class:`~pydantic_ai.messages.SystemPromptPart` before
    the prompt: ``heading`` then the rendered context. The part's ``metadata`` is ``{"omnimem": {"query":
    ..., "hits": [one record per hit]}}``. Nothing found, no part. It names its ``user_id``, or
    ``all_users=True`` recalls from every user's memory; ``min_trust`` recalls only units at least that trusted.
    """
    explicit_scope("recall_processor", user_id, all_users)
    trust_floor = floor(min_trust)
    scope = {"user_id": user_id, "agent_id": agent_id, "session_id": session_id}
    _check_ids(scope)
    settings = getattr(memory, "settings", None)
    limit = settings.max_query_chars if isinstance(settings, Settings) else Settings().max_query_chars

    async def recall(messages: list[ModelMessage]) -> list[ModelMessage]:
        found = _latest_prompt(messages)
        if found is None:
            return messages
        at, request = found
        if any(recalled(part) is not None for part in request.parts):
            return messages  # this run's prompt has its memories already
        query = _clip(prompt_text(request), limit)
        if not query:
            return messages
        ctx: Context = await asyncio.to_thread(memory.search, query, top_k=top_k, budget=budget,
                                               min_trust=trust_floor, **scope)
        if not ctx.hits:
            return messages
        part = SystemPromptPart(f"{heading}\n{ctx.render()}",
                                metadata={META: {"query": query, "hits": [hit_record(h) for h in ctx.hits]}})
        first = next(i for i, p in enumerate(request.parts) if isinstance(p, UserPromptPart))
        parts = [*request.parts[:first], part, *request.parts[first:]]
        return [*messages[:at], replace(request, parts=parts), *messages[at + 1:]]

    return recall


def recalled(part: Any) -> dict[str, Any] | None:
    """What a recall part holds (``query``, ``hits``), or None for any other part."""
    if not isinstance(part, SystemPromptPart) or not isinstance(part.metadata, dict):
        return None
    held = part.metadata.get(META)
    return held if isinstance(held, dict) else None


def prompt_text(request: ModelRequest) -> str:
    """The words of a request's user prompts (text content only; images and files are not searched)."""
    words: list[str] = []
    for part in request.parts:
        if isinstance(part, UserPromptPart):
            content = part.content
            words += [content] if isinstance(content, str) else [c for c in content if isinstance(c, str)]
    return " ".join(w.strip() for w in words if w.strip())


def _latest_prompt(messages: list[ModelMessage]) -> tuple[int, ModelRequest] | None:
    for at in range(len(messages) - 1, -1, -1):
        message = messages[at]
        if isinstance(message, ModelRequest) and any(isinstance(p, UserPromptPart) for p in message.parts):
            return at, message
    return None


def _clip(query: str, limit: int) -> str:
    """The newest ``limit`` characters of a long prompt, from a word's start, so a long paste still recalls."""
    if len(query) <= limit:
        return query
    tail = query[len(query) - limit:]
    return tail if query[len(query) - limit - 1].isspace() else tail.partition(" ")[2] or tail
