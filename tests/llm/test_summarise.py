"""Level-1 summaries of long text, through the real provider and a scripted server."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from fake_openai import FakeOpenAIServer, chat

from omnimem.errors import ConfigError, InvalidInputError
from omnimem.llm import LLMResponseFormatError, OpenAICompatibleLLM
from omnimem.engine.ingest.summarise import first_words, summarise

MakeLLM = Callable[..., OpenAICompatibleLLM]
LONG = " ".join(f"word{i}" for i in range(100))


def test_llm_summary_of_long_text(server: FakeOpenAIServer, make_llm: MakeLLM) -> None:
    server.push(chat(json.dumps({"summary": "  Melanie painted\n a sunset on 29 April 2023. "})))
    assert summarise(LONG, make_llm(), max_words=10) == "Melanie painted a sunset on 29 April 2023."
    messages = server.requests[0]["messages"]
    assert "at most 10 words" in messages[0]["content"]
    assert messages[1] == {"role": "user", "content": LONG}


def test_short_text_is_its_own_summary_without_a_call(server: FakeOpenAIServer, make_llm: MakeLLM) -> None:
    assert summarise("I painted a sunset.", make_llm(), max_words=10) == "I painted a sunset."
    assert server.requests == []


def test_overlong_llm_summary_is_cut(server: FakeOpenAIServer, make_llm: MakeLLM) -> None:
    server.push(chat(json.dumps({"summary": "one two three four five six"})))
    assert summarise(LONG, make_llm(), max_words=4) == "one two three four …"


def test_malformed_summary_raises_after_one_repair(server: FakeOpenAIServer, make_llm: MakeLLM) -> None:
    server.push(chat("no json"), chat('{"summary": ""}'))
    with pytest.raises(LLMResponseFormatError):
        summarise(LONG, make_llm(), max_words=10)
    assert len(server.requests) == 2


def test_offline_summary_is_the_first_words() -> None:
    assert summarise(LONG, None, max_words=3) == "word0 word1 word2 …"
    assert summarise("a  b", None, max_words=3) == "a  b"  # short text unchanged
    assert first_words(LONG, 100) == LONG


@pytest.mark.parametrize(("text", "max_words", "error"), [("", 5, InvalidInputError), ("  ", 5, InvalidInputError),
                                                          ("text", 0, ConfigError)])
def test_bad_arguments(text: str, max_words: int, error: type[Exception]) -> None:
    with pytest.raises(error):
        summarise(text, None, max_words=max_words)
