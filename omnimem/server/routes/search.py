"""Search and ask: a pyramid context (with its rendered text) or an answer with its evidence.

Searches rank and pack under the app's read slots (``--search-concurrency``,
:attr:`ServerState.reads`): at most that many at once. A search holds no slot
while its query is embedded, so one whose query is ready ranks while another
waits for the model; at most twice that many searches have a thread, the
others wait without one. Adds and other writes do not take a read slot,
so under a flood of searches a write still gets a thread and the CPU at once
instead of queueing behind every search in flight. A search planned by the
model (``planner="llm"``) and ``ask`` mostly wait for the LLM: they run on
threads of their own (:meth:`ServerState.model_read`) and take a read slot
for their ranking and packing only, so a slow model holds up no other search.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request

from omnimem.server.auth import Principal, reader, state_of
from omnimem.server.errors import ERROR_RESPONSES
from omnimem.server.models import AskBody, SearchBody
from omnimem.server.routes.common import memory_of

router = APIRouter(prefix="/v1", tags=["search"], responses=ERROR_RESPONSES)


@router.post("/search")
async def search(body: SearchBody, request: Request, principal: Principal = Depends(reader)) -> dict[str, Any]:
    """Hybrid retrieval packed into a pyramid context (``Memory.search``); ``rendered`` is the prompt text."""
    def run() -> dict[str, Any]:
        context = memory_of(request).search(
            body.query, top_k=body.top_k, theta=body.theta, budget=body.budget,
            include_superseded=body.include_superseded, as_of=body.as_of, now=body.now, planner=body.planner,
            min_trust=body.min_trust, **principal.scope(*body.scope_args()))
        return {**context.to_dict(), "rendered": context.render()}

    state = state_of(request)
    settings = state.memory.settings
    planner = body.planner if body.planner is not None else settings.planner if settings is not None else None
    return await (state.model_read(run) if planner == "llm" else state.read(run))


@router.post("/ask")
async def ask(body: AskBody, request: Request, principal: Principal = Depends(reader)) -> dict[str, Any]:
    """Answer from memory with the server's LLM; without one, the evidence only (``Memory.ask``)."""
    def run() -> dict[str, Any]:
        answer = memory_of(request).ask(body.question, top_k=body.top_k, budget=body.budget,
                                        instructions=body.instructions, min_trust=body.min_trust,
                                        **principal.scope(*body.scope_args()))
        return answer.to_dict()

    return await state_of(request).model_read(run)
