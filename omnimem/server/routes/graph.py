"""The knowledge graph of the caller's scope: entities, one entity's details, its neighbours."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query, Request

from omnimem.server.auth import Principal, reader
from omnimem.server.errors import ERROR_RESPONSES
from omnimem.server.routes.common import ScopeQuery, memory_of

router = APIRouter(prefix="/v1/entities", tags=["graph"], responses=ERROR_RESPONSES)


@router.get("")
def entities(request: Request, where: ScopeQuery = Depends(), principal: Principal = Depends(reader)) -> dict[str, Any]:
    """Entities of the scope (400 ConfigError when the server's graph is off)."""
    found = memory_of(request).entities(**where.bound(principal))
    return {"entities": [e.to_dict() for e in found]}


@router.get("/{name}")
def entity(name: str, request: Request, where: ScopeQuery = Depends(),
           principal: Principal = Depends(reader)) -> dict[str, Any]:
    """The entities called ``name`` (or with that alias): aliases, relations and the units behind them."""
    scope = where.bound(principal)
    return {"entities": memory_of(request).entity_details(name, user_id=scope["user_id"],
                                                          agent_id=scope["agent_id"])}


@router.get("/{name}/neighbors")
def neighbors(name: str, request: Request, where: ScopeQuery = Depends(), hops: int = Query(2, ge=0, le=10),
              principal: Principal = Depends(reader)) -> dict[str, Any]:
    """Entities within ``hops`` of ``name``, with distance and score."""
    found = memory_of(request).neighbors(name, hops=hops, **where.bound(principal))
    return {"neighbors": [n.to_dict() for n in found]}
