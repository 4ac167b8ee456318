"""Getting a validated pydantic object out of any chat model.

Servers differ in what they support: OpenAI and recent vLLM honour
``response_format={"type": "json_schema"}``, many only know
``{"type": "json_object"}``, and some reject both. Models differ in what they
send back: fenced code blocks, a sentence before the JSON, ``<think>`` blocks
from reasoning models. This module holds the pieces that do not care which
server is on the other end:

* :func:`response_format_for` builds the request field for each mode;
* :func:`extract_json` finds the JSON value in whatever text came back;
* :func:`complete_with_repair` validates the reply and, once, shows the model
  its mistake before giving up with :class:`LLMResponseFormatError`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from omnimem.llm.base import Message, ModelT
from omnimem.llm.config import JsonMode
from omnimem.llm.errors import LLMResponseFormatError

_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCED_BLOCK = re.compile(r"```[a-zA-Z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)
_CLOSERS = {"{": "}", "[": "]"}
_REPLY_PREVIEW_CHARS = 200


class ReplyFormatProblem(ValueError):
    """A reply that is not the JSON we asked for; the message is shown to the model."""


def response_format_for(mode: JsonMode, schema: type[BaseModel]) -> dict[str, Any] | None:
    """The ``response_format`` request field for a mode; ``None`` sends nothing."""
    if mode == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {
                "name": _schema_name(schema),
                "schema": schema.model_json_schema(),
                # strict mode demands every property be required, which
                # ordinary pydantic models with defaults do not satisfy.
                "strict": False,
            },
        }
    if mode == "json_object":
        return {"type": "json_object"}
    return None


def extract_json(text: str) -> Any:
    """Return the first JSON value in ``text``, tolerating the usual wrapping.

    Tried in order: the whole text, each fenced code block, then every
    balanced ``{...}`` or ``[...]`` from left to right. Reasoning blocks
    (``<think>...</think>``) are dropped first because they often contain
    braces of their own. Raises :class:`ReplyFormatProblem` if nothing parses.
    """
    cleaned = _THINK_BLOCK.sub("", text).strip()
    if not cleaned:
        raise ReplyFormatProblem("the reply was empty")
    for candidate in _candidates(cleaned):
        try:
            return json.loads(candidate)
        except json.JSONDecodeError:
            continue
    raise ReplyFormatProblem("the reply contained no parseable JSON object or array")


def parse_reply(text: str, schema: type[ModelT]) -> ModelT:
    """Extract and validate a reply, raising :class:`ReplyFormatProblem` on failure."""
    value = extract_json(text)
    try:
        return schema.model_validate(value)
    except ValidationError as exc:
        raise ReplyFormatProblem(_describe_validation_error(exc)) from exc


def complete_with_repair(
    send: Callable[[Sequence[Message]], str],
    messages: Sequence[Message],
    schema: type[ModelT],
    *,
    source: str,
    on_repair: Callable[[], None] = lambda: None,
) -> ModelT:
    """Ask, validate, and on failure ask exactly once more with the error attached.

    ``send`` performs one chat request and returns the reply text; ``source``
    names the model and endpoint in the error message. A second failure raises
    :class:`LLMResponseFormatError`, because an empty or partial result would
    silently corrupt whatever the caller builds from it.
    """
    reply = send(messages)
    try:
        return parse_reply(reply, schema)
    except ReplyFormatProblem as first:
        on_repair()
        retry = [*messages, *repair_messages(reply, first, schema)]
        second_reply = send(retry)
        try:
            return parse_reply(second_reply, schema)
        except ReplyFormatProblem as second:
            preview = second_reply[:_REPLY_PREVIEW_CHARS]
            raise LLMResponseFormatError(
                f"{source} replied with something that is not a valid "
                f"{_schema_name(schema)} even after one repair attempt: {second}; "
                f"reply began {preview!r}"
            ) from second


def repair_messages(
    bad_reply: str, problem: ReplyFormatProblem, schema: type[BaseModel]
) -> list[Message]:
    """The two messages that show the model its reply and why it was rejected.

    This is the only prompt text the LLM layer writes: callers own their
    prompts, but only this layer knows the validation error.
    """
    schema_text = json.dumps(schema.model_json_schema(), separators=(",", ":"))
    return [
        {"role": "assistant", "content": bad_reply},
        {
            "role": "user",
            "content": (
                f"Your previous reply could not be used: {problem}. Reply again with "
                f"only a JSON value matching this JSON schema and no other text: "
                f"{schema_text}"
            ),
        },
    ]


def _candidates(text: str) -> Iterator[str]:
    yield text
    for match in _FENCED_BLOCK.finditer(text):
        yield match.group(1).strip()
    yield from _balanced_spans(text)


def _balanced_spans(text: str) -> Iterator[str]:
    """Yield each bracket-balanced span, skipping brackets inside JSON strings."""
    for start, opener in enumerate(text):
        if opener not in _CLOSERS:
            continue
        expected: list[str] = []
        in_string = escaped = False
        for index in range(start, len(text)):
            char = text[index]
            if in_string:
                if escaped:
                    escaped = False
                elif char == "\\":
                    escaped = True
                elif char == '"':
                    in_string = False
            elif char == '"':
                in_string = True
            elif char in _CLOSERS:
                expected.append(_CLOSERS[char])
            elif char in "}]":
                if char != expected.pop():
                    break  # mismatched bracket: this start cannot be JSON
                if not expected:
                    yield text[start : index + 1]
                    break


def _describe_validation_error(exc: ValidationError) -> str:
    """A short, model-readable list of what was wrong (no doc URLs)."""
    parts = []
    for error in exc.errors(include_url=False)[:10]:
        location = ".".join(str(part) for part in error["loc"]) or "(root)"
        parts.append(f"{location}: {error['msg']}")
    return "the JSON did not match the schema (" + "; ".join(parts) + ")"


def _schema_name(schema: type[BaseModel]) -> str:
    # OpenAI limits names to [a-zA-Z0-9_-]{1,64}; generic models have brackets.
    return re.sub(r"[^a-zA-Z0-9_-]", "_", schema.__name__)[:64] or "reply"
