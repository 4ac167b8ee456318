"""One provider for every OpenAI-compatible chat server.

OpenAI, vLLM, Ollama, llama.cpp's server and LM Studio all speak
``POST {base_url}/chat/completions``, so one class talks to all of them with
the official ``openai`` SDK. What differs between them is handled here:

* structured output falls back from ``json_schema`` to ``json_object`` to
  plain text when a server rejects a mode, and remembers what worked;
* retries are ours, not the SDK's (it is built with ``max_retries=0``), so
  they are counted, capped and testable;
* SDK exceptions become the typed errors of :mod:`omnimem.llm.errors`.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Sequence
from typing import Any

from omnimem.errors import missing_extra

try:
    import openai
    from openai.types.chat import ChatCompletion
except ImportError as exc:  # the fake LLM and the rest of omnimem work without it
    raise missing_extra("openai", "llm") from exc

from omnimem.llm.base import Completion, LLMUsage, Message, ModelT, UsageMeter
from omnimem.llm.config import JSON_MODES, JsonMode, LLMConfig
from omnimem.llm.errors import LLMError, LLMUnavailableError
from omnimem.llm.openai_errors import (
    backoff_delay,
    is_context_length,
    is_transient,
    permanent_error,
    retry_after_seconds,
    server_message,
)
from omnimem.llm.structured import complete_with_repair, response_format_for

# Placeholder for servers that need no key: the SDK refuses to start without one.
_NO_KEY = "not-needed"


class _ModeRejected(Exception):
    """The server answered 400/422 to a request carrying ``response_format``."""


class OpenAICompatibleLLM:
    """An :class:`~omnimem.llm.base.LLM` backed by any OpenAI-compatible endpoint.

    Thread-safe: share one instance; ``config.concurrency`` bounds how many
    requests it has in flight at once.
    """

    name = "openai"

    def __init__(self, config: LLMConfig) -> None:
        self.config = config
        self._client = openai.OpenAI(
            base_url=config.base_url,
            api_key=config.api_key or _NO_KEY,
            timeout=config.timeout,
            max_retries=0,
        )
        self._slots = threading.BoundedSemaphore(config.concurrency)
        self._meter = UsageMeter()
        self._mode_lock = threading.Lock()
        self._json_mode: JsonMode = config.json_mode

    def __repr__(self) -> str:
        config = self.config
        return f"OpenAICompatibleLLM(model={config.model!r}, base_url={config.base_url!r})"

    @property
    def json_mode(self) -> JsonMode:
        """The structured-output mode the next ``complete_json`` starts with."""
        with self._mode_lock:
            return self._json_mode

    def complete(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> Completion:
        """Return the reply to ``messages``; raises an :class:`LLMError` subclass."""
        with self._meter.timed_call():
            return self._request(messages, temperature=temperature, max_tokens=max_tokens)

    def complete_json(
        self,
        messages: Sequence[Message],
        schema: type[ModelT],
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> ModelT:
        """Return the reply validated as ``schema``.

        Starts in the mode that last worked for this provider and steps down
        (``json_schema`` -> ``json_object`` -> text) when the server rejects
        a mode. Tells the model its mistake once before raising
        :class:`~omnimem.llm.errors.LLMResponseFormatError`.
        """
        with self._meter.timed_call():
            for mode in JSON_MODES[JSON_MODES.index(self.json_mode) :]:
                send = functools.partial(
                    self._reply_text,
                    temperature=temperature,
                    max_tokens=max_tokens,
                    response_format=response_format_for(mode, schema),
                )
                try:
                    result = complete_with_repair(
                        send,
                        messages,
                        schema,
                        source=self._describe(),
                        on_repair=lambda: self._meter.add(repairs=1),
                    )
                except _ModeRejected:
                    continue  # this server does not support the mode; try a simpler one
                self._remember_mode(mode)
                return result
            raise AssertionError("text mode sends no response_format, so it is never rejected")

    def usage(self) -> LLMUsage:
        return self._meter.snapshot()

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    def __enter__(self) -> OpenAICompatibleLLM:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- one request, with retries ------------------------------------------

    def _request(
        self,
        messages: Sequence[Message],
        *,
        temperature: float,
        max_tokens: int | None,
        response_format: dict[str, Any] | None = None,
    ) -> Completion:
        params: dict[str, Any] = {"model": self.config.model, "messages": list(messages)}
        params["temperature"] = temperature
        if max_tokens is not None:
            params["max_tokens"] = max_tokens
        if response_format is not None:
            params["response_format"] = response_format

        for attempt in range(self.config.max_retries + 1):
            try:
                with self._slots:
                    self._meter.add(requests=1)
                    response = self._client.chat.completions.create(**params)
                return self._to_completion(response)
            except openai.APIStatusError as exc:
                # Servers word a rejected response_format differently (some say
                # nothing useful), so any 400/422 counts; if the cause was
                # something else, the plain-text attempt will surface it.
                rejects_format = exc.status_code in (400, 422) and response_format is not None
                if rejects_format and not is_context_length(exc):
                    raise _ModeRejected(str(exc)) from exc
                if not is_transient(exc.status_code):
                    raise permanent_error(exc, self._describe()) from exc
                if attempt == self.config.max_retries:
                    raise LLMUnavailableError(
                        f"{self._describe()} still failed with HTTP {exc.status_code} after "
                        f"{attempt + 1} attempts: {server_message(exc)}"
                    ) from exc
                retry_after = retry_after_seconds(exc.response.headers)
            except openai.APIConnectionError as exc:  # includes APITimeoutError
                if attempt == self.config.max_retries:
                    timed_out = isinstance(exc, openai.APITimeoutError)
                    what = "timed out" if timed_out else "is unreachable"
                    raise LLMUnavailableError(
                        f"{self._describe()} {what} after {attempt + 1} attempts "
                        f"(timeout {self.config.timeout}s): {exc}"
                    ) from exc
                retry_after = None
            except openai.OpenAIError as exc:
                raise LLMError(f"{self._describe()} failed: {exc}") from exc
            self._meter.add(retries=1)
            cap, base = self.config.backoff_max, self.config.backoff_base
            time.sleep(backoff_delay(attempt, retry_after, base=base, cap=cap))
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _reply_text(
        self,
        messages: Sequence[Message],
        *,
        temperature: float,
        max_tokens: int | None,
        response_format: dict[str, Any] | None,
    ) -> str:
        completion = self._request(
            messages,
            temperature=temperature,
            max_tokens=max_tokens,
            response_format=response_format,
        )
        return completion.text

    def _to_completion(self, response: object) -> Completion:
        # A wrong base_url can answer 200 with an HTML page instead of JSON.
        if not isinstance(response, ChatCompletion) or not response.choices:
            raise LLMError(
                f"{self._describe()} answered with something that is not a chat completion; "
                f"check that the base URL points at an OpenAI-compatible /v1 endpoint"
            )
        usage = response.usage
        prompt_tokens = usage.prompt_tokens if usage else 0
        completion_tokens = usage.completion_tokens if usage else 0
        self._meter.add(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
        choice = response.choices[0]
        return Completion(
            text=choice.message.content or "",
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            model=response.model or self.config.model,
            finish_reason=choice.finish_reason,
        )

    # -- bookkeeping --------------------------------------------------------

    def _remember_mode(self, mode: JsonMode) -> None:
        with self._mode_lock:
            if JSON_MODES.index(mode) > JSON_MODES.index(self._json_mode):
                self._json_mode = mode

    def _describe(self) -> str:
        return f"model {self.config.model!r} at {self.config.base_url}"
