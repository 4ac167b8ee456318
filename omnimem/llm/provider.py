"""One provider for every OpenAI-compatible chat server.

OpenAI, vLLM, Ollama, llama.cpp's server and LM Studio all speak
``POST {base_url}/chat/completions``, so one class talks to all of them with
the official ``openai`` SDK. What differs between them is handled here:

* structured output falls back from ``json_schema`` to ``json_object`` to
  plain text when a server rejects a mode, and remembers what worked;
* retries are ours, not the SDK's (it is built with ``max_retries=0``), so
  they are counted, capped and testable;
* every exception a request can raise (the SDK's, and a 200 whose body is not
  JSON, is cut off or nests past the parser's depth) becomes a typed error of
  :mod:`omnimem.llm.errors`, in one place (:meth:`OpenAICompatibleLLM._request`);
* a reply is cut near its token cap before anyone parses it, and usage the
  server reports below zero counts as zero;
* under a caller's :func:`~omnimem.llm.base.call_deadline` a request waits for
  a slot and for its reply at most until then, and is not retried.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Sequence
from typing import Any

from omnimem.errors import OmnimemError, missing_extra

try:
    import openai
    from openai.types.chat import ChatCompletion
except ImportError as exc:  # the fake LLM and the rest of omnimem work without it
    raise missing_extra("openai", "llm") from exc

from omnimem.llm.base import Completion, LLMUsage, Message, ModelT, UsageMeter, deadline_left, reply_bound
from omnimem.llm.config import JSON_MODES, JsonMode, LLMConfig
from omnimem.llm.errors import LLMError, LLMUnavailableError
from omnimem.llm.openai_errors import (
    backoff_delay,
    is_context_length,
    is_transient,
    permanent_error,
    reported_tokens,
    retry_after_seconds,
    server_message,
    unreadable_reply,
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
        cap = self.config.max_tokens if max_tokens is None else max_tokens
        params: dict[str, Any] = {"model": self.config.model, "messages": list(messages)}
        params["temperature"] = temperature
        params["max_tokens"] = cap
        if response_format is not None:
            params["response_format"] = response_format
        # Under a caller's deadline there is one attempt, bounded by what is left of it.
        attempts = 1 if deadline_left() is not None else self.config.max_retries + 1

        # Every exception a call can raise is mapped here: a typed LLMError, a retry, or a mode fallback.
        for attempt in range(attempts):
            last = attempt == attempts - 1
            try:
                return self._attempt(params, cap)
            except OmnimemError:
                raise  # already typed (a slot not free by the deadline, an answer of the wrong shape)
            except openai.APIStatusError as exc:
                # Servers word a rejected response_format differently (some say
                # nothing useful), so any 400/422 counts; if the cause was
                # something else, the plain-text attempt will surface it.
                rejects_format = exc.status_code in (400, 422) and response_format is not None
                if rejects_format and not is_context_length(exc):
                    raise _ModeRejected(str(exc)) from exc
                if not is_transient(exc.status_code):
                    raise permanent_error(exc, self._describe()) from exc
                if last:
                    raise LLMUnavailableError(
                        f"{self._describe()} still failed with HTTP {exc.status_code} after "
                        f"{attempt + 1} attempts: {server_message(exc)}"
                    ) from exc
                retry_after = retry_after_seconds(exc.response.headers)
            except openai.APIConnectionError as exc:  # includes APITimeoutError
                if last:
                    timed_out = isinstance(exc, openai.APITimeoutError)
                    what = "timed out" if timed_out else "is unreachable"
                    raise LLMUnavailableError(
                        f"{self._describe()} {what} after {attempt + 1} attempts "
                        f"(timeout {self.config.timeout}s): {exc}"
                    ) from exc
                retry_after = None
            except openai.OpenAIError as exc:
                raise LLMError(f"{self._describe()} failed: {exc}") from exc
            except Exception as exc:  # a 200 that is not JSON, cut off, nested past the parser's depth, ...
                raise unreadable_reply(exc, self._describe()) from exc
            self._meter.add(retries=1)
            cap_s, base = self.config.backoff_max, self.config.backoff_base
            time.sleep(backoff_delay(attempt, retry_after, base=base, cap=cap_s))
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _attempt(self, params: dict[str, Any], cap: int) -> Completion:
        """One HTTP request in one of the provider's slots, both waited for at most until the deadline."""
        left = deadline_left()
        if left is None:
            self._slots.acquire()
        elif left <= 0 or not self._slots.acquire(timeout=left):
            raise LLMUnavailableError(
                f"{self._describe()}: the caller's deadline passed before one of the "
                f"{self.config.concurrency} request slots was free"
            )
        try:
            left = deadline_left()
            timeout = self.config.timeout if left is None else min(self.config.timeout, max(left, 0.001))
            self._meter.add(requests=1)
            response = self._client.chat.completions.create(**params, timeout=timeout)
            return self._to_completion(response, cap)
        finally:
            self._slots.release()

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

    def _to_completion(self, response: object, cap: int) -> Completion:
        # A wrong base_url can answer 200 with an HTML page instead of JSON.
        choices = getattr(response, "choices", None)
        if not isinstance(response, ChatCompletion) or not isinstance(choices, list) or not choices:
            raise LLMError(
                f"{self._describe()} answered with something that is not a chat completion; "
                f"check that the base URL points at an OpenAI-compatible /v1 endpoint"
            )
        content = getattr(getattr(choices[0], "message", None), "content", None)
        if content is not None and not isinstance(content, str):
            raise LLMError(f"{self._describe()} answered a chat completion whose message content is not a string")
        usage = response.usage
        prompt_tokens = reported_tokens(getattr(usage, "prompt_tokens", 0))
        completion_tokens = reported_tokens(getattr(usage, "completion_tokens", 0))
        self._meter.add(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
        text = content or ""
        bound = reply_bound(cap)
        finish_reason = getattr(choices[0], "finish_reason", None)
        if len(text) > bound:  # the server ignored max_tokens: no parser gets more than the cap allows
            text, finish_reason = text[:bound], "length"
        model = response.model if isinstance(response.model, str) and response.model else self.config.model
        return Completion(
            text=text,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            model=model,
            finish_reason=finish_reason if isinstance(finish_reason, str) else None,
        )

    # -- bookkeeping --------------------------------------------------------

    def _remember_mode(self, mode: JsonMode) -> None:
        with self._mode_lock:
            if JSON_MODES.index(mode) > JSON_MODES.index(self._json_mode):
                self._json_mode = mode

    def _describe(self) -> str:
        return f"model {self.config.model!r} at {self.config.base_url}"
