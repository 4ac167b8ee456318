"""Errors raised when talking to a language model.

Every class is an :class:`~omnimem.errors.OmnimemError`, so callers that only
care about "omnimem failed" catch one root, while callers that can react
(switch model, shorten the prompt, tell the user to set a key) catch the
specific class. Messages name the endpoint, the model and the HTTP status so a
one-line CLI message is enough to fix the setup.
"""

from __future__ import annotations

from omnimem.errors import OmnimemError


class LLMError(OmnimemError):
    """Root of every LLM failure; the model sits behind us, hence 502."""

    status = 502


class LLMUnavailableError(LLMError):
    """The endpoint could not be reached, timed out, or kept failing after retries."""

    status = 503


class LLMAuthError(LLMError):
    """The endpoint refused our credentials (HTTP 401 or 403)."""


class LLMModelNotFoundError(LLMError):
    """The endpoint does not serve the configured model (HTTP 404)."""


class LLMContextLengthError(LLMError):
    """The request does not fit the model's context window; retrying cannot help."""

    status = 413


class LLMResponseFormatError(LLMError):
    """The model's reply did not parse or validate, even after one repair attempt."""


class LLMNotConfiguredError(LLMError):
    """An operation needs an LLM but none is configured."""

    status = 501


__all__ = [
    "LLMAuthError",
    "LLMContextLengthError",
    "LLMError",
    "LLMModelNotFoundError",
    "LLMNotConfiguredError",
    "LLMResponseFormatError",
    "LLMUnavailableError",
]
