"""``OmnimemRetriever``: omnimem's hybrid retrieval as a LangChain retriever (the ``[langchain]`` extra).

A real ``langchain_core.retrievers.BaseRetriever``: ``invoke(query)`` (and
``ainvoke``, ``batch``, LCEL's ``|``) runs :meth:`omnimem.Memory.search` in the
retriever's scope and under its token budget, and returns one ``Document`` per
hit of the pyramid context, best first. ``docs/langchain.md`` shows it in a chain.
"""

from __future__ import annotations

from typing import Any

from omnimem.errors import missing_extra

try:
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
except ImportError:
    raise missing_extra("langchain-core", "langchain") from None

from pydantic import ConfigDict

from omnimem.engine.retrieval.pyramid import Context, Hit


class OmnimemRetriever(BaseRetriever):
    """Documents from an omnimem ``Memory`` (embedded, PostgreSQL or remote) for a query.

    ``user_id`` / ``agent_id`` / ``session_id`` choose the scope searched (as in
    :meth:`Memory.search`); ``budget`` (tokens) and ``top_k`` default to the
    memory's settings. Each document's ``page_content`` is the hit's text as the
    pyramid rendered it (a summary line, the full text, or more, by level);
    its ``metadata`` holds ``id``, ``time`` (ISO 8601 event time, or None),
    ``speaker``, ``score`` (cosine similarity to the query), ``sources`` (the
    retrievers that found it: ``dense``, ``sparse``, ...), ``source_ids`` (the
    provenance ids given at add), ``level``, ``rank``, ``tokens`` and ``modality``.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: Any
    user_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None
    budget: int | None = None
    top_k: int | None = None

    def search(self, query: str) -> Context:
        """The pyramid context the documents come from (its token count, what was dropped)."""
        return self.memory.search(  # type: ignore[no-any-return]
            query, top_k=self.top_k, budget=self.budget, user_id=self.user_id, agent_id=self.agent_id,
            session_id=self.session_id,
        )

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return [to_document(hit) for hit in self.search(query).hits]


def to_document(hit: Hit) -> Document:
    """One pyramid hit as a LangChain ``Document``."""
    unit = hit.unit
    return Document(
        page_content=hit.text,
        id=unit.id,
        metadata={
            "id": unit.id,
            "time": unit.event_time.isoformat() if unit.event_time is not None else None,
            "speaker": unit.speaker,
            "score": float(hit.score),
            "sources": sorted(hit.sources),
            "source_ids": list(unit.source_ids),
            "level": hit.level,
            "rank": hit.rank,
            "tokens": hit.tokens,
            "modality": unit.modality.value,
        },
    )
