"""Whether a text is kept whole: short text is decided without the tokenizer, long bytes still counted."""

from __future__ import annotations

import pytest

from omnimem.engine.ingest import summarise as summary_module
from omnimem.engine.ingest.summarise import TOKENS_PER_WORD, summarise
from omnimem.tokens import count_tokens


def test_short_text_never_waits_for_the_tokenizer(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(text: str) -> int:
        raise AssertionError("the tokenizer was asked about a text that cannot exceed the limit")

    monkeypatch.setattr(summary_module, "count_tokens", refuse)
    text = "Caroline: I went to the LGBTQ support group yesterday and it was so powerful."
    assert summarise(text, None, max_words=150) == text


def test_few_words_of_many_tokens_are_still_cut() -> None:
    text = " ".join(["🎉🎂🎈" * 12] * 8)  # 8 words, far more than 2 tokens a word
    assert count_tokens(text) > TOKENS_PER_WORD * 10
    cut = summarise(text, None, max_words=10)
    assert cut != text and count_tokens(cut) <= TOKENS_PER_WORD * 10 + 2  # the cut, then " …"


def test_text_at_the_byte_limit_is_kept_whole() -> None:
    text = ("word " * 60).strip()  # 299 bytes, 60 tokens: within 150 words and 300 tokens
    assert summarise(text, None, max_words=150) == text
