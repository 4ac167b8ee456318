"""The remote client's HTTP transport: one reused connection pool, timeouts, retries, typed errors.

Reads (and other idempotent calls) are retried with exponential backoff on
connection failures, timeouts, 502/503/504 and 429 (honouring
``Retry-After``); writes are retried only when the connection could not be
opened at all (nothing was sent). An error body ``{"error", "message"}``
becomes the same :class:`~omnimem.errors.OmnimemError` subclass the server
raised (:func:`omnimem.errors.error_class`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import httpx

from omnimem import otel
from omnimem.errors import InvalidInputError, OmnimemError, StoreError, RateLimitError, RemoteError, error_class

_RETRY_STATUS = (429, 502, 503, 504)


def _load_error_modules() -> None:
    """Error classes defined outside omnimem.errors must be imported to be found by name."""
    import omnimem.llm.errors  # noqa: F401
    import omnimem.media.errors  # noqa: F401


def error_from_response(response: httpx.Response) -> OmnimemError:
    """The typed error an error response stands for."""
    try:
        body = response.json()
        code, message = str(body["error"]), str(body["message"])
    except (ValueError, KeyError, TypeError):
        snippet = response.text[:200] if response.headers.get("content-type", "").startswith("text") else ""
        return RemoteError(f"HTTP {response.status_code} from {response.request.url}: {snippet}".rstrip(": "))
    _load_error_modules()
    cls = error_class(code)
    if issubclass(cls, RateLimitError):
        return cls(message, retry_after=_retry_after(response) or 1.0)
    try:
        return cls(message)
    except TypeError:  # a subclass with another constructor: keep the message, lose nothing else
        return OmnimemError(f"{code}: {message}")


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return float(response.headers["retry-after"])
    except (KeyError, ValueError):
        return None


def _build(client: httpx.Client, method: str, path: str, kwargs: Mapping[str, Any]) -> httpx.Request:
    try:
        request = client.build_request(method, path, **kwargs)
    except UnicodeEncodeError:
        raise InvalidInputError("text must be valid UTF-8 (it holds lone surrogates)") from None
    except (TypeError, ValueError) as exc:  # not JSON-serialisable (a set, an object, NaN)
        raise InvalidInputError(f"the request cannot be sent as JSON: {exc}") from None
    otel.inject(request.headers)  # the server's spans continue the caller's trace
    return request


class Transport:
    """An ``httpx.Client`` for one server (thread-safe: ``search_many`` shares it)."""

    def __init__(self, url: str, api_key: str | None, *, timeout: float, retries: int, backoff: float) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.url = url.rstrip("/")
        self.retries, self.backoff = retries, backoff
        self.client = httpx.Client(base_url=self.url, headers=headers, timeout=timeout,
                                   limits=httpx.Limits(max_connections=64, max_keepalive_connections=16))

    def call(self, method: str, path: str, *, idempotent: bool, **kwargs: Any) -> httpx.Response:
        """Send a request; the response when it succeeded, else the server's typed error."""
        response = self._send(method, path, idempotent, kwargs, stream=False)
        if response.is_error:
            raise error_from_response(response)
        return response

    def json(self, method: str, path: str, *, idempotent: bool, **kwargs: Any) -> Any:
        return self.call(method, path, idempotent=idempotent, **kwargs).json()

    @contextmanager
    def stream(self, method: str, path: str, **kwargs: Any) -> Iterator[httpx.Response]:
        """A streamed response (export), closed on exit; errors raised before the body is read."""
        response = self._send(method, path, True, kwargs, stream=True)
        try:
            if response.is_error:
                response.read()
                raise error_from_response(response)
            yield response
        finally:
            response.close()

    def _send(self, method: str, path: str, idempotent: bool, kwargs: Mapping[str, Any],
              stream: bool) -> httpx.Response:
        if self.client.is_closed:
            raise StoreError("this Memory is closed")
        attempt = 0
        while True:
            try:
                request = _build(self.client, method, path, kwargs)
                response = self.client.send(request, stream=stream)
            except httpx.ConnectError as exc:  # nothing reached the server: safe to retry any call
                if attempt >= self.retries:
                    raise RemoteError(f"cannot reach {self.url}: {exc}") from None
            except httpx.TransportError as exc:  # a timeout or a broken connection: the request may have run
                if not idempotent or attempt >= self.retries:
                    raise RemoteError(f"{method} {path} to {self.url} failed: {type(exc).__name__}: {exc}") from None
            else:
                if not (idempotent and response.status_code in _RETRY_STATUS and attempt < self.retries):
                    return response
                wait = _retry_after(response) if response.status_code == 429 else None
                response.close()
                if wait is not None:
                    time.sleep(min(wait, 30.0))
                    attempt += 1
                    continue
            time.sleep(self.backoff * (2 ** attempt))
            attempt += 1

    def close(self) -> None:
        self.client.close()
