"""Search and ask: a pyramid context (with its rendered text) or an answer with its evidence."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request

from omnimem.server.auth import Principal, reader
from omnimem.server.errors import ERROR_RESPONSES
from omnimem.server.models import AskBody, SearchBody
from omnimem.server.routes.common import memory_of

router = APIRouter(prefix="/v1", tags=["search"], responses=ERROR_RESPONSES)


@router.post("/search")
def search(body: SearchBody, request: Request, principal: Principal = Depends(reader)) -> dict[str, Any]:
    """Hybrid retrieval packed into a pyramid context (``Memory.search``); ``rendered`` is the prompt text."""
    context = memory_of(request).search(
        body.query, top_k=body.top_k, theta=body.theta, budget=body.budget,
        include_superseded=body.include_superseded, as_of=body.as_of, now=body.now,
        **principal.scope(*body.scope_args()))
    return {**context.to_dict(), "rendered": context.render()}


@router.post("/ask")
def ask(body: AskBody, request: Request, principal: Principal = Depends(reader)) -> dict[str, Any]:
    """Answer from memory with the server's LLM; without one, the evidence only (``Memory.ask``)."""
    answer = memory_of(request).ask(body.question, top_k=body.top_k, budget=body.budget,
                                    instructions=body.instructions, **principal.scope(*body.scope_args()))
    return answer.to_dict()
