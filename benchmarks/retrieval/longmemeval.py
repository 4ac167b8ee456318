"""LongMemEval-S for the retrieval harness: one question, one haystack, one user.

Each question of LongMemEval (Wu et al., ICLR 2025) comes with its own haystack
of ~48 sessions (~490 user and assistant turns); the turns that hold the answer
carry ``has_answer``. Here every question becomes one
:class:`~benchmarks.harness.retrieval.BenchConversation` whose ``sample_id`` is the
question id, so its haystack is ingested under a user id of its own. Turn ids
are ``<session id>:<turn index>``; ``session_of`` maps them back to the session,
for the session-level metrics the paper's authors and peers publish
(:func:`benchmarks.harness.sessions.session_metrics`, which the retrieval run calls). Abstention
questions (``_abs``) are skipped, as the official retrieval metrics skip them.

The haystacks are large (46k distinct texts per split, ~19 texts/s on two
shared CPU cores with MiniLM), so ``limit`` takes a fixed, type-balanced
subset: questions in file order, taken round-robin over the question types.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks.harness.retrieval import BenchConversation, BenchDataset, BenchQuestion
from omnimem.errors import MalformedDataError
from omnimem.contract.loaders import Dialogue

TYPES = {
    "knowledge-update": "knowledge update",
    "multi-session": "multi-session",
    "single-session-assistant": "single-session assistant",
    "single-session-preference": "single-session preference",
    "single-session-user": "single-session user",
    "temporal-reasoning": "temporal reasoning",
}
BLANK_TURNS = "blank turns skipped"
REPEATED_SESSIONS = "haystack sessions repeated under one id (later copy skipped)"
ABSTENTION = "abstention questions skipped (_abs)"
NO_EVIDENCE = "questions without evidence turns"
_DATE = re.compile(r"(\d{4})/(\d{2})/(\d{2})(?: \(\w+\))?(?: (\d{2}):(\d{2}))?")


def visible(text: str) -> bool:
    """Whether ``text`` holds anything omnimem stores (it refuses whitespace, control and zero-width only text)."""
    return any(not ch.isspace() and unicodedata.category(ch) not in ("Cc", "Cf", "Cs", "Zs", "Zl", "Zp")
               for ch in text)


def iso_date(value: str, where: str) -> str:
    """``2023/04/10 (Mon) 03:02`` -> ``2023-04-10T03:02`` (the form omnimem parses)."""
    m = _DATE.fullmatch(value.strip())
    if m is None:
        raise MalformedDataError(f"{where}: cannot read the date {value!r}")
    year, month, day, hour, minute = m.groups()
    return f"{year}-{month}-{day}T{hour or '00'}:{minute or '00'}"


def file_for(folder: Path, split: str) -> list[Path]:
    names = {"dev": ["dev"], "test": ["test"], "all": ["dev", "test"]}[split]
    return [folder / f"longmemeval_s_{n}.json" for n in names]


def _records(path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise MalformedDataError(f"{path}: not found (see shared/data/longmemeval/README.md)") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise MalformedDataError(f"{path}: not valid UTF-8 JSON ({exc})") from exc
    if not isinstance(data, list):
        raise MalformedDataError(f"{path}: expected a list of questions")
    return data


def balanced(records: Sequence[dict[str, Any]], limit: int | None) -> list[dict[str, Any]]:
    """The first ``limit`` questions taken round-robin over types (file order within a type)."""
    if limit is None:
        return list(records)
    by_type: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        by_type[str(record.get("question_type"))].append(record)
    queues = [by_type[t] for t in sorted(by_type)]
    out: list[dict[str, Any]] = []
    depth = 0
    while len(out) < limit and any(depth < len(q) for q in queues):
        out.extend(q[depth] for q in queues if depth < len(q))
        depth += 1
    chosen = {id(r) for r in out[:limit]}
    return [r for r in records if id(r) in chosen]  # file order, so a larger limit only adds questions


def conversation(record: Mapping[str, Any], where: str, skipped: Counter[str]) -> BenchConversation | None:
    """One question and its haystack, or None when it has no evidence turn."""
    try:
        qid = str(record["question_id"])
        sessions = record["haystack_sessions"]
        ids = record["haystack_session_ids"]
        dates = record["haystack_dates"]
        question = str(record["question"])
        qtype = str(record["question_type"])
    except KeyError as exc:
        raise MalformedDataError(f"{where}: missing key {exc}") from None
    if not (len(sessions) == len(ids) == len(dates)):
        raise MalformedDataError(f"{where}: haystack sessions, ids and dates differ in length")
    dialogues: list[Dialogue] = []
    session_of: dict[str, str] = {}
    gold: list[str] = []
    seen: set[str] = set()
    for s, (session_id, date, turns) in enumerate(zip(ids, dates, sessions)):
        session_id = str(session_id)
        if session_id in seen:
            skipped[REPEATED_SESSIONS] += 1
            continue
        seen.add(session_id)
        when = iso_date(str(date), f"{where}.haystack_dates[{s}]")
        rows: list[dict[str, Any]] = []
        for t, turn in enumerate(turns):
            text = str(turn.get("content") or "").strip()
            if not visible(text):  # blank, or only invisible characters: omnimem refuses those
                skipped[BLANK_TURNS] += 1
                continue
            turn_id = f"{session_id}:{t}"
            session_of[turn_id] = session_id
            rows.append({"text": text, "speaker": str(turn.get("role") or "user"), "time": when, "id": turn_id})
            if turn.get("has_answer"):
                gold.append(turn_id)
        if rows:
            dialogues.append(Dialogue(rows, user_id=qid, session_id=session_id))
    if not gold:
        skipped[NO_EVIDENCE] += 1
        return None
    answer_sessions = tuple(str(s) for s in record.get("answer_session_ids") or ())
    conv = BenchConversation(qid, dialogues)
    asked = record.get("question_date")
    now = iso_date(str(asked), f"{where}.question_date") if asked else None
    conv.questions = [BenchQuestion(0, question, qtype, tuple(gold), sessions=answer_sessions, now=now)]
    conv.session_of = session_of
    return conv


def longmemeval_dataset(folder: str | Path, split: str, *, limit: int | None = None) -> BenchDataset:
    """The ``dev`` or ``test`` file (or ``all``) of ``folder``, abstention questions skipped."""
    folder = Path(folder)
    paths = file_for(folder, split)
    dataset = BenchDataset("longmemeval", dict(TYPES), [], source=", ".join(str(p) for p in paths))
    dataset.split = split
    records: list[tuple[str, dict[str, Any]]] = []
    for path in paths:
        for i, record in enumerate(_records(path)):
            if not isinstance(record, dict):
                raise MalformedDataError(f"{path}: question[{i}] is not an object")
            if str(record.get("question_id", "")).endswith("_abs"):
                dataset.skipped[ABSTENTION] += 1
                continue
            records.append((f"{path.name}: question[{i}]", record))
    wheres = {id(r): w for w, r in records}
    for record in balanced([r for _, r in records], limit):
        conv = conversation(record, wheres[id(record)], dataset.skipped)
        if conv is not None:
            dataset.conversations.append(conv)
    return dataset
