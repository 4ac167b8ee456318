"""The OpenAI-compatible provider against a scripted server, over real HTTP."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from fake_openai import FakeOpenAIServer, Reply, chat, error
from pydantic import BaseModel

from omnimem.errors import OmnimemError
from omnimem.llm import (
    LLM,
    LLMAuthError,
    LLMContextLengthError,
    LLMConfig,
    LLMError,
    LLMModelNotFoundError,
    LLMResponseFormatError,
    LLMUnavailableError,
    OpenAICompatibleLLM,
)

MakeLLM = Callable[..., OpenAICompatibleLLM]
ASK = [{"role": "user", "content": "Who wrote the first program?"}]


class Person(BaseModel):
    name: str
    born: int


# -- plain text ------------------------------------------------------------


def test_complete_returns_text_and_counts_tokens(
    server: FakeOpenAIServer, make_llm: MakeLLM
) -> None:
    server.push(chat("Ada Lovelace.", prompt_tokens=12, completion_tokens=4))
    llm = make_llm()

    completion = llm.complete(ASK, temperature=0.2, max_tokens=50)

    assert completion.text == "Ada Lovelace."
    assert (completion.prompt_tokens, completion.completion_tokens) == (12, 4)
    assert completion.model == "test-model"
    sent = server.requests[0]
    assert sent["messages"] == ASK
    assert (sent["model"], sent["temperature"], sent["max_tokens"]) == ("test-model", 0.2, 50)
    assert "response_format" not in sent
    usage = llm.usage()
    assert (usage.calls, usage.requests, usage.failures, usage.retries) == (1, 1, 0, 0)
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (12, 4, 16)
    assert usage.latency_s > 0


def test_provider_meets_the_llm_protocol(make_llm: MakeLLM) -> None:
    assert isinstance(make_llm(), LLM)


# -- structured output -----------------------------------------------------


def test_complete_json_sends_the_schema_and_validates(
    server: FakeOpenAIServer, make_llm: MakeLLM
) -> None:
    server.push(chat('{"name": "Ada Lovelace", "born": 1815}'))

    person = make_llm().complete_json(ASK, Person)

    assert person == Person(name="Ada Lovelace", born=1815)
    response_format = server.requests[0]["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["name"] == "Person"
    assert response_format["json_schema"]["schema"] == Person.model_json_schema()


def test_falls_back_to_json_object_then_remembers_it(
    server: FakeOpenAIServer, make_llm: MakeLLM
) -> None:
    server.push(
        error(400, "response_format.type 'json_schema' is not supported"),
        chat('{"name": "Ada", "born": 1815}'),
        chat('{"name": "Grace", "born": 1906}'),
    )
    llm = make_llm()

    assert llm.complete_json(ASK, Person).name == "Ada"
    assert llm.complete_json(ASK, Person).name == "Grace"

    assert server.response_format_types == ["json_schema", "json_object", "json_object"]
    assert llm.json_mode == "json_object"
    assert llm.usage().failures == 0


def test_falls_back_to_plain_text_when_no_json_mode_is_supported(
    server: FakeOpenAIServer, make_llm: MakeLLM
) -> None:
    server.push(
        error(400, "Unrecognized request argument supplied: response_format"),
        error(400, "bad request"),  # some servers give no reason at all
        chat('Sure! Here it is: {"name": "Ada", "born": 1815} Hope that helps.'),
    )
    llm = make_llm()

    assert llm.complete_json(ASK, Person) == Person(name="Ada", born=1815)
    assert server.response_format_types == ["json_schema", "json_object", None]
    assert llm.json_mode == "text"


def test_configured_json_mode_skips_modes_the_user_knows_are_missing(
    server: FakeOpenAIServer, make_llm: MakeLLM
) -> None:
    server.push(chat('{"name": "Ada", "born": 1815}'))
    make_llm(json_mode="text").complete_json(ASK, Person)
    assert server.response_format_types == [None]


def test_parses_json_inside_code_fences(server: FakeOpenAIServer, make_llm: MakeLLM) -> None:
    server.push(chat('```json\n{"name": "Ada", "born": 1815}\n```'))
    assert make_llm().complete_json(ASK, Person).born == 1815


def test_invalid_reply_is_repaired_once_with_the_validation_error(
    server: FakeOpenAIServer, make_llm: MakeLLM
) -> None:
    comet = '{"name": "Ada", "born": "the year of the comet"}'
    server.push(chat(comet), chat('{"name": "Ada", "born": 1815}'))
    llm = make_llm()

    assert llm.complete_json(ASK, Person).born == 1815

    repair = server.requests[1]["messages"]
    assert repair[: len(ASK)] == ASK
    assert repair[-2] == {"role": "assistant", "content": comet}
    assert repair[-1]["role"] == "user" and "born" in repair[-1]["content"]
    usage = llm.usage()
    assert (usage.calls, usage.requests, usage.repairs, usage.failures) == (1, 2, 1, 0)


def test_reply_still_invalid_after_repair_raises(
    server: FakeOpenAIServer, make_llm: MakeLLM
) -> None:
    server.push(chat("I cannot answer that."), chat('{"name": "Ada"}'))
    llm = make_llm()

    with pytest.raises(LLMResponseFormatError, match=r"Person.*born") as raised:
        llm.complete_json(ASK, Person)

    assert "test-model" in str(raised.value) and server.url in str(raised.value)
    assert len(server.requests) == 2  # exactly one repair attempt
    assert llm.usage().failures == 1


# -- retries and availability ------------------------------------------------


def test_rate_limit_is_retried_and_counted(server: FakeOpenAIServer, make_llm: MakeLLM) -> None:
    server.push(error(429, "Rate limit reached", headers={"Retry-After": "0"}), chat("done"))
    llm = make_llm()

    assert llm.complete(ASK).text == "done"
    usage = llm.usage()
    assert (usage.calls, usage.requests, usage.retries, usage.failures) == (1, 2, 1, 0)


def test_retry_after_is_honoured_but_capped(server: FakeOpenAIServer, make_llm: MakeLLM) -> None:
    server.push(error(429, "come back in an hour", headers={"Retry-After": "3600"}), chat("done"))
    started = time.perf_counter()

    assert make_llm(backoff_max=0.05).complete(ASK).text == "done"
    assert time.perf_counter() - started < 2


def test_persistent_server_error_becomes_unavailable(
    server: FakeOpenAIServer, make_llm: MakeLLM
) -> None:
    server.default = error(500, "model crashed")
    llm = make_llm(max_retries=2)

    with pytest.raises(LLMUnavailableError, match=r"HTTP 500 after 3 attempts: model crashed"):
        llm.complete(ASK)

    assert len(server.requests) == 3
    usage = llm.usage()
    assert (usage.retries, usage.failures) == (2, 1)


def test_timeout_becomes_unavailable(server: FakeOpenAIServer, make_llm: MakeLLM) -> None:
    server.push(chat("too late", delay=0.3), chat("too late", delay=0.3))

    with pytest.raises(LLMUnavailableError, match="timed out after 2 attempts"):
        make_llm(timeout=0.1, max_retries=1).complete(ASK)


def test_unreachable_endpoint_becomes_unavailable(closed_port_url: str) -> None:
    config = LLMConfig(base_url=closed_port_url, model="m", max_retries=1, backoff_base=0.001)
    with OpenAICompatibleLLM(config) as llm:
        with pytest.raises(LLMUnavailableError, match="unreachable") as raised:
            llm.complete(ASK)
    assert closed_port_url in str(raised.value)
    assert llm.usage().retries == 1


def test_concurrency_limit_bounds_requests_in_flight(
    server: FakeOpenAIServer, make_llm: MakeLLM
) -> None:
    server.default = chat("ok", delay=0.05)
    llm = make_llm(concurrency=2)
    threads = [threading.Thread(target=llm.complete, args=(ASK,)) for _ in range(8)]

    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert server.max_in_flight == 2
    assert llm.usage().calls == 8


# -- errors that retrying cannot fix -----------------------------------------


@pytest.mark.parametrize(
    ("reply", "expected", "words"),
    [
        (error(401, "Incorrect API key provided"), LLMAuthError, "HTTP 401"),
        (error(403, "Project lacks access"), LLMAuthError, "OMNIMEM_LLM_API_KEY"),
        (error(404, "The model `test-model` does not exist"), LLMModelNotFoundError, "HTTP 404"),
        (
            error(400, "maximum context length is 8192 tokens", code="context_length_exceeded"),
            LLMContextLengthError,
            "maximum context length",
        ),
        (error(400, "request exceeds the available context size"), LLMContextLengthError, "400"),
        (error(400, "temperature must be <= 2"), LLMError, "temperature"),
    ],
    ids=["401", "403", "404", "context-openai", "context-llama.cpp", "other-400"],
)
def test_client_errors_are_typed_and_not_retried(
    server: FakeOpenAIServer, make_llm: MakeLLM, reply: Reply, expected: type[LLMError], words: str
) -> None:
    server.default = reply
    llm = make_llm()

    with pytest.raises(expected, match=words) as raised:
        llm.complete(ASK)

    assert type(raised.value) is expected
    assert isinstance(raised.value, OmnimemError)
    assert "test-model" in str(raised.value)
    assert len(server.requests) == 1


def test_context_length_is_not_mistaken_for_a_rejected_json_mode(
    server: FakeOpenAIServer, make_llm: MakeLLM
) -> None:
    server.default = error(400, "This model's maximum context length is 4096 tokens")
    with pytest.raises(LLMContextLengthError):
        make_llm().complete_json(ASK, Person)
    assert server.response_format_types == ["json_schema"]
