"""The contract every LLM provider meets, and the values it returns.

Higher layers (extraction, ``Memory.ask``, benchmarks) depend on the
:class:`LLM` protocol only, so the real OpenAI-compatible provider and the
deterministic :class:`~omnimem.llm.fake.FakeLLM` are interchangeable.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

Message = Mapping[str, Any]
"""One chat message in OpenAI form, e.g. ``{"role": "user", "content": "hi"}``."""

ModelT = TypeVar("ModelT", bound=BaseModel)

CHARS_PER_TOKEN = 8
"""A reply is cut to this many characters per token of its cap before it is parsed.

Text runs 3 to 5 characters a token, so an honest reply is never cut; a server
that ignores ``max_tokens`` cannot hand a parser more than this."""

_DEADLINE: ContextVar[float | None] = ContextVar("omnimem_llm_deadline", default=None)


def reply_bound(max_tokens: int) -> int:
    """The most characters of a reply capped at ``max_tokens`` that anyone parses."""
    return max(1, max_tokens) * CHARS_PER_TOKEN


@contextmanager
def call_deadline(at: float) -> Iterator[None]:
    """Model calls made inside (this thread) end by ``time.monotonic() == at``.

    A provider waits for a request slot and for the reply at most until then,
    and does not retry: a call its caller gave up on cannot outlive the caller's
    deadline. Nested deadlines keep the earlier one.
    """
    earlier = _DEADLINE.get()
    token = _DEADLINE.set(at if earlier is None else min(at, earlier))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def deadline_left() -> float | None:
    """Seconds left before the :func:`call_deadline` in force, ``None`` when there is none."""
    at = _DEADLINE.get()
    return None if at is None else at - time.monotonic()


@dataclass(frozen=True)
class Completion:
    """A model's text reply and what it cost."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model: str = ""
    finish_reason: str | None = None
    """``"length"`` means the reply was cut off by ``max_tokens``."""


@dataclass(frozen=True)
class LLMUsage:
    """A snapshot of one provider's accounting since it was created.

    ``calls`` counts ``complete``/``complete_json`` invocations; ``requests``
    counts HTTP requests, which is larger when transport retries
    (``retries``), structured-output fallbacks or repair re-asks (``repairs``)
    happened. ``failures`` counts calls that raised. ``latency_s`` is the wall
    time callers spent inside calls, backoff included.
    """

    calls: int = 0
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    retries: int = 0
    repairs: int = 0
    failures: int = 0
    latency_s: float = 0.0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@runtime_checkable
class LLM(Protocol):
    """What omnimem needs from a language model; prompts stay with the caller."""

    name: str

    def complete(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> Completion:
        """Return the model's reply to a chat."""
        ...

    def complete_json(
        self,
        messages: Sequence[Message],
        schema: type[ModelT],
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> ModelT:
        """Return the reply parsed into ``schema``, or raise ``LLMResponseFormatError``."""
        ...

    def usage(self) -> LLMUsage:
        """Return the accounting so far."""
        ...


class UsageMeter:
    """Thread-safe counters behind ``usage()``, shared by every provider."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._totals: dict[str, float] = {name: 0.0 for name in LLMUsage.__dataclass_fields__}

    def add(self, **amounts: float) -> None:
        """Add to named counters, e.g. ``meter.add(requests=1, prompt_tokens=12)``."""
        with self._lock:
            for name, amount in amounts.items():
                self._totals[name] += amount

    def snapshot(self) -> LLMUsage:
        with self._lock:
            totals = dict(self._totals)
        return LLMUsage(
            **{name: int(value) for name, value in totals.items() if name != "latency_s"},
            latency_s=totals["latency_s"],
        )

    @contextmanager
    def timed_call(self) -> Iterator[None]:
        """Count one public call, its wall time, and whether it raised."""
        started = time.perf_counter()
        failed = True
        try:
            yield
            failed = False
        finally:
            self.add(calls=1, failures=int(failed), latency_s=time.perf_counter() - started)
