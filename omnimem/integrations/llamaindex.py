"""LlamaIndex over omnimem (the ``[llamaindex]`` extra): a retriever and a memory block.

- ``OmnimemRetriever``: a real ``llama_index.core.retrievers.BaseRetriever``;
  ``retrieve(query)`` (and ``aretrieve``, and every engine built on a
  retriever: ``ContextChatEngine``, ``RetrieverQueryEngine``) runs
  :meth:`omnimem.Memory.search` in the retriever's scope and returns one
  ``NodeWithScore`` per hit of the pyramid context, best first.
- ``OmnimemMemoryBlock``: a long-term block of ``llama_index.core.memory.Memory``
  (``BaseMemoryBlock[str]``): messages the memory flushes from its short-term
  queue are remembered in omnimem (one unit per message, its role the speaker,
  the LlamaIndex session id the unit's ``session_id``), and each turn the block
  hands the chat the pyramid context of a search for the latest messages (their
  newest ``max_query_chars``), from every session of its user.

Both take any ``Memory``: in memory, a folder, PostgreSQL, or a server through
``Memory(url="http://...")``. ``docs/llamaindex.md`` shows them in chat engines.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone
from typing import Any

from omnimem.errors import InvalidInputError, missing_extra

try:
    from llama_index.core.base.base_retriever import BaseRetriever
    from llama_index.core.base.llms.types import ChatMessage
    from llama_index.core.callbacks import CallbackManager
    from llama_index.core.memory.memory import BaseMemoryBlock
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
except ImportError:
    raise missing_extra("llama-index-core", "llamaindex") from None

from pydantic import Field

from omnimem.config import Settings
from omnimem.contract.checks import ROLE_SOURCES, floor, make_scope
from omnimem.results import Context, Hit
from omnimem.integrations import explicit_scope, hit_metadata, writing_as


class OmnimemRetriever(BaseRetriever):
    """Nodes from an omnimem ``Memory`` for a query.

    ``user_id`` / ``agent_id`` / ``session_id`` choose the scope searched (as in
    :meth:`Memory.search`); a retriever names its ``user_id``, or says ``all_users=True``
    to search every user's memory, else it is a :class:`~omnimem.errors.ConfigError`; ``similarity_top_k`` (candidates) and ``budget`` (tokens of
    the packed context) default to the memory's settings. Each node's text is the hit's
    text as the pyramid rendered it; its ``id_`` the unit id; its metadata ``time``,
    ``speaker``, ``sources``, ``source_ids``, ``level``, ``rank``, ``tokens``, ``modality``;
    the score is the cosine similarity to the query. ``min_trust`` keeps the nodes to units at least that trusted.
    """

    def __init__(self, memory: Any, *, user_id: str | None = None, agent_id: str | None = None,
                 session_id: str | None = None, all_users: bool = False, similarity_top_k: int | None = None,
                 budget: int | None = None, callback_manager: CallbackManager | None = None,
                 verbose: bool = False, min_trust: str | None = None) -> None:
        explicit_scope("OmnimemRetriever", user_id, all_users)
        make_scope(user_id, agent_id, session_id)  # bad ids fail here
        self.memory, self.min_trust = memory, floor(min_trust)
        self.user_id, self.agent_id, self.session_id = user_id, agent_id, session_id
        self.similarity_top_k, self.budget = similarity_top_k, budget
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def search(self, query: str) -> Context:
        """The pyramid context the nodes come from (its token count, what was dropped)."""
        return self.memory.search(  # type: ignore[no-any-return]
            query, top_k=self.similarity_top_k, budget=self.budget, user_id=self.user_id, agent_id=self.agent_id,
            session_id=self.session_id, min_trust=self.min_trust,
        )

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [to_node(hit) for hit in self.search(query_bundle.query_str).hits]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return await asyncio.to_thread(self._retrieve, query_bundle)


def to_node(hit: Hit) -> NodeWithScore:
    """One pyramid hit as a LlamaIndex ``NodeWithScore``."""
    unit = hit.unit
    metadata = hit_metadata(hit)
    node = TextNode(id_=unit.id, text=hit.text, metadata=metadata,
                    excluded_llm_metadata_keys=[k for k in metadata if k != "time"],  # the text names the speaker
                    excluded_embed_metadata_keys=list(metadata))
    return NodeWithScore(node=node, score=float(hit.score))


class OmnimemMemoryBlock(BaseMemoryBlock[str]):
    """A ``llama_index.core.memory.Memory`` block kept in omnimem, for one user (and agent).

    Puts remember each message with text (``user``, ``assistant``, ``tool``... as the
    speaker; omnimem's novelty filter drops a message that repeats the last ones); gets search
    the last ``retrieval_context_window`` messages' text and return the rendered context
    (``""`` when nothing is found, so the memory leaves the block out).
    """

    name: str = Field(default="omnimem", description="The name of the memory block.")
    memory: Any = Field(description="The omnimem Memory the block reads and writes.")
    user_id: str = Field(description="Whose memory this is: every put and get stays in this user's scope.")
    agent_id: str | None = Field(default=None, description="The agent scope, when memories are kept per agent.")
    similarity_top_k: int | None = Field(default=None, description="Candidates per search (memory's default).")
    budget: int | None = Field(default=None, description="Tokens of the context a get returns (memory's default).")
    retrieval_context_window: int = Field(default=5, description="How many of the latest messages make the query.")
    min_trust: str | None = Field(default=None, description="Only memories at least this trusted (None: all).")

    def __init__(self, *, memory: Any, user_id: str, agent_id: str | None = None, **fields: Any) -> None:
        if user_id is None:
            raise InvalidInputError("OmnimemMemoryBlock needs a user_id: whose memory it is")
        make_scope(user_id, agent_id, None)  # InvalidInputError for an empty or invalid id
        floor(fields.get("min_trust"))
        window = fields.get("retrieval_context_window", 5)
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise InvalidInputError(f"retrieval_context_window must be a whole number >= 1, got {window!r}")
        values: dict[str, Any] = {"memory": memory, "user_id": user_id, "agent_id": agent_id, **fields}
        super().__init__(**values)

    def query(self, messages: list[ChatMessage]) -> str:
        """The text a get searches for: the last ``retrieval_context_window`` messages' text, clipped to the
        memory's ``max_query_chars`` (20,000 on a remote memory, the server's default), the newest text kept
        and starting on a whole word, so a long paste never makes a turn's search fail."""
        recent = messages[-self.retrieval_context_window:]
        query = " ".join(text for m in recent if (text := _text(m)))
        settings = getattr(self.memory, "settings", None)
        limit = settings.max_query_chars if settings is not None else _DEFAULT_QUERY_CHARS
        if len(query) <= limit:
            return query
        clipped = query[-limit:]
        return clipped if query[-limit - 1].isspace() else clipped.split(None, 1)[-1]

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        query = self.query(messages or [])
        if not query:
            return ""
        ctx = await asyncio.to_thread(self.memory.search, query, top_k=self.similarity_top_k, budget=self.budget,
                                      user_id=self.user_id, agent_id=self.agent_id, min_trust=self.min_trust)
        return str(ctx.render()) if ctx.hits else ""

    async def _aput(self, messages: list[ChatMessage]) -> None:
        await asyncio.to_thread(self._remember, messages)

    def _remember(self, messages: list[ChatMessage]) -> None:
        now = datetime.now(timezone.utc)  # when the chat let them go: the messages carry no time of their own
        for message in messages:
            text = _text(message)
            if text:
                session = message.additional_kwargs.get("session_id")
                role = str(message.role.value)
                with writing_as("llamaindex"):  # a tool message is a tool's output: stored untrusted
                    self.memory.add(text, time=now, speaker=role, user_id=self.user_id, agent_id=self.agent_id,
                                    session_id=session if isinstance(session, str) and session.strip() else None,
                                    source=ROLE_SOURCES.get(role))


_DEFAULT_QUERY_CHARS = Settings().max_query_chars


def _text(message: ChatMessage) -> str:
    content = message.content
    return content.strip() if isinstance(content, str) else ""
