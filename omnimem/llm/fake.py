"""A deterministic LLM for tests and benchmarks of the layers above.

It implements the same :class:`~omnimem.llm.base.LLM` protocol as the real
provider, including the validate-and-repair-once behaviour of
``complete_json``, so code tested against it behaves the same against a real
model. A fixed ``latency`` lets benchmarks model a slow endpoint without one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from omnimem.llm.base import Completion, LLMUsage, Message, ModelT, UsageMeter
from omnimem.llm.errors import LLMError
from omnimem.llm.structured import complete_with_repair

Responder = Callable[[Sequence[Message]], str]
Script = str | Sequence[str] | Responder
"""A fixed reply, replies handed out in order, or a function of the chat."""


class FakeLLM:
    """Answers from a script; never touches the network.

    * ``FakeLLM()`` echoes the last user message;
    * ``FakeLLM("yes")`` always answers ``"yes"``;
    * ``FakeLLM(["first", "second"])`` answers in order, then raises
      :class:`LLMError` (running past the script is a test bug, not a reply);
    * ``FakeLLM(lambda messages: ...)`` computes each reply.

    Tokens are counted as whitespace-separated words. Every chat it received
    is kept in ``prompts`` for assertions.
    """

    name = "fake"

    def __init__(
        self, script: Script | None = None, *, latency: float = 0.0, model: str = "fake"
    ) -> None:
        if latency < 0:
            raise ValueError(f"latency must be >= 0, got {latency}")
        self.latency = latency
        self.model = model
        self.prompts: list[list[Message]] = []
        self._script = script
        self._next_reply = 0
        self._lock = threading.Lock()
        self._meter = UsageMeter()

    def __repr__(self) -> str:
        return f"FakeLLM(model={self.model!r}, latency={self.latency})"

    def complete(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> Completion:
        with self._meter.timed_call():
            return self._reply(messages)

    def complete_json(
        self,
        messages: Sequence[Message],
        schema: type[ModelT],
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> ModelT:
        with self._meter.timed_call():
            return complete_with_repair(
                lambda chat: self._reply(chat).text,
                messages,
                schema,
                source=f"fake model {self.model!r}",
                on_repair=lambda: self._meter.add(repairs=1),
            )

    def usage(self) -> LLMUsage:
        return self._meter.snapshot()

    def _reply(self, messages: Sequence[Message]) -> Completion:
        if self.latency:
            time.sleep(self.latency)
        with self._lock:
            self.prompts.append(list(messages))
            script = self._script
            text = None if callable(script) else self._scripted_text(messages)
        if callable(script):  # a function of the chat runs outside the lock: parallel calls stay parallel
            text = script(messages)
        assert text is not None
        prompt_tokens = sum(_words(message.get("content")) for message in messages)
        completion_tokens = _words(text)
        self._meter.add(
            requests=1, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
        )
        return Completion(text, prompt_tokens, completion_tokens, self.model, "stop")

    def _scripted_text(self, messages: Sequence[Message]) -> str:
        script = self._script
        if script is None:
            users = [m.get("content") for m in messages if m.get("role") == "user"]
            return str(users[-1]) if users else ""
        if isinstance(script, str):
            return script
        if callable(script):
            return script(messages)
        if self._next_reply >= len(script):
            raise LLMError(f"FakeLLM script exhausted after {len(script)} replies")
        self._next_reply += 1
        return script[self._next_reply - 1]


def _words(content: object) -> int:
    return len(content.split()) if isinstance(content, str) else 0
