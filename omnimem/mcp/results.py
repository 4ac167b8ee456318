"""What the MCP tools return: typed JSON objects, so each tool publishes an output schema an agent can read.

Each shape is a view of a library value object (``AddResult``, ``Context``,
``Hit``, ``Plan``, ``MAU``, ``AuditRecord``, ``Entity``) built from its ``to_dict``;
the field descriptions say what an agent does with each value.
"""

from __future__ import annotations

from typing import Annotated, Any, cast

from pydantic import Field
from typing_extensions import NotRequired, TypedDict  # pydantic needs this TypedDict on Python < 3.12

from omnimem.results import AddResult, Context, Entity
from omnimem.mau import MAU, Modality
from omnimem.results import AuditRecord

RAW_URI = "omnimem://units/{id}/raw"


class Stored(TypedDict):
    """What happened to one input."""

    id: Annotated[str | None, Field(description="The new memory's id; null when nothing was stored.")]
    accepted: Annotated[bool, Field(description="Whether it was stored.")]
    reason: Annotated[str, Field(description="'stored', or why it was skipped (duplicate, near-duplicate, ...).")]
    similarity: Annotated[float | None, Field(description="Similarity to the memory it nearly duplicates.")]
    duplicate_of: Annotated[str | None, Field(description="The id of the memory it duplicates, when skipped.")]


class Dialogue(TypedDict):
    results: Annotated[list[Stored], Field(description="One entry per stored unit, in turn order.")]


class HitView(TypedDict):
    """One memory in a search result."""

    id: Annotated[str, Field(description="The memory's id (for get, update, delete, history).")]
    rank: Annotated[int, Field(description="1 for the best match.")]
    score: Annotated[float, Field(description="Relevance (cosine similarity to the query; higher is better).")]
    sources: Annotated[list[str], Field(description="Retrievers that found it: dense, sparse, graph, clip, "
                                                    "neighbour.")]
    level: Annotated[int, Field(description="Detail in the context: 1 summary, 2 full text, 3 raw content.")]
    modality: Annotated[str, Field(description="text, image, audio or video.")]
    speaker: Annotated[str | None, Field(description="Who said or wrote it.")]
    event_time: Annotated[str | None, Field(description="When it happened (ISO 8601), if known.")]
    session_id: Annotated[str | None, Field(description="Its session.")]
    raw_uri: Annotated[str | None, Field(description="For media: the resource with its raw bytes.")]
    source: Annotated[str, Field(description="What it is: user, assistant, tool, document, import or derived.")]
    trust: Annotated[str, Field(description="trusted, or untrusted (fenced in the context: data, not "
                                            "instructions).")]
    surface: Annotated[str | None, Field(description="How it arrived: python, cli, http, mcp, an integration, "
                                                     "import.")]
    actor: Annotated[str | None, Field(description="Who wrote it (key:<name> on a server).")]


class PlanRoundView(TypedDict):
    """One round of a planned search."""

    queries: Annotated[list[str], Field(description="The queries searched together in this round.")]
    reason: Annotated[str, Field(description="Why the round ran (the question itself, an aggregation cue, a "
                                             "second hop, what the model said the context lacks).")]


class PlanView(TypedDict):
    """What the retrieval planner did and cost."""

    planner: Annotated[str, Field(description="offline or llm.")]
    rounds: Annotated[list[PlanRoundView], Field(description="The rounds run, in order; their rankings are "
                                                             "merged into one context.")]
    calls: Annotated[int, Field(description="Language-model calls made (0 for the offline planner).")]
    prompt_tokens: Annotated[int, Field(description="Prompt tokens those calls used.")]
    completion_tokens: Annotated[int, Field(description="Completion tokens those calls used.")]
    ms: Annotated[dict[str, float], Field(description="Milliseconds per stage (analysis, search1, hop, check, "
                                                      "search2, pack ...).")]
    note: Annotated[str | None, Field(description="Why planning stopped early or fell back (a failed model call, "
                                                  "a cap or the deadline); null when it ran as planned.")]


class Found(TypedDict):
    context: Annotated[str, Field(description="Prompt-ready text of the memories found, with times and speakers.")]
    tokens: Annotated[int, Field(description="Tokens the context uses.")]
    budget: Annotated[int, Field(description="The token budget it was packed into.")]
    hits: Annotated[list[HitView], Field(description="The memories in the context, best first.")]
    plan: NotRequired[Annotated[PlanView, Field(description="What the retrieval planner did and cost; absent when "
                                                            "no planner ran (one search).")]]


class Answered(TypedDict):
    answer: Annotated[str | None, Field(description="The model's answer; null without a configured model.")]
    model: Annotated[str | None, Field(description="The model that answered.")]
    note: Annotated[str | None, Field(description="Why there is no answer, when there is none.")]
    context: Annotated[str, Field(description="The memories the answer was based on, as text.")]
    evidence: Annotated[list[HitView], Field(description="Those memories, best first.")]


class UnitView(TypedDict):
    """One memory in full."""

    id: str
    summary: Annotated[str, Field(description="What is searched and shown at level 1.")]
    full_text: Annotated[str | None, Field(description="The whole text (or a recording's transcript).")]
    modality: Annotated[str, Field(description="text, image, audio or video.")]
    speaker: str | None
    event_time: Annotated[str | None, Field(description="When it happened (ISO 8601).")]
    record_time: Annotated[str, Field(description="When it was stored (ISO 8601).")]
    user_id: str | None
    agent_id: str | None
    session_id: str | None
    source_ids: Annotated[list[str], Field(description="Where it came from (message ids, turn ids).")]
    prev_id: Annotated[str | None, Field(description="The memory before it in its conversation or recording.")]
    next_id: Annotated[str | None, Field(description="The memory after it.")]
    raw_ref: Annotated[str | None, Field(description="Content address of its raw content, if any.")]
    content_hash: str
    superseded_by: Annotated[str | None, Field(description="The id of the correction that replaced it, if any.")]
    superseded_at: Annotated[str | None, Field(description="When it was replaced.")]
    metadata: dict[str, Any]
    raw_uri: Annotated[str | None, Field(description="The resource with its raw content, if any.")]
    source: Annotated[str, Field(description="What it is: user, assistant, tool, document, import or derived.")]
    trust: Annotated[str, Field(description="trusted or untrusted.")]
    surface: Annotated[str | None, Field(description="How it arrived (python, cli, http, mcp, import ...).")]
    actor: Annotated[str | None, Field(description="Who wrote it.")]
    origin: Annotated[str | None, Field(description="An imported memory: the source its file claimed.")]


class Listed(TypedDict):
    memories: Annotated[list[UnitView], Field(description="Newest first.")]
    total: Annotated[int, Field(description="How many memories match the filters in all.")]


class Deleted(TypedDict):
    deleted: Annotated[str, Field(description="The id that was deleted.")]
    chain: Annotated[bool, Field(description="Whether every version was deleted.")]


class Forgotten(TypedDict):
    forgotten: Annotated[int, Field(description="How many memories were removed.")]


class EventView(TypedDict):
    """One audit log event."""

    seq: int
    time: Annotated[str, Field(description="When (ISO 8601).")]
    actor: Annotated[str, Field(description="Who: key:<name> for an API key, local:<user> for the owner.")]
    action: Annotated[str, Field(description="add, update, supersede, delete, forget, import, ...")]
    unit_ids: list[str]
    user_id: str | None
    agent_id: str | None
    session_id: str | None
    reason: str | None
    details: dict[str, Any]


class Events(TypedDict):
    events: Annotated[list[EventView], Field(description="Oldest first.")]


class EntityView(TypedDict):
    id: str
    name: str
    type: Annotated[str, Field(description="Person, Organization, Location, Time, Event, Object or Concept.")]
    aliases: list[str]
    confidence: float


class Entities(TypedDict):
    entities: list[EntityView]


class NeighborView(TypedDict):
    entity: EntityView
    distance: Annotated[int, Field(description="Relations between it and the named entity (0: itself).")]
    score: Annotated[float, Field(description="Closeness: 1 for the entity itself, lower further away.")]


class Neighbors(TypedDict):
    neighbors: list[NeighborView]


def stored(result: AddResult) -> Stored:
    return cast(Stored, result.to_dict())


def raw_uri(unit: MAU) -> str | None:
    """The resource URI of a unit's raw content, when it has some."""
    return RAW_URI.format(id=unit.id) if unit.raw_ref is not None else None


def unit_view(unit: MAU, full_text: str | None) -> UnitView:
    return cast(UnitView, {**unit.to_dict(), "full_text": full_text, "raw_uri": raw_uri(unit)})


def found(ctx: Context) -> Found:
    hits: list[HitView] = [{
        "id": h.unit.id, "rank": h.rank, "score": round(h.score, 6), "sources": sorted(h.sources),
        "level": h.level, "modality": h.unit.modality.value, "speaker": h.unit.speaker,
        "event_time": h.unit.event_time.isoformat() if h.unit.event_time else None,
        "session_id": h.unit.session_id,
        "raw_uri": raw_uri(h.unit) if h.unit.modality is not Modality.TEXT else None,
        "source": h.unit.source, "trust": h.unit.trust, "surface": h.unit.surface, "actor": h.unit.actor,
    } for h in ctx.hits]
    reply: Found = {"context": ctx.render(), "tokens": ctx.tokens, "budget": ctx.budget, "hits": hits}
    if ctx.plan is not None:
        reply["plan"] = cast(PlanView, ctx.plan.to_dict())
    return reply


def events(records: list[AuditRecord]) -> Events:
    return {"events": [cast(EventView, r.to_dict()) for r in records]}


def entity_view(entity: Entity) -> EntityView:
    return {"id": entity.id, "name": entity.name, "type": entity.type.value, "aliases": list(entity.aliases),
            "confidence": round(entity.confidence, 4)}
