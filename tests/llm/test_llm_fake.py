"""The deterministic FakeLLM and the provider registry."""

from __future__ import annotations

import importlib
import sys
import time
from collections.abc import Sequence

import pytest
from pydantic import BaseModel

from omnimem.errors import ConfigError, MissingDependencyError, OmnimemError
from omnimem.llm import (
    LLM,
    FakeLLM,
    LLMAuthError,
    LLMContextLengthError,
    LLMError,
    LLMModelNotFoundError,
    LLMNotConfiguredError,
    LLMResponseFormatError,
    LLMUnavailableError,
    Message,
    OpenAICompatibleLLM,
    create_llm,
    llm_names,
    register_llm,
    resolve_llm,
)
from omnimem.contract.providers import providers

HELLO = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "say hello"}]


class Greeting(BaseModel):
    word: str


def test_fake_echoes_the_last_user_message_by_default() -> None:
    completion = FakeLLM().complete(HELLO)
    assert completion.text == "say hello"
    assert (completion.prompt_tokens, completion.completion_tokens) == (4, 2)


def test_fake_hands_out_scripted_replies_in_order_then_refuses() -> None:
    llm = FakeLLM(["one", "two"])
    assert [llm.complete(HELLO).text, llm.complete(HELLO).text] == ["one", "two"]
    with pytest.raises(LLMError, match="exhausted after 2"):
        llm.complete(HELLO)
    assert (llm.usage().calls, llm.usage().failures) == (3, 1)


def test_fake_answers_from_a_function_of_the_chat() -> None:
    def shout(messages: Sequence[Message]) -> str:
        return str(messages[-1]["content"]).upper()

    llm = FakeLLM(shout)
    assert llm.complete(HELLO).text == "SAY HELLO"
    assert llm.prompts == [HELLO]


def test_fake_json_tolerates_fences_and_repairs_once() -> None:
    llm = FakeLLM(["not json", '```json\n{"word": "hi"}\n```'])
    assert llm.complete_json(HELLO, Greeting) == Greeting(word="hi")
    assert "word" in llm.prompts[1][-1]["content"]  # the repair message names the schema
    assert llm.usage().repairs == 1


def test_fake_json_raises_when_the_repair_fails_too() -> None:
    with pytest.raises(LLMResponseFormatError, match="fake model"):
        FakeLLM('{"greeting": "hi"}').complete_json(HELLO, Greeting)


def test_fake_latency_is_real_and_accounted() -> None:
    llm = FakeLLM("ok", latency=0.05)
    started = time.perf_counter()
    llm.complete(HELLO)
    assert time.perf_counter() - started >= 0.05
    assert llm.usage().latency_s >= 0.05


def test_fake_meets_the_llm_protocol() -> None:
    assert isinstance(FakeLLM(), LLM)


def test_builtins_are_registered_like_anyone_else() -> None:
    assert {"fake", "openai"} <= set(llm_names())
    assert create_llm("fake", script="hi").complete(HELLO).text == "hi"


def test_openai_provider_from_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMNIMEM_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OMNIMEM_LLM_MODEL", "llama3")
    llm = create_llm("openai", timeout=3)
    assert isinstance(llm, OpenAICompatibleLLM)
    assert (llm.config.model, llm.config.timeout) == ("llama3", 3.0)
    llm.close()


def test_openai_provider_without_settings_says_what_to_set() -> None:
    with pytest.raises(LLMNotConfiguredError, match="OMNIMEM_LLM_BASE_URL"):
        create_llm("openai")


def test_resolve_llm_means_none_when_nothing_is_configured() -> None:
    fake = FakeLLM()
    assert resolve_llm() is None
    assert resolve_llm(fake) is fake
    assert isinstance(resolve_llm("fake"), FakeLLM)


def test_third_party_providers_register_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    llm_names()  # built-ins loaded, then the registration below is undone after the test
    monkeypatch.setattr(providers, "_factories", dict(providers._factories))
    register_llm("canned", lambda **kw: FakeLLM("canned reply", **kw))
    assert create_llm("canned").complete(HELLO).text == "canned reply"
    with pytest.raises(ConfigError, match="already registered"):
        register_llm("canned", FakeLLM)


def test_unknown_provider_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="unknown LLM provider 'nope'; registered: .*fake"):
        create_llm("nope")


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (LLMError, 502),
        (LLMUnavailableError, 503),
        (LLMAuthError, 502),
        (LLMModelNotFoundError, 502),
        (LLMContextLengthError, 413),
        (LLMResponseFormatError, 502),
        (LLMNotConfiguredError, 501),
    ],
)
def test_llm_errors_share_the_omnimem_root(error: type[LLMError], status: int) -> None:
    assert issubclass(error, LLMError) and issubclass(error, OmnimemError)
    assert error("x").status == status
    assert error("x").code == error.__name__


def test_without_the_openai_sdk_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "omnimem.llm.provider")
    monkeypatch.setitem(sys.modules, "openai", None)  # makes `import openai` fail
    with pytest.raises(MissingDependencyError, match=r"pip install 'omnimem\[llm\]'"):
        importlib.import_module("omnimem.llm.provider")
    assert FakeLLM("still works").complete(HELLO).text == "still works"
