"""Short summaries of long text for level 1 of the retrieval pyramid.

A long unit is indexed and shown by its summary; its full text goes to the
cold tier and comes back at level 2. With an LLM the summary is written by
the model; without one it is the first ``max_words`` words followed by
" …", exactly what the core has always stored. Text of ``max_words`` words
or fewer is its own summary, and no LLM is called for it.

Words are not enough for text without spaces (Chinese, Japanese, Thai, a
long URL): a 40,000-character Chinese text is one "word". So a summary is
also held to ``TOKENS_PER_WORD * max_words`` tokens, cut by counting tokens.
"""

from __future__ import annotations

import logging
import re

from pydantic import BaseModel, Field

from omnimem.errors import ConfigError, InvalidInputError
from omnimem.llm.base import LLM, Message
from omnimem.tokens import count_tokens, truncate_tokens

log = logging.getLogger(__name__)

SUMMARY_PROMPT = """\
You write the summary line for one entry of a long-term memory. It is what the entry is found and shown by; the \
full text stays available.

Write at most {max_words} words. Make it self-contained: keep the names of people, places and things, dates, \
numbers and the main facts, events and decisions; drop filler. Do not add anything the text does not say. Write \
in the text's language.

Reply with only a JSON object: {{"summary": "..."}}
"""

ELLIPSIS = " …"
TOKENS_PER_WORD = 2  # English averages 1.3 tokens a word: word-cut summaries of English stay as they were


class SummaryReply(BaseModel):
    """The reply schema."""

    summary: str = Field(min_length=1, description="The summary, at most the number of words asked for.")


def summarise(text: str, llm: LLM | None, *, max_words: int = 60) -> str:
    """Return a summary of at most ``max_words`` words (plus " …" when cut).

    Raises :class:`InvalidInputError` for empty text, and the provider's
    :class:`~omnimem.llm.errors.LLMError` subclasses (e.g.
    ``LLMResponseFormatError`` after its one repair attempt) when the LLM fails:
    the caller decides whether to fall back to ``summarise(text, None)``.
    """
    if not isinstance(text, str) or not text.strip():
        raise InvalidInputError("text to summarise is empty")
    if max_words < 1:
        raise ConfigError(f"summary max_words must be >= 1, got {max_words}")
    if _fits(text, max_words):
        return text
    if llm is None:
        return first_words(text, max_words)
    reply = llm.complete_json(summary_messages(text, max_words=max_words), SummaryReply)
    summary = re.sub(r"\s+", " ", reply.summary).strip()
    if not summary:
        return first_words(text, max_words)
    if not _fits(summary, max_words):
        log.debug("summary of %d words cut to %d", len(summary.split()), max_words)
        return first_words(summary, max_words)
    return summary


def _fits(text: str, max_words: int) -> bool:
    if len(text.split()) > max_words:
        return False
    limit = TOKENS_PER_WORD * max_words
    # a cl100k token covers at least one UTF-8 byte, so text of no more bytes than the limit fits without
    # counting (most turns of a conversation): ingest then never waits for the tokenizer
    return len(text.encode("utf-8", "surrogatepass")) <= limit or count_tokens(text) <= limit


def first_words(text: str, max_words: int) -> str:
    """The offline summary: the first ``max_words`` words (at most ``TOKENS_PER_WORD`` tokens a word), then " …"."""
    if _fits(text, max_words):
        return text
    cut = " ".join(text.split()[:max_words])
    return first_tokens(cut, TOKENS_PER_WORD * max_words) + ELLIPSIS


def first_tokens(text: str, max_tokens: int) -> str:
    """The longest prefix of ``text`` with at most ``max_tokens`` tokens, trailing space removed."""
    return truncate_tokens(text, max_tokens).rstrip()


def summary_messages(text: str, *, max_words: int) -> list[Message]:
    """The chat sent for one summary (public so the prompt can be inspected)."""
    return [
        {"role": "system", "content": SUMMARY_PROMPT.format(max_words=max_words)},
        {"role": "user", "content": text},
    ]


__all__ = ["SUMMARY_PROMPT", "SummaryReply", "first_tokens", "first_words", "summarise", "summary_messages"]
