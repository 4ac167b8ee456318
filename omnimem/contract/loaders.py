"""The files the facade reads: conversations (LoCoMo JSON, plain JSONL turns), a dump's lines, a mem0 export.

Loaders only parse and validate; they return dialogues for
``Memory.add_dialogue`` and records for ``Memory.import_records`` /
``Memory.import_mem0``. Every record is checked before anything is stored,
and a bad one is reported with its position.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omnimem.errors import InvalidTimeError, MalformedDataError
from omnimem.timeparse import parse_time

_SESSION = re.compile(r"^session_(\d+)$")


@dataclass(frozen=True, slots=True)
class Dialogue:
    """Turns that share one scope (one session of one conversation)."""

    turns: list[dict[str, Any]]
    user_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)


def _read_json(path: Path) -> Any:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise MalformedDataError(f"cannot read {path}: {exc.strerror}") from None
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise MalformedDataError(f"{path} is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise MalformedDataError(f"{path}: not valid JSON at line {exc.lineno}, column {exc.colno}") from None


def locomo_turn_text(turn: dict[str, Any]) -> str:
    """A LoCoMo turn as remembered: its words plus what any shared image showed."""
    text = str(turn.get("text", "")).strip()
    caption = turn.get("blip_caption")
    if caption:
        text = f"{text} [shared an image: {str(caption).strip()}]".strip()
    return text


def load_locomo(path: str | Path, *, conversation: str | None = None) -> list[Dialogue]:
    """Sessions of a LoCoMo file (optionally one conversation by ``sample_id``).

    The conversation's ``sample_id`` becomes the ``user_id``, ``session_<n>``
    the ``session_id``, the session date the event time of its turns and each
    ``dia_id`` ("D1:3") the unit's source id.
    """
    path = Path(path)
    data = _read_json(path)
    if not isinstance(data, list):
        raise MalformedDataError(f"{path}: a LoCoMo file is a JSON list of conversations")
    found = False
    dialogues: list[Dialogue] = []
    for i, sample in enumerate(data):
        where = f"{path}: conversation {i}"
        if not isinstance(sample, dict) or not isinstance(sample.get("conversation"), dict):
            raise MalformedDataError(f"{where} has no 'conversation' object")
        sample_id = str(sample.get("sample_id", f"conv-{i}"))
        if conversation is not None and sample_id != conversation:
            continue
        found = True
        dialogues.extend(_locomo_sessions(sample["conversation"], sample_id, f"{path}: {sample_id}"))
    if conversation is not None and not found:
        ids = [str(s.get("sample_id")) for s in data if isinstance(s, dict)]
        raise MalformedDataError(f"{path} has no conversation {conversation!r}; it has {', '.join(ids)}")
    return dialogues


def _locomo_sessions(conv: dict[str, Any], sample_id: str, where: str) -> Iterator[Dialogue]:
    numbers = sorted(int(m.group(1)) for key in conv if (m := _SESSION.match(key)))
    for n in numbers:
        turns = conv[f"session_{n}"]
        when = conv.get(f"session_{n}_date_time")
        if not isinstance(turns, list):
            raise MalformedDataError(f"{where}: session_{n} is not a list of turns")
        if not when:
            raise MalformedDataError(f"{where}: session_{n} has no session_{n}_date_time")
        out = []
        for j, turn in enumerate(turns):
            if not isinstance(turn, dict) or not turn.get("speaker") or "text" not in turn:
                raise MalformedDataError(f"{where}: session_{n} turn {j} needs 'speaker' and 'text'")
            entry: dict[str, Any] = {
                "text": locomo_turn_text(turn),
                "speaker": turn["speaker"],
                "time": when,
                "id": turn.get("dia_id"),
            }
            if turn.get("img_url"):
                entry["metadata"] = {"img_url": turn["img_url"]}
            out.append(entry)
        yield Dialogue(out, user_id=sample_id, session_id=f"session_{n}", meta={"date_time": when})


def load_jsonl(path: str | Path) -> list[Dialogue]:
    """A JSONL file, one turn per line: ``text`` plus optional ``speaker``,
    ``time``, ``id``, ``user_id``, ``agent_id``, ``session_id``.

    Consecutive lines with the same scope form one dialogue. A scope id must be a string (``5`` is refused,
    not read as ``"5"``), as in ``add`` and every import.
    """
    path = Path(path)
    try:
        lines = path.read_bytes().decode("utf-8").split("\n")  # not splitlines(): U+2028, U+0085 are text
    except OSError as exc:
        raise MalformedDataError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise MalformedDataError(f"{path} is not UTF-8 text") from None
    dialogues: list[Dialogue] = []
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise MalformedDataError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from None
        if not isinstance(record, dict) or not isinstance(record.get("text"), str):
            raise MalformedDataError(f"{path}:{lineno}: each line must be an object with a 'text' string")
        if not record["text"].strip():
            raise MalformedDataError(f"{path}:{lineno}: 'text' is empty")
        try:
            parse_time(record.get("time"))
        except InvalidTimeError as exc:
            raise MalformedDataError(f"{path}:{lineno}: {exc}") from None
        for key in ("user_id", "agent_id", "session_id"):  # 5 is not "5": the rule of add and every import
            if record.get(key) is not None and not isinstance(record[key], str):
                raise MalformedDataError(f"{path}:{lineno}: {key} must be a string, got {type(record[key]).__name__}")
        scope = tuple(record.get(k) for k in ("user_id", "agent_id", "session_id"))
        turn = {k: record[k] for k in ("text", "speaker", "time", "id", "metadata") if k in record}
        last = dialogues[-1] if dialogues else None
        if last is not None and (last.user_id, last.agent_id, last.session_id) == scope:
            last.turns.append(turn)
        else:
            user_id, agent_id, session_id = scope
            dialogues.append(Dialogue([turn], user_id, agent_id, session_id, meta={"line": lineno}))
    return dialogues


def parse_lines(text: str, source: str | None = None) -> list[dict[str, Any]]:
    """The records of a dump's JSON Lines text (the CLI's file and ``POST /v1/import`` read it the same way).

    Lines are split at ``\\n`` only (U+2028 and U+0085 are text inside a JSON
    string). A line that is not JSON, nests too deeply to parse (the parser's
    recursion limit) or is not an object is a MalformedDataError naming it
    (``line N``, or ``SOURCE:N`` for a file).
    """
    records: list[dict[str, Any]] = []
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        where = f"{source}:{number}" if source is not None else f"line {number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise MalformedDataError(f"{where}: not valid JSON ({exc.msg})") from None
        except RecursionError:
            raise MalformedDataError(f"{where}: nests too deeply to read") from None
        if not isinstance(record, dict):
            raise MalformedDataError(f"{where}: a record must be a JSON object")
        records.append(record)
    return records


def memories_of(export: object) -> list[Mapping[str, Any]]:
    """The memories of a mem0 export: a list, or an object with a ``results`` list."""
    if isinstance(export, Mapping):
        if not isinstance(export.get("results"), list):
            raise MalformedDataError('a mem0 export is a list of memories or {"results": [...]}')
        export = export["results"]
    if isinstance(export, str | bytes) or not isinstance(export, Iterable):
        raise MalformedDataError('a mem0 export is a list of memories or {"results": [...]}')
    return list(export)
