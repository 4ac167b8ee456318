"""``Memory(url="http://host:port", api_key=...)``: the same facade, served by an omnimem server.

:class:`RemoteMemory` is a :class:`~omnimem.Memory` whose verbs are HTTP
calls (``docs/http-api.md``) and whose results are the same value objects,
rebuilt with their ``from_dict``. Errors are the same classes
(``except NotFoundError`` works the same). What only exists in-process (the
store, the indexes, the models, ``reembed``) raises
:class:`~omnimem.errors.RemoteUnsupportedError`. Scope ids default to the
API key's on the server.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn
from urllib.parse import quote

from omnimem import validate
from omnimem.engine.retrieval.answer import Answer
from omnimem.config import Settings
from omnimem.embed import Embedder
from omnimem.errors import ConfigError, InvalidInputError, MalformedDataError, RemoteUnsupportedError, missing_extra
from omnimem.entities import Entity
from omnimem.index.manager import IndexSet
from omnimem.engine.ingest.media import ANONYMOUS_UPLOAD, MediaResult
from omnimem.engine.ingest.pipeline import Progress
from omnimem.engine.ingest.prepare import AddResult
from omnimem.llm import LLM
from omnimem.mau import MAU
from omnimem.memory import Memory
from omnimem.engine.retrieval.pyramid import Context
from omnimem.store.audit import AuditRecord
from omnimem.store.base import Store
from omnimem.tokens import TokenCounter

if TYPE_CHECKING:
    from omnimem.graph.engine import KnowledgeGraph, Neighbor
    from omnimem.index.clip import ClipSearch



def _when(value: str | datetime | None) -> str | None:
    return value.isoformat() if isinstance(value, datetime) else value


def _scope(user_id: str | None, agent_id: str | None, session_id: str | None) -> dict[str, str]:
    return {k: v for k, v in (("user_id", user_id), ("agent_id", agent_id), ("session_id", session_id))
            if v is not None}


def _unsupported(what: str) -> NoReturn:
    raise RemoteUnsupportedError(f"{what} is not available on a remote Memory; use it on the server's own store")


class RemoteMemory(Memory):
    """A :class:`Memory` over HTTP; made by ``Memory(url="http(s)://...", api_key=...)``."""

    def __init__(self, path: str | Path | None = None, *, url: str | None = None, api_key: str | None = None,
                 timeout: float = 60.0, retries: int = 3, backoff: float = 0.2, **unsupported: Any) -> None:
        if path is not None:
            raise InvalidInputError("pass either path= (an embedded store) or url= (a server), not both")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ConfigError("a remote Memory needs url='http(s)://host:port'")
        given = sorted(k for k, v in unsupported.items() if v is not None)
        if given:
            raise ConfigError(f"{', '.join(given)} cannot be set on a remote Memory; the server's settings apply")
        self.url = url.rstrip("/")
        self.path = None
        self.actor = "remote"
        try:
            from omnimem.remote.transport import Transport
        except ImportError:
            raise missing_extra("httpx", "server") from None
        self._http = Transport(self.url, api_key, timeout=timeout, retries=retries, backoff=backoff)
        self._timeout = float(timeout)
        self._closed = False

    # -- what exists only in-process ---------------------------------------------
    @property
    def settings(self) -> Settings:  # type: ignore[override]
        _unsupported("settings")

    @property
    def store(self) -> Store:
        _unsupported("store")

    @property
    def indexes(self) -> IndexSet:
        _unsupported("indexes")

    @property
    def embedder(self) -> Embedder:
        _unsupported("embedder")

    @property
    def llm(self) -> LLM | None:
        _unsupported("llm")

    @property
    def graph(self) -> KnowledgeGraph | None:
        _unsupported("graph")

    @property
    def clip(self) -> ClipSearch | None:
        _unsupported("clip")

    @property
    def count_tokens(self) -> TokenCounter:
        _unsupported("count_tokens")

    def reembed(self, embedder: str | Embedder) -> int:
        _unsupported("reembed")

    def export_graph(self, *, format: str = "json", user_id: str | None = None, agent_id: str | None = None) -> str:
        _unsupported("export_graph")

    # -- lifecycle -------------------------------------------------------------
    def close(self) -> None:
        """Close the connection pool. Safe to call twice."""
        self._closed = True
        self._http.close()

    @property
    def read_only(self) -> bool:
        """Whether the server's store is read-only (then writes raise ReadOnlyStoreError)."""
        return bool(self._http.json("GET", "/healthz", idempotent=True).get("read_only", False))

    # -- writes ------------------------------------------------------------------
    def add(self, text: str | bytes, *, time: str | datetime | None = None, speaker: str | None = None,
            source_id: str | None = None, user_id: str | None = None, agent_id: str | None = None,
            session_id: str | None = None, metadata: Mapping[str, Any] | None = None,
            supersedes: Sequence[str] | None = None, allow_forgotten: bool = False) -> AddResult:
        body = {"text": _text(text), "time": _when(time),
                "speaker": speaker, "source_id": source_id, "metadata": None if metadata is None else dict(metadata),
                "supersedes": None if supersedes is None else list(supersedes), "allow_forgotten": allow_forgotten,
                **_scope(user_id, agent_id, session_id)}
        return AddResult.from_dict(self._http.json("POST", "/v1/units", idempotent=False, json=body))

    def update(self, unit_id: str, *, text: str | None = None, time: str | datetime | None = None,
               speaker: str | None = None, reason: str | None = None, user_id: str | None = None,
               agent_id: str | None = None, session_id: str | None = None) -> AddResult:
        body = {"text": text, "time": _when(time), "speaker": speaker, "reason": reason,
                **_scope(user_id, agent_id, session_id)}
        return AddResult.from_dict(self._http.json("PATCH", f"/v1/units/{_id(unit_id)}", idempotent=False, json=body))

    def add_dialogue(self, turns: Iterable[Mapping[str, Any]], *, user_id: str | None = None,
                     agent_id: str | None = None, session_id: str | None = None, restate: bool = False,
                     allow_forgotten: bool = False, progress: Progress | None = None) -> list[AddResult]:
        if isinstance(turns, str | bytes) or not isinstance(turns, Iterable):
            raise InvalidInputError("turns must be a list of mappings")
        items = [{k: _when(v) if k == "time" else v for k, v in dict(t).items()} if isinstance(t, Mapping) else t
                 for t in turns]
        body = {"turns": items, "restate": restate, "allow_forgotten": allow_forgotten,
                **_scope(user_id, agent_id, session_id)}
        data = self._http.json("POST", "/v1/dialogues", idempotent=False, json=body)
        results = [AddResult.from_dict(r) for r in data["results"]]
        if progress is not None:
            progress(len(results))
        return results

    def add_image(self, image: str | Path | bytes, caption: str | None = None, *, time: str | datetime | None = None,
                  source_id: str | None = None, user_id: str | None = None, agent_id: str | None = None,
                  session_id: str | None = None) -> AddResult:
        form = {"caption": caption, "time": _when(time), "source_id": source_id,
                **_scope(user_id, agent_id, session_id)}
        return AddResult.from_dict(self._upload("/v1/images", image, form))

    def add_audio(self, audio: str | Path | bytes, *, time: str | datetime | None = None, user_id: str | None = None,
                  agent_id: str | None = None, session_id: str | None = None,
                  progress: Progress | None = None) -> MediaResult:
        result = MediaResult.from_dict(self._upload("/v1/audio", audio, {"time": _when(time),
                                                                         **_scope(user_id, agent_id, session_id)}))
        if progress is not None:
            progress(len(result.results))
        return result

    def add_video(self, video: str | Path | bytes, *, time: str | datetime | None = None, fps: float = 1.0,
                  max_frames: int = 200, user_id: str | None = None, agent_id: str | None = None,
                  session_id: str | None = None) -> MediaResult:
        form = {"time": _when(time), "fps": fps, "max_frames": max_frames, **_scope(user_id, agent_id, session_id)}
        return MediaResult.from_dict(self._upload("/v1/videos", video, form))

    def _upload(self, route: str, source: str | Path | bytes, form: Mapping[str, Any]) -> Any:
        if isinstance(source, bytes):
            data, name = source, ANONYMOUS_UPLOAD
        elif isinstance(source, str | Path):
            path = Path(source)
            if not path.is_file():
                raise InvalidInputError(f"{path} is not a readable file")
            data, name = path.read_bytes(), path.name
        else:
            raise InvalidInputError("media must be a file path or bytes")
        fields = {k: str(v) for k, v in form.items() if v is not None}
        return self._http.json("POST", route, idempotent=False, files={"file": (name, data)}, data=fields)

    def delete(self, unit_id: str, *, reason: str | None = None, chain: bool = False, user_id: str | None = None,
               agent_id: str | None = None, session_id: str | None = None) -> None:
        params = {**_scope(user_id, agent_id, session_id), "chain": _flag(chain)}
        if reason is not None:
            params["reason"] = reason
        self._http.call("DELETE", f"/v1/units/{_id(unit_id)}", idempotent=False, params=params)

    def forget(self, *, user_id: str | None = None, agent_id: str | None = None, session_id: str | None = None,
               since: str | datetime | None = None, until: str | datetime | None = None,
               unit_ids: Sequence[str] | None = None, all: bool = False, all_users: bool = False,
               reason: str | None = None) -> int:
        body = _forget_body(user_id, agent_id, session_id, since, until, unit_ids, all, all_users, reason, False)
        return int(self._http.json("POST", "/v1/forget", idempotent=False, json=body)["forgotten"])

    def preview_forget(self, *, user_id: str | None = None, agent_id: str | None = None,
                       session_id: str | None = None, since: str | datetime | None = None,
                       until: str | datetime | None = None, unit_ids: Sequence[str] | None = None, all: bool = False,
                       all_users: bool = False, reason: str | None = None) -> list[MAU]:
        body = _forget_body(user_id, agent_id, session_id, since, until, unit_ids, all, all_users, reason, True)
        return [MAU.from_dict(u) for u in self._http.json("POST", "/v1/forget", idempotent=True, json=body)["units"]]

    # -- reads -------------------------------------------------------------------
    def get(self, unit_id: str, *, user_id: str | None = None, agent_id: str | None = None,
            session_id: str | None = None) -> MAU:
        data = self._http.json("GET", f"/v1/units/{_id(unit_id)}", idempotent=True,
                               params=_scope(user_id, agent_id, session_id))
        return MAU.from_dict(data)

    def raw(self, unit_id: str, *, user_id: str | None = None, agent_id: str | None = None,
            session_id: str | None = None) -> tuple[bytes, str]:
        response = self._http.call("GET", f"/v1/units/{_id(unit_id)}/raw", idempotent=True,
                                   params=_scope(user_id, agent_id, session_id))
        return response.content, response.headers.get("content-type", "application/octet-stream")

    def units(self, *, modality: str | None = None, speaker: str | None = None, since: str | datetime | None = None,
              until: str | datetime | None = None, include_superseded: bool = False, limit: int = 50,
              offset: int = 0, user_id: str | None = None, agent_id: str | None = None,
              session_id: str | None = None) -> list[MAU]:
        params = _listing(modality, speaker, since, until, include_superseded, user_id, agent_id, session_id)
        data = self._http.json("GET", "/v1/units", idempotent=True, params={**params, "limit": limit,
                                                                            "offset": offset})
        return [MAU.from_dict(u) for u in data["units"]]

    def count_units(self, *, modality: str | None = None, speaker: str | None = None,
                    since: str | datetime | None = None, until: str | datetime | None = None,
                    include_superseded: bool = False, user_id: str | None = None, agent_id: str | None = None,
                    session_id: str | None = None) -> int:
        params = _listing(modality, speaker, since, until, include_superseded, user_id, agent_id, session_id)
        return int(self._http.json("GET", "/v1/units", idempotent=True, params={**params, "limit": 1})["total"])

    def search(self, query: str, *, top_k: int | None = None, theta: float | None = None, budget: int | None = None,
               user_id: str | None = None, agent_id: str | None = None, session_id: str | None = None,
               include_superseded: bool = False, as_of: str | datetime | None = None,
               now: str | datetime | None = None) -> Context:
        body = {"query": query, "top_k": top_k, "theta": theta, "budget": budget,
                "include_superseded": include_superseded, "as_of": _when(as_of), "now": _when(now),
                **_scope(user_id, agent_id, session_id)}
        return Context.from_dict(self._http.json("POST", "/v1/search", idempotent=True, json=body))

    def ask(self, question: str, *, user_id: str | None = None, agent_id: str | None = None,
            session_id: str | None = None, budget: int | None = None, top_k: int | None = None,
            instructions: str | None = None) -> Answer:
        body = {"question": question, "budget": budget, "top_k": top_k, "instructions": instructions,
                **_scope(user_id, agent_id, session_id)}
        return Answer.from_dict(self._http.json("POST", "/v1/ask", idempotent=True, json=body))

    def history(self, unit_id: str, *, user_id: str | None = None, agent_id: str | None = None,
                session_id: str | None = None) -> list[AuditRecord]:
        data = self._http.json("GET", f"/v1/units/{_id(unit_id)}/history", idempotent=True,
                               params=_scope(user_id, agent_id, session_id))
        return [AuditRecord.from_dict(e) for e in data["events"]]

    def log(self, *, user_id: str | None = None, agent_id: str | None = None, session_id: str | None = None,
            limit: int | None = None) -> list[AuditRecord]:
        params: dict[str, Any] = _scope(user_id, agent_id, session_id)
        if limit is not None:
            params["limit"] = limit
        return [AuditRecord.from_dict(e) for e in self._http.json("GET", "/v1/log", idempotent=True,
                                                                   params=params)["events"]]

    def export(self, *, user_id: str | None = None, agent_id: str | None = None, session_id: str | None = None,
               all: bool = False) -> Iterator[dict[str, Any]]:
        """Streamed: records arrive as the caller iterates (errors such as a missing scope raise at once)."""
        params = {**_scope(user_id, agent_id, session_id), "all": _flag(all)}
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

    def import_records(self, records: Iterable[Mapping[str, Any]], *, allow_forgotten: bool = False,
                       progress: Progress | None = None) -> dict[str, int]:
        if isinstance(records, str | bytes | Mapping) or not isinstance(records, Iterable):
            raise InvalidInputError("records must be an iterable of mappings (JSON objects)")
        try:  # ASCII escapes: a lone surrogate reaches the server's checks, which name the record as locally
            body = b"".join(json.dumps(dict(r), allow_nan=False).encode("ascii") + b"\n" for r in records)
        except (TypeError, ValueError, RecursionError) as exc:
            raise MalformedDataError(f"a record cannot be written as JSON: {exc}") from None
        data = self._http.json("POST", "/v1/import", idempotent=False, content=body,
                               params={"allow_forgotten": _flag(allow_forgotten)},
                               headers={"content-type": "application/x-ndjson"})
        if progress is not None:  # one request: every unit is dealt with when it answers
            progress(int(data.get("units", 0)))
        return {str(k): int(v) for k, v in data.items()}

    def entities(self, *, user_id: str | None = None, agent_id: str | None = None,
                 session_id: str | None = None) -> list[Entity]:
        data = self._http.json("GET", "/v1/entities", idempotent=True, params=_scope(user_id, agent_id, session_id))
        return [Entity.from_dict(e) for e in data["entities"]]

    def entity_details(self, name: str, *, user_id: str | None = None,
                       agent_id: str | None = None) -> list[dict[str, Any]]:
        data = self._http.json("GET", f"/v1/entities/{_id(name)}", idempotent=True,
                               params=_scope(user_id, agent_id, None))
        return list(data["entities"])

    def neighbors(self, name: str, *, hops: int = 2, user_id: str | None = None, agent_id: str | None = None,
                  session_id: str | None = None) -> list[Neighbor]:
        from omnimem.graph.engine import Neighbor

        data = self._http.json("GET", f"/v1/entities/{_id(name)}/neighbors", idempotent=True,
                               params={**_scope(user_id, agent_id, session_id), "hops": hops})
        return [Neighbor.from_dict(n) for n in data["neighbors"]]

    def stats(self) -> dict[str, Any]:
        return dict(self._http.json("GET", "/v1/stats", idempotent=True))

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until the server's queued enrichment has landed; False if ``timeout`` seconds passed first."""
        if timeout is not None:
            timeout = validate.real(timeout, "timeout", low=0.0, high=1e9)
        deadline = None if timeout is None else time.monotonic() + timeout
        step = max(0.0, min(20.0, self._timeout / 2))  # each call waits less than the client's own timeout
        while True:  # ask again until done or out of time
            left = step if deadline is None else max(0.0, min(step, deadline - time.monotonic()))
            if self._http.json("POST", "/v1/flush", idempotent=True, json={"timeout": left})["done"]:
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False

    def __repr__(self) -> str:
        return f"Memory(url={self.url!r})"


def _id(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError("unit_id must be a non-empty string")
    return quote(value, safe="")


def _text(value: object) -> object:
    """Bytes are sent as the text they encode (as ``Memory.add`` reads them); anything else as given."""
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError as exc:  # the local facade's message
            raise InvalidInputError(f"text is not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
    return value


def _flag(value: object) -> str:
    if not isinstance(value, bool):
        raise InvalidInputError(f"expected True or False, got {type(value).__name__}")
    return "true" if value else "false"


def _listing(modality: str | None, speaker: str | None, since: str | datetime | None, until: str | datetime | None,
             include_superseded: bool, user_id: str | None, agent_id: str | None,
             session_id: str | None) -> dict[str, Any]:
    params: dict[str, Any] = {**_scope(user_id, agent_id, session_id), "include_superseded": _flag(include_superseded)}
    for name, value in (("modality", modality), ("speaker", speaker), ("since", _when(since)),
                        ("until", _when(until))):
        if value is not None:
            params[name] = value
    return params


def _forget_body(user_id: str | None, agent_id: str | None, session_id: str | None, since: str | datetime | None,
                 until: str | datetime | None, unit_ids: Sequence[str] | None, everything: bool, all_users: bool,
                 reason: str | None, preview: bool) -> dict[str, Any]:
    ids = list(unit_ids) if isinstance(unit_ids, list | tuple) else unit_ids  # anything else: the server refuses it
    return {"since": _when(since), "until": _when(until), "unit_ids": ids,
            "all": everything, "all_users": all_users, "reason": reason, "preview": preview,
            **_scope(user_id, agent_id, session_id)}


Memory.register_url_engine(("http://", "https://"), RemoteMemory)
