"""Write-time restatement, through the real provider and a scripted server over HTTP."""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from fake_openai import FakeOpenAIServer, Reply, chat, error

from omnimem.errors import ConfigError, InvalidInputError
from omnimem.llm import LLMResponseFormatError, LLMUnavailableError, OpenAICompatibleLLM
from omnimem.engine.ingest.restate import RestatedUnit, Restater, Turn, WindowResult, window_starts
from omnimem.timeparse import parse_time

MakeLLM = Callable[..., OpenAICompatibleLLM]
SESSION = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
DIALOGUE = [
    Turn("D1:1", "Caroline", "Hey Mel! How was your weekend?", SESSION),
    Turn("D1:2", "Melanie", "I painted a sunset last weekend.", SESSION),
    Turn("D1:3", "Caroline", "I went to a support group yesterday.", SESSION),
]


def _reply(*units: dict[str, Any]) -> Reply:
    return chat(json.dumps({"units": list(units)}))


def _unit(text: str, *ids: str, **extra: Any) -> dict[str, Any]:
    return {"text": text, "source_ids": list(ids), **extra}


def _numbered_turns(count: int) -> list[Turn]:
    return [Turn(f"t{i}", "Ann" if i % 2 else "Bob", f"message number {i}", SESSION) for i in range(count)]


def _user_prompt(body: dict[str, Any]) -> str:
    return str(next(m["content"] for m in body["messages"] if m["role"] == "user"))


def _turn_ids(body: dict[str, Any]) -> list[str]:
    return re.findall(r"^\[(t\d+)\]", _user_prompt(body), flags=re.MULTILINE)


def _echo_each_new_turn(body: dict[str, Any]) -> Reply:
    """One unit per turn listed under the new turns, citing it."""
    prompt = _user_prompt(body)
    new_part = prompt.split("New turns:")[-1]
    ids = re.findall(r"^\[(t\d+)\]", new_part, flags=re.MULTILINE)
    return _reply(*(_unit(f"Unit for {i}.", i) for i in ids))


# -- what restatement produces ------------------------------------------------


def test_pronouns_and_relative_times_resolved_with_provenance(
    server: FakeOpenAIServer, make_llm: MakeLLM
) -> None:
    server.push(
        _reply(
            _unit("Melanie painted a sunset in the weekend of 29-30 April 2023.", "D1:2",
                  time="2023-04-29", keywords=["painting", "sunset"], persons=["Melanie"], topic="painting"),
            _unit("Caroline went to a support group on 7 May 2023.", "D1:3", time="2023-05-07",
                  persons=["Caroline"], entities=["support group"], location=None),
        )
    )
    (result,) = Restater(make_llm()).restate(DIALOGUE, session_time=SESSION)

    prompt = _user_prompt(server.requests[0])
    assert "8 May 2023" in prompt and "2023-05-08" in prompt  # a model can work out "yesterday"
    for turn in DIALOGUE:
        assert f"[{turn.id}] {turn.speaker}: {turn.text}" in prompt
    system = server.requests[0]["messages"][0]["content"]
    assert "pronouns" in system and "absolute dates" in system

    painted, group = result.units
    assert painted.text == "Melanie painted a sunset in the weekend of 29-30 April 2023."
    assert painted.source_ids == ("D1:2",)
    assert painted.speaker == "Melanie"
    assert painted.keywords == ("painting", "sunset") and painted.topic == "painting"
    assert group.text == "Caroline went to a support group on 7 May 2023."
    assert group.time == datetime(2023, 5, 7, tzinfo=timezone.utc)
    assert group.time == parse_time("7 May 2023")
    assert group.source_ids == ("D1:3",) and group.entities == ("support group",)
    assert result.index == 0 and result.turn_ids == ("D1:1", "D1:2", "D1:3")


def test_a_bare_date_is_read_in_the_conversation_zone(server: FakeOpenAIServer, make_llm: MakeLLM) -> None:
    berlin = timezone(timedelta(hours=2))
    turns = [Turn("b1", "Ann", "I moved yesterday.", datetime(2023, 5, 8, 9, 0, tzinfo=berlin))]
    server.push(_reply(_unit("Ann moved on 7 May 2023.", "b1", time="2023-05-07")))
    (result,) = Restater(make_llm()).restate(turns)
    assert result.units[0].time == datetime(2023, 5, 7, tzinfo=berlin)


def test_unit_without_a_time_takes_when_it_was_said(server: FakeOpenAIServer, make_llm: MakeLLM) -> None:
    server.push(_reply(_unit("Caroline greeted Melanie.", "D1:1"), _unit("Bad time.", "D1:2", time="soonish")))
    (result,) = Restater(make_llm()).restate(DIALOGUE, session_time=SESSION)
    assert [u.time for u in result.units] == [SESSION, SESSION]


def test_invalid_source_ids_are_dropped_and_units_left_without_any_skipped(
    server: FakeOpenAIServer, make_llm: MakeLLM, caplog: pytest.LogCaptureFixture
) -> None:
    server.push(
        _reply(
            _unit("Caroline and Melanie talked about the weekend.", "D1:2", "D9:9", "D1:1"),
            _unit("An invented fact.", "D7:1"),
            _unit("No provenance at all."),
        )
    )
    with caplog.at_level(logging.WARNING, logger="omnimem.engine.ingest.restate"):
        (result,) = Restater(make_llm()).restate(DIALOGUE, session_time=SESSION)
    (unit,) = result.units
    assert unit.source_ids == ("D1:1", "D1:2")  # turn order, the unknown id gone
    assert unit.speaker is None  # two speakers
    assert "D9:9" in caplog.text and "D7:1" in caplog.text and "skipped" in caplog.text


def test_identity_is_deterministic_given_the_same_reply(server: FakeOpenAIServer, make_llm: MakeLLM) -> None:
    reply = _reply(_unit("  Melanie   painted\na sunset. ", "D1:2"), _unit("Melanie painted a sunset.", "D1:2"))
    server.push(reply, reply)
    llm = make_llm()
    first = list(Restater(llm).restate(DIALOGUE, session_time=SESSION))
    second = list(Restater(llm).restate(DIALOGUE, session_time=SESSION))
    assert first == second
    (unit,) = first[0].units  # whitespace normalised, so the two were one unit
    assert unit.text == "Melanie painted a sunset."
    assert unit.key == RestatedUnit("Melanie painted a sunset.", ("D1:2",)).key
    assert unit.key != RestatedUnit("Melanie painted a sunset.", ("D1:3",)).key


# -- windows ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("count", "window", "overlap", "starts"),
    [(100, 40, 2, [0, 38, 76]), (40, 40, 2, [0]), (41, 40, 2, [0, 38]), (0, 40, 2, []), (5, 2, 0, [0, 2, 4]),
     (5, 3, 2, [0, 1, 2])],
)
def test_window_starts(count: int, window: int, overlap: int, starts: list[int]) -> None:
    assert window_starts(count, window, overlap) == starts


@pytest.mark.parametrize(("window", "overlap", "workers"), [(0, 0, 1), (4, 4, 1), (4, -1, 1), (4, 1, 0)])
def test_bad_settings_are_refused(window: int, overlap: int, workers: int) -> None:
    with pytest.raises(ConfigError):
        Restater(None, window=window, overlap=overlap, workers=workers)


def test_windows_cover_every_turn_and_overlap_units_are_dropped(
    server: FakeOpenAIServer, make_llm: MakeLLM
) -> None:
    turns = _numbered_turns(100)

    def reply(body: dict[str, Any]) -> Reply:
        ids = _turn_ids(body)
        # Each window restates its first turn (an overlap turn after window 0),
        # every one of its turns, and one unit joining its second and third turns.
        return _reply(_unit(f"Again {ids[0]}.", ids[0]), *(_unit(f"Unit for {i}.", i) for i in ids),
                      _unit(f"Pair {ids[1]}+{ids[2]}.", ids[1], ids[2]))

    server.responder = reply
    results = list(Restater(make_llm(), window=40, overlap=2).restate(turns, session_time=SESSION))

    assert [r.index for r in results] == [0, 1, 2]
    assert [(r.turn_ids[0], r.turn_ids[-1]) for r in results] == [("t0", "t39"), ("t38", "t77"), ("t76", "t99")]
    assert "Earlier turns (context only):\n[t38]" in _user_prompt(next(b for b in server.requests
                                                                       if _turn_ids(b)[0] == "t38"))
    singles = [u.source_ids[0] for r in results for u in r.units if u.text.startswith("Unit for")]
    assert singles == [f"t{i}" for i in range(100)]  # each turn once: overlap repeats dropped
    kept = {u.text for r in results for u in r.units}
    assert "Again t0." in kept and "Again t38." not in kept and "Again t76." not in kept
    assert "Pair t39+t40." in kept  # an overlap turn with a new one: kept


def test_windows_run_in_parallel_but_yield_in_order(server: FakeOpenAIServer, make_llm: MakeLLM) -> None:
    turns = _numbered_turns(40)
    delays = {"t0": 0.3, "t10": 0.2, "t20": 0.1, "t30": 0.0}  # later windows finish first

    def reply(body: dict[str, Any]) -> Reply:
        base = _echo_each_new_turn(body)
        return Reply(content=base.content, delay=delays[_turn_ids(body)[0]])

    server.responder = reply
    results = list(Restater(make_llm(), window=10, overlap=0, workers=4).restate(turns, session_time=SESSION))
    assert [r.index for r in results] == [0, 1, 2, 3]
    assert [u.source_ids[0] for r in results for u in r.units] == [t.id for t in turns]
    assert server.max_in_flight >= 2


def test_llm_failure_in_window_3_comes_after_windows_1_and_2(
    server: FakeOpenAIServer, make_llm: MakeLLM
) -> None:
    turns = _numbered_turns(40)
    stored: list[WindowResult] = []

    def reply(body: dict[str, Any]) -> Reply:
        first = _turn_ids(body)[0]
        if first == "t20":
            return error(503, "overloaded")  # fails fast, before the slow windows answer
        base = _echo_each_new_turn(body)
        return Reply(content=base.content, delay=0.2 if first in ("t0", "t10") else 0.0)

    server.responder = reply
    restater = Restater(make_llm(max_retries=0), window=10, overlap=0, workers=4)
    with pytest.raises(LLMUnavailableError):
        for result in restater.restate(turns, session_time=SESSION):
            stored.append(result)  # what a caller stores before asking for the next window
    assert [r.index for r in stored] == [0, 1]
    assert [u.source_ids[0] for r in stored for u in r.units] == [f"t{i}" for i in range(20)]


def test_resume_skips_stored_units_by_key(server: FakeOpenAIServer, make_llm: MakeLLM) -> None:
    turns = _numbered_turns(30)
    failing = threading.Event()
    failing.set()

    def reply(body: dict[str, Any]) -> Reply:
        if _turn_ids(body)[0] == "t20" and failing.is_set():
            return error(503, "overloaded")
        return _echo_each_new_turn(body)

    server.responder = reply
    restater = Restater(make_llm(max_retries=0), window=10, overlap=0, workers=2)
    stored: dict[str, RestatedUnit] = {}
    with pytest.raises(LLMUnavailableError):
        for result in restater.restate(turns, session_time=SESSION):
            stored.update((u.key, u) for u in result.units)
    assert len(stored) == 20
    failing.clear()
    fresh = [u for r in restater.restate(turns, session_time=SESSION) for u in r.units if u.key not in stored]
    assert [u.source_ids[0] for u in fresh] == [f"t{i}" for i in range(20, 30)]


def test_malformed_reply_raises_after_one_repair(server: FakeOpenAIServer, make_llm: MakeLLM) -> None:
    server.push(chat("Sure! Here are the units: units = [text: ..."), chat('{"units": "not a list"}'))
    with pytest.raises(LLMResponseFormatError):
        list(Restater(make_llm()).restate(DIALOGUE, session_time=SESSION))
    assert len(server.requests) == 2
    assert "could not be used" in server.requests[1]["messages"][-1]["content"]


def test_a_repaired_reply_is_used(server: FakeOpenAIServer, make_llm: MakeLLM) -> None:
    server.push(chat("not json"), _reply(_unit("Melanie painted a sunset.", "D1:2")))
    (result,) = Restater(make_llm()).restate(DIALOGUE, session_time=SESSION)
    assert [u.text for u in result.units] == ["Melanie painted a sunset."]


def test_numeric_ids_and_bare_lists_are_accepted(server: FakeOpenAIServer, make_llm: MakeLLM) -> None:
    turns = [Turn("1", "Ann", "I like tea.", SESSION), Turn("2", "Bob", "Me too.", SESSION)]
    server.push(chat(json.dumps([{"text": "Ann and Bob like tea.", "source_ids": [1, 2], "keywords": "tea"}])))
    (result,) = Restater(make_llm()).restate(turns, session_time=SESSION)
    (unit,) = result.units
    assert unit.source_ids == ("1", "2") and unit.keywords == ("tea",)


def test_prompt_without_a_session_time_uses_the_turn_times(make_llm: MakeLLM) -> None:
    restater = Restater(make_llm())
    later = Turn("x2", "Ann", "Hello again.", datetime(2023, 5, 9, 10, 0, tzinfo=timezone.utc))
    prompt = restater.messages([DIALOGUE[0], later])[1]["content"]
    assert "Session date: Monday, 8 May 2023, 13:56" in prompt
    assert "[x2] Ann (Tuesday, 9 May 2023, 10:00): Hello again." in prompt
    undated = restater.messages([Turn("u1", None, "Hi.")])[1]["content"]
    assert "Session date: unknown" in undated and "[u1] (unknown speaker): Hi." in undated


# -- offline -------------------------------------------------------------------


def test_offline_units_are_the_turns_made_explicit() -> None:
    results = list(Restater(None).restate(DIALOGUE, session_time=SESSION))
    (result,) = results
    assert [u.text for u in result.units] == [
        "On 8 May 2023, Caroline said: Hey Mel! How was your weekend?",
        "On 8 May 2023, Melanie said: I painted a sunset last weekend.",  # nothing resolved
        "On 8 May 2023, Caroline said: I went to a support group yesterday.",
    ]
    assert [u.source_ids for u in result.units] == [("D1:1",), ("D1:2",), ("D1:3",)]
    assert all(u.time == SESSION for u in result.units)
    assert [u.speaker for u in result.units] == ["Caroline", "Melanie", "Caroline"]


def test_offline_windows_give_one_unit_per_turn() -> None:
    turns = _numbered_turns(100)
    results = list(Restater(None, window=40, overlap=2).restate(turns, session_time=SESSION))
    assert [r.turn_ids[0] for r in results] == ["t0", "t38", "t76"]
    assert [u.source_ids for r in results for u in r.units] == [(t.id,) for t in turns]


def test_offline_time_falls_back_to_the_session_and_missing_parts_are_left_out() -> None:
    turns = [
        Turn("a", "Ann", "Hi.", None),
        Turn("b", None, "A note.", datetime(2024, 1, 2, 9, 0)),  # naive: taken as UTC
        Turn("c", None, "Undated.", None),
    ]
    (result,) = Restater(None).restate(turns, session_time=None)
    assert [u.text for u in result.units] == ["Ann said: Hi.", "On 2 January 2024: A note.", "Undated."]
    assert result.units[1].time == datetime(2024, 1, 2, 9, 0, tzinfo=timezone.utc)
    (dated,) = Restater(None).restate(turns[:1], session_time=SESSION)
    assert dated.units[0].text == "On 8 May 2023, Ann said: Hi."


@pytest.mark.parametrize(
    "turns",
    [[Turn("", "Ann", "Hi.")], [Turn("a", "Ann", "Hi."), Turn("a", "Bob", "Yo.")], [Turn("a", "Ann", "  ")],
     "not turns", [{"id": "a", "text": "Hi."}]],
)
def test_bad_turns_are_refused_before_any_window(turns: Any) -> None:
    with pytest.raises(InvalidInputError):
        Restater(None).restate(turns)


def test_closing_early_stops_asking_for_more_windows(server: FakeOpenAIServer, make_llm: MakeLLM) -> None:
    server.responder = _echo_each_new_turn
    windows = Restater(make_llm(), window=2, overlap=0, workers=1).restate(_numbered_turns(40), session_time=SESSION)
    assert next(windows).index == 0
    windows.close()
    assert len(server.requests) <= 3  # the one yielded plus at most 2 * workers queued ahead
