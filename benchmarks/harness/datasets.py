"""Load LoCoMo and Mem-Gallery files into plain typed records.

Nothing is ingested or interpreted here: dates stay the strings the files
hold (another module parses them), and evidence ids go through
:func:`benchmarks.harness.evidence.parse_evidence`.  A file that is not what it
claims to be raises :class:`~omnimem.errors.MalformedDataError` naming the
file and the record (``locomo10.json: sample[3].qa[12]: missing key 'question'``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.harness.evidence import EvidenceParse, parse_evidence
from omnimem.errors import MalformedDataError

MEMGALLERY_QA_TYPES: dict[str, str] = {
    "FR": "factual retrieval",
    "MR": "multi-entity reasoning",
    "TR": "temporal reasoning",
    "VR": "visual reasoning",
    "TTL": "test-time learning",
    "VS": "visual search",
    "CD": "conflict detection",
    "KR": "knowledge resolution",
    "AR": "answer refusal",
}
_SESSION_KEY = re.compile(r"session_(\d+)")


@dataclass(frozen=True)
class LocomoTurn:
    speaker: str
    dia_id: str
    text: str
    blip_caption: str | None = None
    img_url: tuple[str, ...] = ()
    query: str | None = None


@dataclass(frozen=True)
class LocomoSession:
    index: int
    date_time: str  # as given, e.g. "1:56 pm on 8 May, 2023"
    turns: tuple[LocomoTurn, ...]


@dataclass(frozen=True)
class LocomoQA:
    """One question; ``answer`` is None for most adversarial (category 5) ones.

    ``adversarial_answer`` is the trap: what would be true of the *other*
    speaker.  The correct response to a category 5 question is a refusal.
    """

    question: str
    answer: str | None
    category: int
    evidence: EvidenceParse
    adversarial_answer: str | None = None


@dataclass(frozen=True)
class LocomoSample:
    sample_id: str
    speaker_a: str
    speaker_b: str
    sessions: tuple[LocomoSession, ...]
    qa: tuple[LocomoQA, ...]

    def dangling_evidence(self) -> list[str]:
        """Evidence ids that name no turn of this conversation."""
        known = {turn.dia_id for session in self.sessions for turn in session.turns}
        return [e for qa in self.qa for e in qa.evidence.ids if e not in known]


@dataclass(frozen=True)
class MemGalleryImage:
    image_id: str  # e.g. "D1:IMG_001"
    path: str  # relative path in the original repo; image files are not shipped
    caption: str


@dataclass(frozen=True)
class MemGalleryRound:
    round_id: str  # e.g. "D1:3"
    user: str
    assistant: str
    images: tuple[MemGalleryImage, ...] = ()


@dataclass(frozen=True)
class MemGallerySession:
    session_id: str  # e.g. "D1"
    date: str  # as given, e.g. "2024-06-17"
    rounds: tuple[MemGalleryRound, ...]


@dataclass(frozen=True)
class MemGalleryQA:
    """One human-annotated QA; ``qa_type`` is a key of MEMGALLERY_QA_TYPES."""

    qa_type: str
    question: str
    answer: str
    session_ids: tuple[str, ...]
    clue: EvidenceParse
    question_image: str | None = None
    question_image_caption: str | None = None


@dataclass(frozen=True)
class MemGalleryProfile:
    name: str
    persona_summary: str = ""
    traits: tuple[str, ...] = ()
    conversation_style: str = ""


@dataclass(frozen=True)
class MemGallerySample:
    name: str  # the file stem, e.g. "AI_Robotics_Automation_Future_Tech"
    profile: MemGalleryProfile
    sessions: tuple[MemGallerySession, ...]
    qa: tuple[MemGalleryQA, ...]


# --- small typed accessors that say where a bad record is -------------------


def _fail(where: str, problem: str) -> MalformedDataError:
    return MalformedDataError(f"{where}: {problem}")


def _dict(value: object, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(where, f"expected an object, got {type(value).__name__}")
    return value


def _list(value: object, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise _fail(where, f"expected a list, got {type(value).__name__}")
    return value


def _get(record: dict[str, Any], key: str, where: str) -> object:
    if key not in record:
        raise _fail(where, f"missing key {key!r}")
    return record[key]


def _str(record: dict[str, Any], key: str, where: str, *, scalar: bool = False) -> str:
    """A required string field; with ``scalar`` an int or float is accepted and converted."""
    value = _get(record, key, where)
    if isinstance(value, str):
        return value
    if scalar and isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    raise _fail(where, f"{key!r} should be a string, got {type(value).__name__}")


def _opt_str(record: dict[str, Any], key: str, where: str, *, scalar: bool = False) -> str | None:
    return _str(record, key, where, scalar=scalar) if record.get(key) is not None else None


def _str_list(record: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    values = _list(record.get(key, []), f"{where}.{key}")
    if not all(isinstance(v, str) for v in values):
        raise _fail(where, f"{key!r} should hold only strings")
    return tuple(values)


def _read_json(path: Path) -> object:
    try:
        with path.open(encoding="utf-8") as handle:
            return json.load(handle)
    except json.JSONDecodeError as exc:
        raise MalformedDataError(f"{path}: not valid JSON ({exc})") from exc
    except UnicodeDecodeError as exc:
        raise MalformedDataError(f"{path}: not UTF-8 text ({exc})") from exc


# --- LoCoMo -----------------------------------------------------------------


def load_locomo(path: str | Path) -> list[LocomoSample]:
    """Load ``locomo10.json`` (a list of conversations with QA)."""
    path = Path(path)
    samples = _list(_read_json(path), str(path))
    return [_locomo_sample(raw, f"{path}: sample[{i}]") for i, raw in enumerate(samples)]


def _locomo_sample(raw: object, where: str) -> LocomoSample:
    record = _dict(raw, where)
    conversation = _dict(_get(record, "conversation", where), f"{where}.conversation")
    qas = _list(_get(record, "qa", where), f"{where}.qa")
    return LocomoSample(
        sample_id=_str(record, "sample_id", where),
        speaker_a=_str(conversation, "speaker_a", f"{where}.conversation"),
        speaker_b=_str(conversation, "speaker_b", f"{where}.conversation"),
        sessions=_locomo_sessions(conversation, f"{where}.conversation"),
        qa=tuple(_locomo_qa(q, f"{where}.qa[{i}]") for i, q in enumerate(qas)),
    )


def _locomo_sessions(conversation: dict[str, Any], where: str) -> tuple[LocomoSession, ...]:
    # Only keys "session_<n>" holding turns make a session: conv-26 also lists
    # date_times for sessions 20-35 that have no turns.
    indices = sorted(int(m[1]) for key in conversation if (m := _SESSION_KEY.fullmatch(key)))
    sessions = []
    for index in indices:
        key = f"session_{index}"
        turns = _list(conversation[key], f"{where}.{key}")
        sessions.append(
            LocomoSession(
                index=index,
                date_time=_str(conversation, f"{key}_date_time", where),
                turns=tuple(_locomo_turn(t, f"{where}.{key}[{i}]") for i, t in enumerate(turns)),
            )
        )
    return tuple(sessions)


def _locomo_turn(raw: object, where: str) -> LocomoTurn:
    record = _dict(raw, where)
    return LocomoTurn(
        speaker=_str(record, "speaker", where),
        dia_id=_str(record, "dia_id", where),
        text=_str(record, "text", where),
        blip_caption=_opt_str(record, "blip_caption", where),
        img_url=_str_list(record, "img_url", where),
        query=_opt_str(record, "query", where),
    )


def _locomo_qa(raw: object, where: str) -> LocomoQA:
    record = _dict(raw, where)
    category = _get(record, "category", where)
    if not isinstance(category, int) or isinstance(category, bool) or not 1 <= category <= 5:
        raise _fail(where, f"'category' should be an int from 1 to 5, got {category!r}")
    answer = _opt_str(record, "answer", where, scalar=True)
    if answer is None and category != 5:
        raise _fail(where, "missing key 'answer'")
    return LocomoQA(
        question=_str(record, "question", where),
        answer=answer,
        category=category,
        evidence=parse_evidence(_list(record.get("evidence", []), f"{where}.evidence")),
        adversarial_answer=_opt_str(record, "adversarial_answer", where, scalar=True),
    )


# --- Mem-Gallery ------------------------------------------------------------


def load_memgallery(path: str | Path) -> MemGallerySample:
    """Load one Mem-Gallery dialogue file (one persona, its sessions and QA)."""
    path = Path(path)
    where = str(path)
    record = _dict(_read_json(path), where)
    sessions = _list(_get(record, "multi_session_dialogues", where), f"{where}: sessions")
    qas = _list(_get(record, "human-annotated QAs", where), f"{where}: QAs")
    return MemGallerySample(
        name=path.stem,
        profile=_memgallery_profile(_get(record, "character_profile", where), where),
        sessions=tuple(_memgallery_session(s, f"{where}: session[{i}]") for i, s in enumerate(sessions)),
        qa=tuple(_memgallery_qa(q, f"{where}: qa[{i}]") for i, q in enumerate(qas)),
    )


def load_memgallery_dir(directory: str | Path) -> list[MemGallerySample]:
    """Load every ``*.json`` file of a Mem-Gallery folder, sorted by file name."""
    directory = Path(directory)
    if not directory.is_dir():
        raise MalformedDataError(f"{directory}: not a folder")
    return [load_memgallery(p) for p in sorted(directory.glob("*.json"))]


def _memgallery_profile(raw: object, where: str) -> MemGalleryProfile:
    where = f"{where}: character_profile"
    record = _dict(raw, where)
    return MemGalleryProfile(
        name=_str(record, "name", where),
        persona_summary=_opt_str(record, "persona_summary", where) or "",
        traits=_str_list(record, "traits", where),
        conversation_style=_opt_str(record, "conversation_style", where) or "",
    )


def _memgallery_session(raw: object, where: str) -> MemGallerySession:
    record = _dict(raw, where)
    rounds = _list(_get(record, "dialogues", where), f"{where}.dialogues")
    return MemGallerySession(
        session_id=_str(record, "session_id", where),
        date=_str(record, "date", where),
        rounds=tuple(_memgallery_round(r, f"{where}.dialogues[{i}]") for i, r in enumerate(rounds)),
    )


def _memgallery_round(raw: object, where: str) -> MemGalleryRound:
    record = _dict(raw, where)
    ids = _str_list(record, "image_id", where)
    paths = _str_list(record, "input_image", where)
    captions = _str_list(record, "image_caption", where)
    if not len(ids) == len(paths) == len(captions):
        raise _fail(where, "image_id, input_image and image_caption differ in length")
    return MemGalleryRound(
        round_id=_str(record, "round", where),
        user=_str(record, "user", where),
        assistant=_str(record, "assistant", where),
        images=tuple(MemGalleryImage(*image) for image in zip(ids, paths, captions)),
    )


def _memgallery_qa(raw: object, where: str) -> MemGalleryQA:
    record = _dict(raw, where)
    return MemGalleryQA(
        qa_type=_str(record, "point", where),
        question=_str(record, "question", where),
        answer=_str(record, "answer", where, scalar=True),
        session_ids=_str_list(record, "session_id", where),
        clue=parse_evidence(_list(record.get("clue", []), f"{where}.clue")),
        question_image=_opt_str(record, "question_image", where),
        question_image_caption=_opt_str(record, "image_caption", where),
    )
