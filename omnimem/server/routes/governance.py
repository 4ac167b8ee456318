"""Governance: forget (or preview it), the audit log, export (JSON Lines, streamed), import, stats."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import StreamingResponse

from omnimem.errors import MalformedDataError, ScopeError
from omnimem.contract.loaders import parse_lines
from omnimem.media.errors import UnsupportedMediaError
from omnimem.mau import Modality
from omnimem.store.base import KeyStore
from omnimem.server.auth import Principal, admin, reader, state_of, writer
from omnimem.server.errors import ERROR_RESPONSES
from omnimem.server.models import FlushBody, ForgetBody
from omnimem.server.routes.common import ScopeQuery, acting, memory_of

router = APIRouter(prefix="/v1", tags=["governance"], responses=ERROR_RESPONSES)

NDJSON = "application/x-ndjson"
_NDJSON_TYPES = (NDJSON, "application/jsonl", "application/jsonlines", "application/json-lines")


@router.post("/forget")
def forget(body: ForgetBody, request: Request, principal: Principal = Depends(admin)) -> dict[str, Any]:
    """Remove units with zero residue (``Memory.forget``), or with ``preview`` list what would go."""
    if body.all:
        principal.require_store_wide("forget all=True")
    if body.all_users:
        principal.require_store_wide("forget all_users=True")
    memory = memory_of(request)
    args: dict[str, Any] = {"since": body.since, "until": body.until, "unit_ids": body.unit_ids, "all": body.all,
                            "all_users": body.all_users, "reason": body.reason,
                            **principal.scope(*body.scope_args())}
    if body.preview:
        units = memory.preview_forget(**args)
        return {"units": [u.to_dict() for u in units], "count": len(units)}
    with acting(principal):
        return {"forgotten": memory.forget(**args)}


@router.get("/log")
def log(request: Request, where: ScopeQuery = Depends(), limit: int | None = Query(None, ge=1, le=1_000_000),
        principal: Principal = Depends(reader)) -> dict[str, Any]:
    """The audit log of the scope (the last ``limit`` events), oldest first."""
    events = memory_of(request).log(limit=limit, **where.bound(principal))
    return {"events": [e.to_dict() for e in events]}


@router.get("/export", response_class=StreamingResponse,
            responses={200: {"content": {NDJSON: {}}, "description": "JSON Lines, streamed"}})
def export(request: Request, where: ScopeQuery = Depends(), all: bool = False,
           principal: Principal = Depends(reader)) -> StreamingResponse:
    """Everything held about the scope as JSON Lines (``Memory.export``); ``all`` needs a store-wide key."""
    if all:
        principal.require_store_wide("export all=True")
    records = memory_of(request).export(all=all, **where.bound(principal))
    lines: Iterator[bytes] = (json.dumps(r, ensure_ascii=False).encode("utf-8") + b"\n" for r in records)
    return StreamingResponse(lines, media_type=NDJSON)


@router.post("/import", openapi_extra={"requestBody": {"required": True, "content": {
    NDJSON: {"schema": {"type": "string", "description": "JSON Lines made by GET /v1/export"}}}}})
async def import_records(request: Request, allow_forgotten: bool = False, trust: str | None = None,
                         principal: Principal = Depends(writer)) -> dict[str, Any]:
    """Load a dump made by export; every record is validated before any is stored (``Memory.import_records``).
    The units are marked as imported (source ``import``) and ``untrusted`` unless ``trust`` says otherwise."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind not in _NDJSON_TYPES:
        raise UnsupportedMediaError(f"import reads {NDJSON}, not {kind or 'a body without a content type'}")
    records = _check_owned(_parse_lines(await request.body()), principal, state_of(request).keys)

    def run() -> dict[str, int]:
        with acting(principal):
            return memory_of(request).import_records(records, allow_forgotten=allow_forgotten, trust=trust)

    return dict(await run_in_threadpool(run))


@router.post("/flush")
async def flush(body: FlushBody, request: Request, principal: Principal = Depends(reader)) -> dict[str, Any]:
    """Wait (up to ``timeout`` seconds) until queued enrichment has landed (``Memory.flush``): ``done``."""
    memory = memory_of(request)
    return {"done": bool(await run_in_threadpool(memory.flush, float(body.timeout)))}


@router.get("/stats")
def stats(request: Request, principal: Principal = Depends(reader)) -> dict[str, Any]:
    """``Memory.stats()`` for a store-wide key; a scoped key sees only its own counts."""
    memory = memory_of(request)
    if principal.store_wide:
        return memory.stats()
    scope = principal.scope()
    counts = {m.value: memory.count_units(modality=m.value, include_superseded=True, **scope) for m in Modality}
    return {"units": sum(counts.values()), "by_modality": {k: v for k, v in counts.items() if v},
            "user_id": scope["user_id"], "agent_id": scope["agent_id"]}


def _parse_lines(body: bytes) -> list[dict[str, Any]]:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise MalformedDataError("the import body is not UTF-8") from None
    return parse_lines(text)


def _check_owned(records: list[dict[str, Any]], principal: Principal, keys: KeyStore) -> list[dict[str, Any]]:
    """What ``principal`` may import of ``records``, or a ScopeError for the whole dump.

    A scoped key imports only records of its own user (and agent): units and
    audit events alike (entity records are never stored: the graph is rebuilt
    from the units). An event keeps the actor it names only when the
    importing key may vouch for it: a store-wide admin key for any actor, an
    admin key bound to a user for this server's keys bound inside its own
    scope. Every other event is re-attributed to the importing key (the
    source's ``actor`` is dropped; ``details.imported_from`` still says where
    it came from), so no key can put a wider actor's name in the log.
    """
    vouched = _actors_inside(principal, keys)
    out: list[dict[str, Any]] = []
    for number, record in enumerate(records, 1):
        kind = record.get("kind")
        if not principal.store_wide and kind in ("unit", "event") and (record.get("user_id") != principal.user_id or (
                principal.agent_id is not None and record.get("agent_id") != principal.agent_id)):
            raise ScopeError(f"record {number} belongs to another scope than this key's")
        if kind == "event" and principal.actor is not None and vouched is not None and (
                record.get("actor") not in vouched):
            record = {**record, "actor": principal.actor}
        out.append(record)
    return out


def _actors_inside(principal: Principal, keys: KeyStore) -> set[str] | None:
    """The actors an import by ``principal`` keeps (None: all of them, for a store-wide admin key)."""
    if principal.role != "admin":
        return set()
    if principal.store_wide:
        return None
    inside: set[str] = set()
    outside: set[str] = set()
    for key in keys.list_keys():  # a name shared by a key outside the scope is not vouched for
        mine = key.user_id == principal.user_id and principal.agent_id in (None, key.agent_id)
        (inside if mine else outside).add(f"key:{key.name}")
    return inside - outside
