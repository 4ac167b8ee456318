"""``RemoteEngine``: the engine contract over HTTP, behind ``Memory(url="http(s)://...", api_key=...)``.

Each method of :class:`~omnimem.contract.Engine` is one call of the
server's API (``docs/http-api.md``) through :mod:`.transport`; results are the
same value objects (:mod:`omnimem.results`), rebuilt with their ``from_dict``,
and errors the same classes (``except NotFoundError`` works the same). The
facade has checked every request before it gets here; what depends on the
server's settings (defaults, limits, its time zone) the server checks, so times
travel as given. Scope ids default to the API key's on the server. Importing
this module registers the engine for ``http://`` and ``https://`` URLs.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from omnimem.contract import (
    ANONYMOUS_UPLOAD, AddRequest, AskRequest, AudioRequest, DeleteRequest, DialogueRequest, EntityRequest,
    ExportRequest, ForgetRequest, ImageRequest, ImportRequest, ListRequest, LogRequest, Media, PutRequest, ScopeRequest, SearchRequest, UnitRequest,
    TrustRequest, UpdateRequest, VideoRequest,
)
from omnimem.errors import InvalidInputError, MalformedDataError, missing_extra
from omnimem.mau import MAU, Scope
from omnimem.memory import Memory
from omnimem.results import AddResult, Answer, AuditRecord, Context, Entity, MediaResult, Neighbor


class RemoteEngine:
    """An omnimem server as an engine: one reused connection pool, retries for what is safe to repeat."""

    def __init__(self, url: str, *, api_key: str | None = None, timeout: float = 60.0, retries: int = 3,
                 backoff: float = 0.2) -> None:
        try:
            from omnimem.remote.transport import Transport
        except ImportError:
            raise missing_extra("httpx", "server") from None
        self.url = url.rstrip("/")
        self._http = Transport(self.url, api_key, timeout=timeout, retries=retries, backoff=backoff)
        self._timeout = float(timeout)

    # -- lifecycle -------------------------------------------------------------
    def close(self) -> None:
        """Close the connection pool. Safe to call twice."""
        self._http.close()

    @property
    def read_only(self) -> bool:
        """Whether the server's store is read-only (then writes raise ReadOnlyStoreError)."""
        return bool(self._http.json("GET", "/healthz", idempotent=True).get("read_only", False))

    def flush(self, timeout: float | None) -> bool:
        """Wait until the server's queued enrichment has landed; False if ``timeout`` seconds passed first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        step = max(0.0, min(20.0, self._timeout / 2))  # each call waits less than the client's own timeout
        while True:  # ask again until done or out of time
            left = step if deadline is None else max(0.0, min(step, deadline - time.monotonic()))
            if self._http.json("POST", "/v1/flush", idempotent=True, json={"timeout": left})["done"]:
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False

    # -- writes ------------------------------------------------------------------
    def add(self, request: AddRequest) -> AddResult:
        r = request
        body = {"text": r.text, "time": _when(r.time), "speaker": r.speaker, "source_id": r.source_id,
                "metadata": r.metadata, "supersedes": None if r.supersedes is None else list(r.supersedes),
                "allow_forgotten": r.allow_forgotten, **_scope(r.scope),
                **{k: v for k, v in (("source", r.source), ("trust", r.trust)) if v is not None}}
        return AddResult.from_dict(self._http.json("POST", "/v1/units", idempotent=False, json=body))

    def put(self, request: PutRequest) -> list[AddResult]:
        items = [{"text": i.text, "time": _when(i.time), "speaker": i.speaker, "source_id": i.source_id,
                  "metadata": i.metadata, "supersedes": list(i.supersedes), "id": i.unit_id, "source": i.source,
                  "trust": i.trust} for i in request.items]
        body = {"items": items, "allow_forgotten": request.allow_forgotten, **_scope(request.scope)}
        data = self._http.json("POST", "/v1/put", idempotent=False, json=body)
        return [AddResult.from_dict(r) for r in data["results"]]

    def update(self, request: UpdateRequest) -> AddResult:
        r = request
        body = {"text": r.text, "time": _when(r.time), "speaker": r.speaker, "reason": r.reason, **_scope(r.scope)}
        return AddResult.from_dict(self._http.json("PATCH", f"/v1/units/{_id(r.unit_id)}", idempotent=False,
                                                   json=body))

    def add_dialogue(self, request: DialogueRequest) -> list[AddResult]:
        turns = [{k: _when(v) if k == "time" else v for k, v in dict(t).items()} for t in request.turns]
        body = {"turns": turns, "restate": request.restate, "allow_forgotten": request.allow_forgotten,
                **_scope(request.scope)}
        data = self._http.json("POST", "/v1/dialogues", idempotent=False, json=body)
        results = [AddResult.from_dict(r) for r in data["results"]]
        if request.progress is not None:
            request.progress(len(results))
        return results

    def add_image(self, request: ImageRequest) -> AddResult:
        r = request
        form = {"caption": r.caption, "time": _when(r.time), "source_id": r.source_id, **_scope(r.scope)}
        return AddResult.from_dict(self._upload("/v1/images", r.image, form))

    def add_audio(self, request: AudioRequest) -> MediaResult:
        form = {"time": _when(request.time), **_scope(request.scope)}
        result = MediaResult.from_dict(self._upload("/v1/audio", request.audio, form))
        if request.progress is not None:
            request.progress(len(result.results))
        return result

    def add_video(self, request: VideoRequest) -> MediaResult:
        r = request
        form = {"time": _when(r.time), "fps": r.fps, "max_frames": r.max_frames, **_scope(r.scope)}
        return MediaResult.from_dict(self._upload("/v1/videos", r.video, form))

    def _upload(self, route: str, source: Media, form: Mapping[str, Any]) -> Any:
        data, name = (source, ANONYMOUS_UPLOAD) if isinstance(source, bytes) else (Path(source).read_bytes(),
                                                                                   Path(source).name)
        fields = {k: str(v) for k, v in form.items() if v is not None}
        return self._http.json("POST", route, idempotent=False, files={"file": (name, data)}, data=fields)

    def delete(self, request: DeleteRequest) -> None:
        params = {**_scope(request.scope), "chain": _flag(request.chain)}
        if request.reason is not None:
            params["reason"] = request.reason
        self._http.call("DELETE", f"/v1/units/{_id(request.unit_id)}", idempotent=False, params=params)

    def set_trust(self, request: TrustRequest) -> MAU:
        body = {"trust": request.trust, "reason": request.reason, **_scope(request.scope)}
        return MAU.from_dict(self._http.json("POST", f"/v1/units/{_id(request.unit_id)}/trust", idempotent=True,
                                             json=body))

    def forget(self, request: ForgetRequest) -> int:
        return int(self._http.json("POST", "/v1/forget", idempotent=False,
                                   json=_forget_body(request, preview=False))["forgotten"])

    def preview_forget(self, request: ForgetRequest) -> list[MAU]:
        data = self._http.json("POST", "/v1/forget", idempotent=True, json=_forget_body(request, preview=True))
        return [MAU.from_dict(u) for u in data["units"]]

    def import_records(self, request: ImportRequest) -> dict[str, int]:
        try:  # ASCII escapes: a lone surrogate reaches the server's checks, which name the record as locally
            body = b"".join(json.dumps(dict(r), allow_nan=False).encode("ascii") + b"\n" for r in request.records)
        except (TypeError, ValueError, RecursionError) as exc:
            raise MalformedDataError(f"a record cannot be written as JSON: {exc}") from None
        data = self._http.json("POST", "/v1/import", idempotent=False, content=body,
                               params={"allow_forgotten": _flag(request.allow_forgotten),
                                       **({"trust": request.trust} if request.trust is not None else {})},
                               headers={"content-type": "application/x-ndjson"})
        if request.progress is not None:  # one request: every unit is dealt with when it answers
            request.progress(int(data.get("units", 0)))
        return {str(k): int(v) for k, v in data.items()}

    # -- reads -------------------------------------------------------------------
    def get(self, request: UnitRequest) -> MAU:
        return MAU.from_dict(self._http.json("GET", f"/v1/units/{_id(request.unit_id)}", idempotent=True,
                                             params=_scope(request.scope)))

    def raw(self, request: UnitRequest) -> tuple[bytes, str]:
        response = self._http.call("GET", f"/v1/units/{_id(request.unit_id)}/raw", idempotent=True,
                                   params=_scope(request.scope))
        return response.content, response.headers.get("content-type", "application/octet-stream")

    def full_text(self, request: UnitRequest) -> str | None:
        data = self._http.json("GET", f"/v1/units/{_id(request.unit_id)}", idempotent=True,
                               params=_scope(request.scope))
        return None if data.get("full_text") is None else str(data["full_text"])

    def units(self, request: ListRequest) -> list[MAU]:
        params = {**_listing(request), "limit": request.limit, "offset": request.offset}
        return [MAU.from_dict(u) for u in self._http.json("GET", "/v1/units", idempotent=True, params=params)["units"]]

    def count_units(self, request: ListRequest) -> int:
        params = {**_listing(request), "limit": 1}
        return int(self._http.json("GET", "/v1/units", idempotent=True, params=params)["total"])

    def search(self, request: SearchRequest) -> Context:
        r = request
        body = {"query": r.query, "top_k": r.top_k, "theta": r.theta, "budget": r.budget,
                "include_superseded": r.include_superseded, "as_of": _when(r.as_of), "now": _when(r.now),
                **_scope(r.scope), **({"planner": r.planner} if r.planner is not None else {}),
                **({"min_trust": r.min_trust} if r.min_trust is not None else {})}
        return Context.from_dict(self._http.json("POST", "/v1/search", idempotent=True, json=body))

    def ask(self, request: AskRequest) -> Answer:
        r = request
        body = {"question": r.question, "budget": r.budget, "top_k": r.top_k, "instructions": r.instructions,
                **_scope(r.scope), **({"min_trust": r.min_trust} if r.min_trust is not None else {})}
        return Answer.from_dict(self._http.json("POST", "/v1/ask", idempotent=True, json=body))

    def history(self, request: UnitRequest) -> list[AuditRecord]:
        data = self._http.json("GET", f"/v1/units/{_id(request.unit_id)}/history", idempotent=True,
                               params=_scope(request.scope))
        return [AuditRecord.from_dict(e) for e in data["events"]]

    def log(self, request: LogRequest) -> list[AuditRecord]:
        params: dict[str, Any] = _scope(request.scope)
        if request.limit is not None:
            params["limit"] = request.limit
        return [AuditRecord.from_dict(e) for e in self._http.json("GET", "/v1/log", idempotent=True,
                                                                   params=params)["events"]]

    def export(self, request: ExportRequest) -> Iterator[dict[str, Any]]:
        """Streamed: records arrive as the caller iterates (errors such as a missing scope raise at once)."""
        params = {**_scope(request.scope), "all": _flag(request.everything)}
        stream = self._http.stream("GET", "/v1/export", params=params)
        response = stream.__enter__()  # opened here so that an error raises at the call, as locally

        def records() -> Iterator[dict[str, Any]]:
            try:
                for line in response.iter_lines():
                    if line.strip():
                        yield dict(json.loads(line))
            finally:
                stream.__exit__(None, None, None)

        return records()

    def entities(self, request: ScopeRequest) -> list[Entity]:
        data = self._http.json("GET", "/v1/entities", idempotent=True, params=_scope(request.scope))
        return [Entity.from_dict(e) for e in data["entities"]]

    def entity_details(self, request: EntityRequest) -> list[dict[str, Any]]:
        scope = Scope(request.scope.user_id, request.scope.agent_id, None)
        data = self._http.json("GET", f"/v1/entities/{_id(request.name)}", idempotent=True, params=_scope(scope))
        return list(data["entities"])

    def neighbors(self, request: EntityRequest) -> list[Neighbor]:
        data = self._http.json("GET", f"/v1/entities/{_id(request.name)}/neighbors", idempotent=True,
                               params={**_scope(request.scope), "hops": request.hops})
        return [Neighbor.from_dict(n) for n in data["neighbors"]]

    def stats(self) -> dict[str, Any]:
        return dict(self._http.json("GET", "/v1/stats", idempotent=True))


def _when(value: object) -> object:
    return value.isoformat() if isinstance(value, datetime) else value


def _scope(scope: Scope) -> dict[str, str]:
    return {k: v for k, v in scope.as_dict().items() if v is not None}


def _id(value: str) -> str:
    return quote(value, safe="")


def _flag(value: object) -> str:
    if not isinstance(value, bool):
        raise InvalidInputError(f"expected True or False, got {type(value).__name__}")
    return "true" if value else "false"


def _listing(request: ListRequest) -> dict[str, Any]:
    params: dict[str, Any] = {**_scope(request.scope), "include_superseded": _flag(request.include_superseded)}
    for name, value in (("modality", request.modality), ("speaker", request.speaker),
                        ("since", _when(request.since)), ("until", _when(request.until))):
        if value is not None:
            params[name] = value
    return params


def _forget_body(request: ForgetRequest, *, preview: bool) -> dict[str, Any]:
    r = request
    return {"since": _when(r.since), "until": _when(r.until), "unit_ids": None if r.unit_ids is None else
            list(r.unit_ids), "all": r.everything, "all_users": r.all_users, "reason": r.reason, "preview": preview,
            **_scope(r.scope)}


Memory.register_url_engine(("http://", "https://"), RemoteEngine)
