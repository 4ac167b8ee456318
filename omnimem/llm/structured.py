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

# Every pattern here matches at one place in constant time or by a character class, never by
# scanning ahead: a parse is linear in the reply, whatever the reply holds.
_THINK_TAG = re.compile(r"<(/?)think>", re.IGNORECASE)
_FENCE_HEAD = re.compile(r"[a-zA-Z0-9_-]*[ \t]*\n?")
# A "{" or "[" that can start a JSON value: what may follow it, after white space.
_OPENER = re.compile(r"\{[ \t\n\r]*[\"}]|\[[ \t\n\r]*[-0-9\"tfn{\[\]]")
_DECODER = json.JSONDecoder()
_SCAN_FACTOR = 4  # the candidate starts together read at most this many times the reply
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

    Tried in order: the whole text, each fenced code block, then the JSON value
    starting at each ``{`` or ``[`` from left to right. Reasoning blocks
    (``<think>...</think>``) are dropped first because they often contain
    braces of their own. Linear in the text (see :func:`json_values`). Raises
    :class:`ReplyFormatProblem` if nothing parses.
    """
    cleaned = drop_think_blocks(text).strip()
    if not cleaned:
        raise ReplyFormatProblem("the reply was empty")
    for value in json_values(cleaned):
        return value
    raise ReplyFormatProblem("the reply contained no parseable JSON object or array")


def json_values(text: str) -> Iterator[Any]:
    """Each JSON value in ``text``, in the order :func:`extract_json` tries them, in linear time.

    A start that does not decode costs about what the decoder read before it
    failed (``json.JSONDecoder.raw_decode``); once the starts together have read
    ``_SCAN_FACTOR`` times the text, the rest are not tried. A value nested past
    the decoder's depth is skipped, never raised.
    """
    for candidate in (text, *_fenced_blocks(text)):
        try:
            yield json.loads(candidate)
        except (ValueError, RecursionError):
            continue
    budget = _SCAN_FACTOR * len(text)
    for opener in _OPENER.finditer(text):
        value, read = _value_at(text, opener.start())
        if value is not _NOTHING:
            yield value
        budget -= read
        if budget < 0:
            return


_NOTHING = object()


def _value_at(text: str, start: int) -> tuple[Any, int]:
    """The JSON value starting at ``start`` (or ``_NOTHING``) and how many characters finding out read.

    Decoded from a window that doubles only while the decoder ran off its end:
    :class:`json.JSONDecodeError` counts the lines before its position, so a
    decode of the whole text from every start would be quadratic.
    """
    size, read = 64, 0
    while True:
        window = text[start : start + size]
        whole = len(window) < size
        try:
            value, end = _DECODER.raw_decode(window)
        except RecursionError:  # nested deeper than the decoder goes
            return _NOTHING, read + len(window)
        except json.JSONDecodeError as exc:
            ran_off = exc.pos >= len(window) - 8 or exc.msg.startswith("Unterminated")
            if whole or not ran_off:
                return _NOTHING, read + exc.pos + 1
            read += len(window)
        else:
            return value, read + end
        size *= 2


def drop_think_blocks(text: str) -> str:
    """``text`` without its ``<think>...</think>`` blocks (an unclosed one stays), in one pass."""
    kept: list[str] = []
    position, opened = 0, -1
    for tag in _THINK_TAG.finditer(text):
        closing = bool(tag.group(1))
        if opened < 0 and not closing:
            opened = tag.start()
        elif opened >= 0 and closing:
            kept.append(text[position:opened])
            position, opened = tag.end(), -1
    kept.append(text[position:])
    return "".join(kept)


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


def _fenced_blocks(text: str) -> Iterator[str]:
    """The inside of each ```` ```lang ... ``` ```` block, found with ``str.find``."""
    start = text.find("```")
    while start >= 0:
        head = _FENCE_HEAD.match(text, start + 3)
        body = head.end() if head else start + 3
        end = text.find("```", body)
        if end < 0:
            return
        block = text[body:end].strip()
        if block:
            yield block
        start = text.find("```", end + 3)


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
