"""A scripted OpenAI-compatible server on a free loopback port.

The real ``openai`` SDK talks to it over real HTTP, so the tests exercise the
same request building, status handling and timeouts as production. Each test
pushes the replies it wants, in order::

    server.push(chat('{"name": "Ada"}'), error(429, "slow down", headers={"Retry-After": "0"}))

and afterwards reads ``server.requests`` (the JSON bodies received) and
``server.max_in_flight``. When concurrent requests make arrival order
unpredictable, ``server.responder = lambda body: ...`` picks each reply from
the request itself (returning ``None`` falls through to the queue).

Hostile modes, for a model endpoint that is broken, overloaded or lying:
``chat("{" * 1_000_000)`` (a long reply), ``raw(b"<html>")`` (a 200 whose body
is not JSON), ``raw(cut_off(...))`` (a body cut off mid-JSON), ``raw(nested(100_000))``
(a body nested 100,000 deep), ``chat(..., delay=60)`` (slow) and
``chat(..., prompt_tokens=-1_000_000)`` (lying usage).
"""

from __future__ import annotations

import asyncio
import collections
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response


@dataclass(frozen=True)
class Reply:
    """One scripted answer: a chat completion (status 200) or an error body."""

    status: int = 200
    content: str = ""
    error_message: str = ""
    error_code: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    prompt_tokens: int = 11
    completion_tokens: int = 5
    body: bytes | None = None
    """Sent as it is (status 200, ``application/json``) instead of a chat completion."""


def raw(body: bytes, *, delay: float = 0.0) -> Reply:
    """A 200 that claims JSON and carries ``body`` exactly: broken, cut off, nested, anything."""
    return Reply(body=body, delay=delay)


def completion_body(content: str, *, model: str = "test-model", prompt_tokens: int = 11,
                    completion_tokens: int = 5) -> bytes:
    """The bytes of a well-formed chat completion (cut them to get a reply cut off mid-way)."""
    return json.dumps(_completion(chat(content, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens),
                                  model=model)).encode()


def cut_off(content: str = '{"needs": "x", "queries": ["a"]}') -> bytes:
    """A chat completion's body that ends half-way through (the connection's length is honest)."""
    whole = completion_body(content)
    return whole[: len(whole) // 2]


def nested(depth: int) -> bytes:
    """A JSON body of ``depth`` nested arrays (``[[[...]]]``): valid JSON that no recursive parser survives."""
    return b"[" * depth + b"]" * depth


def chat(
    content: str, *, delay: float = 0.0, prompt_tokens: int = 11, completion_tokens: int = 5
) -> Reply:
    """A successful completion whose assistant message is ``content``."""
    return Reply(
        content=content,
        delay=delay,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
    )


def error(
    status: int, message: str, *, code: str | None = None, headers: dict[str, str] | None = None
) -> Reply:
    """An OpenAI-style error body: ``{"error": {"message": ..., "code": ...}}``."""
    return Reply(status=status, error_message=message, error_code=code, headers=headers or {})


class FakeOpenAIServer:
    """Serves ``/v1/chat/completions`` and ``/v1/models`` from a queue of replies."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.max_in_flight = 0
        self.default: Reply | None = None
        """Answer used when the queue is empty (e.g. a persistent 500)."""
        self.responder: Callable[[dict[str, Any]], Reply | None] | None = None
        """Chooses the reply from the request body; consulted before the queue."""
        self._queue: collections.deque[Reply] = collections.deque()
        self._in_flight = 0
        self._lock = threading.Lock()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._generation = 0  # reset() counts up: replies still sleeping from before stop sleeping
        self.url = ""

    def push(self, *replies: Reply) -> None:
        self._queue.extend(replies)

    def reset(self) -> None:
        """Forget the script and the records, once earlier slow replies have finished."""
        self._generation += 1  # a timed-out request's handler may still be sleeping: it stops now
        deadline = time.monotonic() + 5
        while self._in_flight and time.monotonic() < deadline:
            time.sleep(0.01)
        with self._lock:
            self._queue.clear()
            self.requests.clear()
            self.default = None
            self.responder = None
            self.max_in_flight = 0

    @property
    def response_format_types(self) -> list[str | None]:
        """The ``response_format.type`` of each request received, in order."""
        return [(body.get("response_format") or {}).get("type") for body in self.requests]

    def start(self) -> None:
        config = uvicorn.Config(
            self._app(), host="127.0.0.1", port=0, log_level="warning", timeout_graceful_shutdown=1
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="fake-openai", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("fake OpenAI server did not start")
            time.sleep(0.01)
        port = self._server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/v1"

    def stop(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=10)

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        chosen = self.responder(body) if self.responder is not None else None
        if chosen is not None:
            return chosen
        if self._queue:
            return self._queue.popleft()
        if self.default is not None:
            return self.default
        return error(418, "fake server: the test scripted no reply for this request")

    def _app(self) -> FastAPI:
        app = FastAPI()

        @app.get("/v1/models")
        async def models() -> dict[str, Any]:
            model = {"id": "test-model", "object": "model", "owned_by": "tests"}
            return {"object": "list", "data": [model]}

        @app.post("/v1/chat/completions")
        async def completions(request: Request) -> Response:
            body = await request.json()
            with self._lock:
                self.requests.append(body)
                self._in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self._in_flight)
            try:
                reply = self._next_reply(body)
                if reply.delay:  # slept in steps, so that reset() ends a reply the client gave up on
                    generation, end = self._generation, time.monotonic() + reply.delay
                    while self._generation == generation and (left := end - time.monotonic()) > 0:
                        await asyncio.sleep(min(left, 0.01))
                return _render(reply, model=body.get("model", ""))
            finally:
                with self._lock:
                    self._in_flight -= 1

        return app


def _render(reply: Reply, *, model: str) -> Response:
    if reply.body is not None:
        return Response(reply.body, media_type="application/json", headers=reply.headers)
    if reply.status != 200:
        details = {"message": reply.error_message, "type": "test_error", "code": reply.error_code}
        payload = {"error": {**details, "param": None}}
        return JSONResponse(payload, status_code=reply.status, headers=reply.headers)
    return JSONResponse(_completion(reply, model=model), headers=reply.headers)


def _completion(reply: Reply, *, model: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply.content},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        },
    }
