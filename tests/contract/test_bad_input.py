"""Bad input gets a typed OmnimemError, and nothing already stored is lost."""

import json
from pathlib import Path

import pytest

from omnimem import (
    EmbedderMismatchError,
    InvalidInputError,
    InvalidTimeError,
    MalformedDataError,
    Memory,
    NotAStoreError,
    NotFoundError,
    OmnimemError,
)
from omnimem.contract.loaders import load_jsonl, load_locomo


@pytest.fixture
def seeded(store_path: Path):
    with Memory(store_path, embedder="fake") as m:
        uid = m.add("the original memory", user_id="u").id
        yield m, uid


@pytest.mark.parametrize("text", ["", "   \n", b"\xff\xfe not utf8", "bad \udcff surrogate", 42, None])
def test_bad_text_is_refused_and_store_untouched(seeded, text):
    m, uid = seeded
    with pytest.raises(InvalidInputError):
        m.add(text, user_id="u")
    assert m.stats()["units"] == 1 and m.get(uid).summary == "the original memory"


def test_unparseable_time(seeded):
    m, _ = seeded
    with pytest.raises(InvalidTimeError):
        m.add("hello", time="the day after tomorrow")


def test_one_bad_turn_stores_none_of_the_dialogue(seeded):
    m, _ = seeded
    turns = [{"text": "fine", "speaker": "A"}, {"text": "also fine"}, {"speaker": "B"}]
    with pytest.raises(InvalidInputError, match="turn 2"):
        m.add_dialogue(turns, user_id="u")
    with pytest.raises(InvalidTimeError, match="turn 0"):
        m.add_dialogue([{"text": "x", "time": "not a time"}])
    with pytest.raises(InvalidInputError):
        m.add_dialogue("not a list")  # type: ignore[arg-type]
    assert m.stats()["units"] == 1


def test_unknown_ids(seeded):
    m, _ = seeded
    with pytest.raises(NotFoundError, match="nope"):
        m.get("nope")
    with pytest.raises(NotFoundError):
        m.delete("nope")


def test_bad_search_arguments(seeded):
    m, _ = seeded
    with pytest.raises(InvalidInputError):
        m.search("   ")
    with pytest.raises(InvalidInputError):
        m.search("x", top_k=0)
    with pytest.raises(InvalidInputError):
        m.search("x", user_id="")


def test_store_opened_by_another_embedder(seeded, store_path: Path):
    m, uid = seeded
    m.close()
    with pytest.raises(EmbedderMismatchError, match="fake"):
        Memory(store_path, embedder="all-MiniLM-L6-v2")
    with Memory(store_path) as again:
        assert again.get(uid).summary == "the original memory"


def test_folder_that_is_not_a_store(tmp_path: Path):
    (tmp_path / "photo.jpg").write_bytes(b"\xff\xd8")
    with pytest.raises(NotAStoreError):
        Memory(tmp_path, embedder="fake")


def test_every_error_shares_one_root():
    for cls in (InvalidInputError, InvalidTimeError, MalformedDataError, NotFoundError, NotAStoreError, EmbedderMismatchError):
        assert issubclass(cls, OmnimemError)
        assert 400 <= cls.status < 600


def test_malformed_jsonl_reports_the_line(tmp_path: Path):
    path = tmp_path / "turns.jsonl"
    path.write_text('{"text": "ok"}\n{"text": "ok too"}\n{broken\n')
    with pytest.raises(MalformedDataError, match=r"turns.jsonl:3"):
        load_jsonl(path)
    path.write_text('{"text": "ok"}\n{"speaker": "no text"}\n')
    with pytest.raises(MalformedDataError, match=r":2"):
        load_jsonl(path)
    path.write_text('{"text": "ok", "time": "someday"}\n')
    with pytest.raises(MalformedDataError, match=r":1: cannot parse time"):
        load_jsonl(path)
    path.write_bytes(b'{"text": "\xff"}\n')
    with pytest.raises(MalformedDataError, match="UTF-8"):
        load_jsonl(path)


def test_malformed_locomo_reports_the_record(tmp_path: Path):
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps({"not": "a list"}))
    with pytest.raises(MalformedDataError, match="JSON list"):
        load_locomo(path)
    path.write_text(json.dumps([{"sample_id": "c1", "conversation": {"session_1": [{"speaker": "A"}], "session_1_date_time": "1:56 pm on 8 May, 2023"}}]))
    with pytest.raises(MalformedDataError, match="c1: session_1 turn 0"):
        load_locomo(path)
    path.write_text(json.dumps([{"sample_id": "c1", "conversation": {"session_1": []}}]))
    with pytest.raises(MalformedDataError, match="session_1_date_time"):
        load_locomo(path)
    path.write_text("[1, 2")
    with pytest.raises(MalformedDataError, match="not valid JSON"):
        load_locomo(path)
    with pytest.raises(MalformedDataError, match="cannot read"):
        load_locomo(tmp_path / "missing.json")


def test_unknown_conversation_names_the_ones_that_exist(tmp_path: Path):
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([{"sample_id": "c1", "conversation": {}}]))
    with pytest.raises(MalformedDataError, match="has no conversation 'c9'; it has c1"):
        load_locomo(path, conversation="c9")
