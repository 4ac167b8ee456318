"""What an ``openai`` SDK failure means for omnimem: retry, fall back, or raise which error.

Kept apart from the provider so the whole policy (which statuses are
transient, how long to wait, how servers phrase "context too long") reads in
one place. Imported only by :mod:`omnimem.llm.provider`, after it has checked
that the SDK is installed.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime

import openai

from omnimem.llm.errors import (
    LLMAuthError,
    LLMContextLengthError,
    LLMError,
    LLMModelNotFoundError,
)

# 408/409 are what OpenAI's own SDK retries besides 429 and 5xx.
_TRANSIENT_STATUSES = frozenset({408, 409, 429})
# OpenAI/vLLM say "maximum context length", llama.cpp "context size", others vary.
_CONTEXT_LENGTH_HINTS = (
    "context length",
    "context_length",
    "maximum context",
    "context size",
    "context window",
    "too many tokens",
)


def is_transient(status: int) -> bool:
    """Whether waiting and sending the same request again can succeed."""
    return status in _TRANSIENT_STATUSES or status >= 500


def is_context_length(exc: openai.APIStatusError) -> bool:
    text = f"{exc.message} {exc.body}".lower()
    return any(hint in text for hint in _CONTEXT_LENGTH_HINTS)


def server_message(exc: openai.APIStatusError) -> str:
    """The server's own error text, without the SDK's 'Error code: ...' prefix."""
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return str(body["message"])
    return exc.message


def permanent_error(exc: openai.APIStatusError, where: str) -> LLMError:
    """The typed error for a status that retrying cannot fix; ``where`` names model and URL."""
    status, detail = exc.status_code, server_message(exc)
    if isinstance(exc, (openai.AuthenticationError, openai.PermissionDeniedError)):
        return LLMAuthError(
            f"{where} rejected the API key (HTTP {status}): {detail}; check OMNIMEM_LLM_API_KEY"
        )
    if isinstance(exc, openai.NotFoundError):
        return LLMModelNotFoundError(
            f"{where}: model not found (HTTP {status}): {detail}; check OMNIMEM_LLM_MODEL "
            f"and that the base URL ends in /v1"
        )
    if is_context_length(exc):
        return LLMContextLengthError(
            f"{where}: the request exceeds the model's context length (HTTP {status}): {detail}"
        )
    return LLMError(f"{where} refused the request (HTTP {status}): {detail}")


def unreadable_reply(exc: Exception, where: str) -> LLMError:
    """The typed error for a reply the SDK could not read: a 200 whose body is not JSON, is cut off,
    nests past the parser's depth (``RecursionError``) or has the wrong shape."""
    detail = " ".join(str(exc).split())[:200]
    return LLMError(f"{where} answered something that is not a readable chat completion "
                    f"({type(exc).__name__}: {detail})")


def reported_tokens(value: object) -> int:
    """A token count as the server reported it, never below 0 (nor anything but a whole number)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return 0
    return max(0, value)


def backoff_delay(attempt: int, retry_after: float | None, *, base: float, cap: float) -> float:
    """Seconds before retry number ``attempt + 1``: the server's word, else jittered doubling.

    Both are capped, so a server asking for an hour cannot stall a caller.
    Jitter keeps threads that failed together from retrying together.
    """
    if retry_after is not None:
        return min(retry_after, cap)
    return min(base * 2**attempt, cap) * random.uniform(0.5, 1.0)  # type: ignore[no-any-return]


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """Parse ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date)."""
    for header, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(header)
        if value is None:
            continue
        try:
            return max(0.0, float(value) * scale)
        except ValueError:
            pass
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            continue
        return max(0.0, when.timestamp() - time.time())
    return None
