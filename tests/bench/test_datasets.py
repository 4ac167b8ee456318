"""Data loaders: the real LoCoMo and Mem-Gallery files, and malformed inputs."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from benchmarks.harness.datasets import (
    MEMGALLERY_QA_TYPES,
    LocomoSample,
    MemGalleryImage,
    MemGallerySample,
    load_locomo,
    load_memgallery,
    load_memgallery_dir,
)
from benchmarks.harness.evidence import summarise_evidence
from omnimem.errors import MalformedDataError


@pytest.fixture(scope="module")
def locomo(data_dir: Path) -> list[LocomoSample]:
    return load_locomo(data_dir / "locomo" / "locomo10.json")


@pytest.fixture(scope="module")
def memgallery(data_dir: Path) -> list[MemGallerySample]:
    return load_memgallery_dir(data_dir / "memgallery")


# --- LoCoMo -----------------------------------------------------------------


@pytest.mark.slow
def test_locomo_counts(locomo: list[LocomoSample]) -> None:
    assert len(locomo) == 10
    assert sum(len(s.sessions) for s in locomo) == 272
    assert sum(len(t.turns) for s in locomo for t in s.sessions) == 5882
    categories = Counter(qa.category for s in locomo for qa in s.qa)
    assert sum(categories.values()) == 1986
    assert categories == {1: 282, 2: 321, 3: 96, 4: 841, 5: 446}


@pytest.mark.slow
def test_locomo_first_sample(locomo: list[LocomoSample]) -> None:
    sample = locomo[0]
    assert (sample.sample_id, sample.speaker_a, sample.speaker_b) == ("conv-26", "Caroline", "Melanie")
    first = sample.sessions[0]
    assert (first.index, first.date_time) == (1, "1:56 pm on 8 May, 2023")
    assert first.turns[0].dia_id == "D1:1"
    assert first.turns[0].text == "Hey Mel! Good to see you! How have you been?"
    image_turn = first.turns[4]
    assert image_turn.dia_id == "D1:5"
    assert image_turn.img_url == ("https://i.redd.it/l7hozpetnhlb1.jpg",)
    assert image_turn.blip_caption == "a photo of a dog walking past a wall with a painting of a woman"
    assert image_turn.query == "transgender pride flag mural"
    # conv-26 lists date_times for sessions 20-35 that have no turns: not sessions
    assert [s.index for s in sample.sessions] == list(range(1, 20))
    qa = sample.qa[0]
    assert (qa.question, qa.answer, qa.category) == (
        "When did Caroline go to the LGBTQ support group?",
        "7 May 2023",
        2,
    )
    assert qa.evidence.ids == ("D1:3",)


@pytest.mark.slow
def test_locomo_image_fields(locomo: list[LocomoSample]) -> None:
    turns = [t for s in locomo for session in s.sessions for t in session.turns]
    assert sum(t.blip_caption is not None for t in turns) == 1226
    assert sum(bool(t.img_url) for t in turns) == 910
    assert sum(t.query is not None for t in turns) == 888


@pytest.mark.slow
def test_locomo_answers(locomo: list[LocomoSample]) -> None:
    qas = [qa for s in locomo for qa in s.qa]
    adversarial = [qa for qa in qas if qa.category == 5]
    assert all(qa.adversarial_answer is not None for qa in adversarial)
    assert sorted(qa.answer for qa in adversarial if qa.answer is not None) == ["No", "No"]
    assert all(qa.answer is not None for qa in qas if qa.category != 5)
    # six golds in conv-26 are JSON ints (2022 x4, 2, 3); they load as strings
    conv26 = locomo[0].qa
    assert [conv26[i].answer for i in (1, 26, 40, 49, 72, 75)] == ["2022", "2022", "2", "2022", "2022", "3"]
    assert all(isinstance(qa.answer, str) for qa in qas if qa.answer is not None)


@pytest.mark.slow
def test_locomo_evidence_oddities(locomo: list[LocomoSample]) -> None:
    summary = summarise_evidence(qa.evidence for s in locomo for qa in s.qa)
    assert (summary.lists, summary.empty_lists, summary.ids) == (1986, 4, 2822)
    assert summary.repaired == {
        "several ids in one string": 4,
        "stray colon after D": 1,
        "leading zeros": 1,
    }
    assert summary.skipped == {"not a D<session>:<turn> id": 1, "duplicate id": 1}
    dangling = {s.sample_id: s.dangling_evidence() for s in locomo if s.dangling_evidence()}
    assert dangling == {"conv-42": ["D10:19"], "conv-47": ["D4:36"]}


# --- Mem-Gallery --------------------------------------------------------------


@pytest.mark.slow
def test_memgallery_counts(memgallery: list[MemGallerySample]) -> None:
    assert len(memgallery) == 20
    sessions = [session for sample in memgallery for session in sample.sessions]
    rounds = [r for session in sessions for r in session.rounds]
    assert (len(sessions), len(rounds), sum(bool(r.images) for r in rounds)) == (240, 3962, 1003)
    types = Counter(qa.qa_type for sample in memgallery for qa in sample.qa)
    assert sum(types.values()) == 1711
    assert types == {
        "FR": 219, "MR": 206, "TR": 123, "VR": 174, "TTL": 337,
        "VS": 306, "CD": 81, "KR": 81, "AR": 184,
    }  # fmt: skip
    assert set(types) == set(MEMGALLERY_QA_TYPES)


@pytest.mark.slow
def test_memgallery_first_file(data_dir: Path) -> None:
    sample = load_memgallery(data_dir / "memgallery" / "AI_Robotics_Automation_Future_Tech.json")
    assert sample.name == "AI_Robotics_Automation_Future_Tech"
    assert sample.profile.name == "Julian Vance"
    assert "analytical" in sample.profile.traits
    session = sample.sessions[0]
    assert (session.session_id, session.date) == ("D1", "2024-06-17")
    image_round = session.rounds[2]
    assert image_round.round_id == "D1:3"
    (image,) = image_round.images
    assert image.image_id == "D1:IMG_001"
    assert image.path == "../image/AI_Robotics_Automation_Future_Tech/D1_IMG_001.jpg"
    assert image.caption.startswith("Futuristic hospital operating room")
    qa = sample.qa[0]
    assert (qa.qa_type, qa.answer, qa.session_ids) == ("VS", "D1:IMG_002", ("D1",))
    assert qa.clue.ids == ("D1:4",)


@pytest.mark.slow
def test_memgallery_clues_and_question_images(memgallery: list[MemGallerySample]) -> None:
    qas = [qa for sample in memgallery for qa in sample.qa]
    summary = summarise_evidence(qa.clue for qa in qas)
    assert (summary.lists, summary.empty_lists, summary.odd_forms) == (1711, 184, {})
    assert {qa.qa_type for qa in qas if not qa.clue.ids} == {"AR"}  # refusals cite nothing
    with_image = [qa for qa in qas if qa.question_image is not None]
    assert len(with_image) == 487
    assert all(qa.question_image_caption for qa in with_image)
    for sample in memgallery:  # every clue names a real round
        rounds = {r.round_id for s in sample.sessions for r in s.rounds}
        assert {c for qa in sample.qa for c in qa.clue.ids} <= rounds


# --- malformed input (no real data needed) ----------------------------------


def _write(path: Path, content: object) -> Path:
    path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return path


def _locomo_sample(qa: list[dict[str, object]]) -> dict[str, object]:
    return {
        "sample_id": "s1",
        "conversation": {
            "speaker_a": "A",
            "speaker_b": "B",
            "session_1_date_time": "1:00 pm on 1 May, 2023",
            "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"}],
        },
        "qa": qa,
    }


def _memgallery_file(qa: list[dict[str, object]], **round_fields: object) -> dict[str, object]:
    round_ = {"round": "D1:1", "user": "hi", "assistant": "hello", **round_fields}
    return {
        "character_profile": {"name": "Ann"},
        "multi_session_dialogues": [{"session_id": "D1", "date": "2024-01-01", "dialogues": [round_]}],
        "human-annotated QAs": qa,
    }


def test_minimal_files_load(tmp_path: Path) -> None:
    qa = {"question": "q?", "answer": 7, "evidence": ["D1:1"], "category": 2}
    (sample,) = load_locomo(_write(tmp_path / "l.json", [_locomo_sample([qa])]))
    assert sample.qa[0].answer == "7"
    gallery = load_memgallery(_write(tmp_path / "m.json", _memgallery_file([])))
    assert gallery.sessions[0].rounds[0].images == ()
    content = _memgallery_file([], image_id=["D1:IMG_001"], input_image=["i.jpg"], image_caption=["a cat"])
    (image,) = load_memgallery(_write(tmp_path / "i.json", content)).sessions[0].rounds[0].images
    assert image == MemGalleryImage("D1:IMG_001", "i.jpg", "a cat")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", r"bad\.json: not valid JSON"),
        ({"sample_id": "s1"}, r"bad\.json: expected a list, got dict"),
        ([_locomo_sample([]), {"qa": []}], r"bad\.json: sample\[1\]: missing key 'conversation'"),
        (
            [_locomo_sample([{"question": "q?", "answer": "a", "category": 1}, {"answer": "a", "category": 1}])],
            r"bad\.json: sample\[0\]\.qa\[1\]: missing key 'question'",
        ),
        (
            [_locomo_sample([{"question": "q?", "answer": "a", "category": 7}])],
            r"sample\[0\]\.qa\[0\]: 'category' should be an int from 1 to 5, got 7",
        ),
        (
            [_locomo_sample([{"question": "q?", "category": 4}])],
            r"sample\[0\]\.qa\[0\]: missing key 'answer'",
        ),
        (
            [_locomo_sample([{"question": "q?", "answer": "a", "category": 4, "evidence": "D1:1"}])],
            r"sample\[0\]\.qa\[0\]\.evidence: expected a list, got str",
        ),
    ],
)
def test_malformed_locomo(tmp_path: Path, content: object, message: str) -> None:
    with pytest.raises(MalformedDataError, match=message):
        load_locomo(_write(tmp_path / "bad.json", content))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", r"bad\.json: not valid JSON"),
        ([], r"bad\.json: expected an object, got list"),
        ({"character_profile": {"name": "Ann"}}, r"bad\.json: missing key 'multi_session_dialogues'"),
        (
            _memgallery_file([{"question": "q?", "answer": "a", "clue": []}]),
            r"bad\.json: qa\[0\]: missing key 'point'",
        ),
        (
            _memgallery_file([{"point": "FR", "question": "q?", "answer": ["a"]}]),
            r"bad\.json: qa\[0\]: 'answer' should be a string, got list",
        ),
    ],
)
def test_malformed_memgallery(tmp_path: Path, content: object, message: str) -> None:
    with pytest.raises(MalformedDataError, match=message):
        load_memgallery(_write(tmp_path / "bad.json", content))


def test_mismatched_image_lists(tmp_path: Path) -> None:
    content = _memgallery_file([], image_id=["D1:IMG_001"], input_image=[], image_caption=["a cat"])
    with pytest.raises(MalformedDataError, match=r"session\[0\]\.dialogues\[0\]: image_id"):
        load_memgallery(_write(tmp_path / "bad.json", content))


def test_memgallery_dir_must_be_a_folder(tmp_path: Path) -> None:
    with pytest.raises(MalformedDataError, match="not a folder"):
        load_memgallery_dir(tmp_path / "missing")
    assert load_memgallery_dir(tmp_path) == []
    _write(tmp_path / "b.json", _memgallery_file([]))
    _write(tmp_path / "a.json", _memgallery_file([]))
    assert [s.name for s in load_memgallery_dir(tmp_path)] == ["a", "b"]
