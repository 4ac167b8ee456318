"""``OmnimemRetriever``: omnimem's hybrid retrieval as a LangChain retriever (the ``[langchain]`` extra).

A real ``langchain_core.retrievers.BaseRetriever``: ``invoke(query)`` (and
``ainvoke``, ``batch``, LCEL's ``|``) runs :meth:`omnimem.Memory.search` in the
retriever's scope and under its token budget, and returns one ``Document`` per
hit of the pyramid context, best first. ``docs/langchain.md`` shows it in a chain.
"""

from __future__ import annotations

from typing import Any

from omnimem.errors import ConfigError, InvalidInputError, missing_extra

try:
    from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables.config import run_in_executor
except ImportError:
    raise missing_extra("langchain-core", "langchain") from None

from pydantic import ConfigDict, model_validator

from omnimem.contract.checks import floor
from omnimem.results import Context, Hit
from omnimem.integrations import explicit_scope, hit_metadata


class OmnimemRetriever(BaseRetriever):
    """Documents from an omnimem ``Memory`` (embedded, PostgreSQL or remote) for a query.

    ``user_id`` / ``agent_id`` / ``session_id`` choose the scope searched (as in
    :meth:`Memory.search`); a retriever names its ``user_id``, or says
    ``all_users=True`` to search every user's memory (as :meth:`Memory.forget`
    asks), else it is a :class:`~omnimem.errors.ConfigError`. ``k`` (LangChain's
    name; ``top_k`` is the same) bounds the documents, also per call:
    ``invoke(query, k=1)``; it and ``budget`` (tokens) default to the memory's
    settings. Each document's ``page_content`` is the hit's text as the
    pyramid rendered it (a summary line, the full text, or more, by level);
    its ``metadata`` holds ``id``, ``time`` (ISO 8601 event time, or None),
    ``speaker``, ``score`` (cosine similarity to the query), ``sources`` (the
    retrievers that found it: ``dense``, ``sparse``, ...), ``source_ids`` (the
    provenance ids given at add), ``level``, ``rank``, ``tokens`` and ``modality``.
    ``min_trust`` (``"trusted"``) keeps the documents to units at least that trusted.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: Any
    user_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None
    all_users: bool = False
    budget: int | None = None
    k: int | None = None
    top_k: int | None = None
    min_trust: str | None = None

    @model_validator(mode="after")
    def _scope_is_explicit(self) -> OmnimemRetriever:
        explicit_scope("OmnimemRetriever", self.user_id, self.all_users)
        try:
            floor(self.min_trust)  # a bad level fails here, not at the first query
        except InvalidInputError as exc:  # pydantic would wrap a ValueError: a bad setting, as k/top_k's
            raise ConfigError(str(exc)) from None
        if self.k is not None and self.top_k is not None and self.k != self.top_k:
            raise ConfigError(f"k={self.k} and top_k={self.top_k} disagree; pass one of them")
        self.k = self.top_k if self.k is None else self.k
        return self

    def search(self, query: str, *, k: int | None = None) -> Context:
        """The pyramid context the documents come from (its token count, what was dropped)."""
        return self.memory.search(  # type: ignore[no-any-return]
            query, top_k=self.k if k is None else k, budget=self.budget, user_id=self.user_id,
            agent_id=self.agent_id, session_id=self.session_id, min_trust=self.min_trust,
        )

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                **kwargs: Any) -> list[Document]:
        """``k`` (or ``top_k``) given to ``invoke`` bounds this call's documents."""
        unknown = set(kwargs) - {"k", "top_k", "verbose"}  # langchain-core passes its own "verbose" on
        if unknown:
            raise InvalidInputError(f"unknown retriever argument(s) {sorted(unknown)}; use k")
        k = _one_k(kwargs.get("k"), kwargs.get("top_k"))
        return [to_document(hit) for hit in self.search(query, k=k).hits]

    async def _aget_relevant_documents(self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun,
                                       **kwargs: Any) -> list[Document]:
        """The same on a worker thread (omnimem's calls block), ``k`` included."""
        return await run_in_executor(None, self._get_relevant_documents, query, run_manager=run_manager.get_sync(),
                                     **kwargs)


def _one_k(k: int | None, top_k: int | None) -> int | None:
    """``k`` and its other name ``top_k``, which must agree when both are given."""
    if k is not None and top_k is not None and k != top_k:
        raise InvalidInputError(f"k={k} and top_k={top_k} disagree; pass one of them")
    return k if k is not None else top_k


def to_document(hit: Hit) -> Document:
    """One pyramid hit as a LangChain ``Document``."""
    unit = hit.unit
    return Document(
        page_content=hit.text,
        id=unit.id,
        metadata={"id": unit.id, "score": float(hit.score), **hit_metadata(hit)},
    )
