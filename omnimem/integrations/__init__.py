"""Framework integrations, each behind its own extra: LangChain (``[langchain]``), LangGraph (``[langgraph]``),
LlamaIndex (``[llamaindex]``), the OpenAI Agents SDK (``[openai-agents]``), CrewAI (``[crewai]``),
Google ADK (``[adk]``), AutoGen (``[autogen]``).

Importing a submodule without its extra raises :class:`omnimem.errors.MissingDependencyError`
naming the ``pip install`` that fixes it; ``import omnimem`` never imports these.
"""

from contextlib import AbstractContextManager
from typing import Any

from omnimem.config import Settings
from omnimem.contract.caller import writing_via
from omnimem.errors import ConfigError, InvalidInputError


def explicit_scope(owner: str, user_id: str | None, all_users: bool) -> None:
    """A search that an integration runs names its user, or says ``all_users=True`` (as ``Memory.forget`` asks):
    a ConfigError otherwise, so no framework object searches every user's memory by omission."""
    if all_users and user_id is not None:
        raise ConfigError(f"{owner} takes a user_id or all_users=True, not both")
    if not all_users and user_id is None:
        raise ConfigError(f"{owner} searches one user's memory: pass user_id=..., or all_users=True to search "
                          "every user's")


def writing_as(name: str) -> AbstractContextManager[None]:
    """Writes inside arrive through the integration ``name``: their units' surface is ``integration:<name>``."""
    return writing_via(f"integration:{name}")


def hit_metadata(hit: Any) -> dict[str, Any]:
    """What a framework's document or node says of a pyramid hit besides its text (LangChain, LlamaIndex).

    ``rank`` is what ordered the hits (1 first); ``fused`` the fused score that ranking sorted by in a plain
    search (None for a unit no ranked retriever found); ``similarity`` the query's cosine similarity, shown
    second: it need not fall in rank order (LangChain's ``score`` and LlamaIndex's node score are the same).
    ``source``, ``trust``, ``surface`` and ``actor`` are the unit's provenance (docs/security.md): text a framework
    puts into a prompt should be fenced as data where ``trust`` is not ``trusted``.
    """
    unit = hit.unit
    return {
        "time": unit.event_time.isoformat() if unit.event_time is not None else None,
        "speaker": unit.speaker,
        "sources": sorted(hit.sources),
        "source_ids": list(unit.source_ids),
        "level": hit.level,
        "rank": hit.rank,
        "fused": hit.fused,
        "similarity": float(hit.score),
        "tokens": hit.tokens,
        "modality": unit.modality.value,
        "source": unit.source,
        "trust": unit.trust,
        "surface": unit.surface,
        "actor": unit.actor,
    }


def clip_query(memory: Any, text: object) -> str:
    """``text`` as a search query: its newest ``max_query_chars`` characters (the memory's setting; on a remote
    memory the server's default), starting on a whole word, so a long paste never makes a search fail; a query
    that is not a string, or has no words, is an InvalidInputError."""
    if not isinstance(text, str):
        raise InvalidInputError(f"query must be a string, got {type(text).__name__}")
    if not text.strip():
        raise InvalidInputError("query must be a non-empty string")
    settings = getattr(memory, "settings", None)
    limit = (settings or Settings()).max_query_chars
    if len(text) <= limit:
        return text.strip()
    kept = text[-limit:]
    if not text[-limit - 1].isspace() and any(c.isspace() for c in kept):
        kept = kept.split(None, 1)[-1] if kept.split() else ""  # the cut word's rest left out
    return kept.strip()

