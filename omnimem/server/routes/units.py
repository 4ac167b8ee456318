"""Units: add (text, dialogue), list, get, raw content, update, delete, history.

The adds are ``async`` routes that hand their whole work to one thread
(:meth:`ServerState.write`): a sync route costs a second hop to the thread
pool and back to check its response model, per request, and in a burst of
adds those hops queue for the event loop and the GIL like the work does.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query, Request, Response

from omnimem.server.auth import Principal, admin, reader, state_of, writer
from omnimem.server.errors import ERROR_RESPONSES
from omnimem.server.models import AddBody, AddResultBody, DialogueBody, PutBody, TrustBody, UpdateBody
from omnimem.server.routes.common import ScopeQuery, acting, memory_of

router = APIRouter(prefix="/v1", tags=["units"], responses=ERROR_RESPONSES)


@router.post("/units", status_code=201, response_model=AddResultBody)
async def add(body: AddBody, request: Request, principal: Principal = Depends(writer)) -> dict[str, Any]:
    """Remember one piece of text (``Memory.add``)."""
    def run() -> dict[str, Any]:
        with acting(principal):
            return memory_of(request).add(
                body.text, time=body.time, speaker=body.speaker, source_id=body.source_id, metadata=body.metadata,
                supersedes=body.supersedes, allow_forgotten=body.allow_forgotten, source=body.source,
                trust=body.trust, **principal.scope(*body.scope_args())).to_dict()

    return await state_of(request).write(run)


@router.post("/put")
async def put(body: PutBody, request: Request, principal: Principal = Depends(writer)) -> dict[str, Any]:
    """Store units exactly as given, in one transaction (``Memory.put``: a framework store's write)."""
    items = [item.model_dump(exclude_none=True) for item in body.items]

    def run() -> dict[str, Any]:
        with acting(principal):
            results = memory_of(request).put(items, allow_forgotten=body.allow_forgotten,
                                             **principal.scope(*body.scope_args()))
        return {"results": [r.to_dict() for r in results]}

    return await state_of(request).write(run)


@router.post("/dialogues")
async def add_dialogue(body: DialogueBody, request: Request, principal: Principal = Depends(writer)) -> dict[str, Any]:
    """Remember a list of turns in order (``Memory.add_dialogue``)."""
    turns = [turn.model_dump(exclude_none=True) for turn in body.turns]

    def run() -> dict[str, Any]:
        with acting(principal):
            results = memory_of(request).add_dialogue(
                turns, restate=body.restate, allow_forgotten=body.allow_forgotten,
                **principal.scope(*body.scope_args()))
        return {"results": [r.to_dict() for r in results]}

    return await state_of(request).write(run)


@router.get("/units")
def list_units(
    request: Request, where: ScopeQuery = Depends(), modality: str | None = None, speaker: str | None = None,
    since: str | None = None, until: str | None = None, include_superseded: bool = False,
    limit: int = Query(50, ge=1, le=1000), offset: int = Query(0, ge=0, le=1_000_000_000),
    principal: Principal = Depends(reader),
) -> dict[str, Any]:
    """A page of the scope's units ordered by event time, and how many match in all."""
    memory, scope = memory_of(request), where.bound(principal)
    filters: dict[str, Any] = {"modality": modality, "speaker": speaker, "since": since, "until": until,
                               "include_superseded": include_superseded}
    units = memory.units(**filters, limit=limit, offset=offset, **scope)
    return {"units": [u.to_dict() for u in units], "total": memory.count_units(**filters, **scope)}


@router.get("/units/{unit_id}")
def get_unit(unit_id: str, request: Request, where: ScopeQuery = Depends(),
             principal: Principal = Depends(reader)) -> dict[str, Any]:
    """One unit and its full text (404 when it is not in the caller's scope)."""
    memory, scope = memory_of(request), where.bound(principal)
    unit = memory.get(unit_id, **scope)
    return {**unit.to_dict(), "full_text": memory.full_text(unit.id, **scope)}


@router.get("/units/{unit_id}/raw", responses={200: {"content": {"application/octet-stream": {}},
                                                     "description": "The raw bytes, with their content type"}})
def get_raw(unit_id: str, request: Request, where: ScopeQuery = Depends(),
            principal: Principal = Depends(reader)) -> Response:
    """A unit's raw content (an image, an audio clip, a long text) with its content type."""
    data, mime = memory_of(request).raw(unit_id, **where.bound(principal))
    return Response(data, media_type=mime, headers={"X-Content-Type-Options": "nosniff",
                                                    "Content-Disposition": "attachment"})


@router.patch("/units/{unit_id}", response_model=AddResultBody)
def update(unit_id: str, body: UpdateBody, request: Request, principal: Principal = Depends(writer)) -> dict[str, Any]:
    """Replace a text unit with a corrected version (``Memory.update``)."""
    with acting(principal):
        return memory_of(request).update(unit_id, text=body.text, time=body.time, speaker=body.speaker,
                                         reason=body.reason, **principal.scope(*body.scope_args())).to_dict()


@router.delete("/units/{unit_id}", status_code=204)
def delete(unit_id: str, request: Request, where: ScopeQuery = Depends(), reason: str | None = None,
           chain: bool = False, principal: Principal = Depends(writer)) -> Response:
    """Remove a unit everywhere, with no residue (``Memory.delete``)."""
    with acting(principal):
        memory_of(request).delete(unit_id, reason=reason, chain=chain, **where.bound(principal))
    return Response(status_code=204)


@router.post("/units/{unit_id}/trust")
def set_trust(unit_id: str, body: TrustBody, request: Request, principal: Principal = Depends(admin)) -> dict[str, Any]:
    """Change a unit's trust, with an audit entry (``Memory.set_trust``; an admin's verb)."""
    with acting(principal):
        unit = memory_of(request).set_trust(unit_id, body.trust, reason=body.reason,
                                            **principal.scope(*body.scope_args()))
    return unit.to_dict()


@router.get("/units/{unit_id}/history")
def history(unit_id: str, request: Request, where: ScopeQuery = Depends(),
            principal: Principal = Depends(reader)) -> dict[str, Any]:
    """Every logged event about a unit, oldest first (also after it was deleted)."""
    events = memory_of(request).history(unit_id, **where.bound(principal))
    return {"events": [e.to_dict() for e in events]}
