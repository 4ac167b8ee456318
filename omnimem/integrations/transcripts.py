"""What the coding-agent hooks share: a session's turns stored once, and the memory a prompt recalls.

:mod:`omnimem.integrations.claude_code` and :mod:`omnimem.integrations.codex` read their tool's
transcript into turns (``text``, ``speaker``, ``time``, ``id``, ``source``, ``metadata``); :func:`capture` stores
the turns a scope does not hold yet, and :func:`recall` packs the memory relevant to a prompt. Both go
through the facade, so they work on a local ``Memory`` and on a remote one (``omnimem serve``) alike.

A turn's ``id`` is stable across reads of the same transcript (Claude Code's entry ``uuid``, a Codex
rollout's line number), and it becomes the unit's source id: a transcript captured twice, or captured
again after it grew, stores each turn once.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omnimem.errors import InvalidInputError, MalformedDataError
from omnimem.integrations import hit_metadata

TOOL_INPUT_CHARS = 300  # a tool call keeps its name and this much of its arguments
TOOL_RESULT_CHARS = 1_000  # a tool's output keeps this much of its start; the rest is left out
TEXT_CHARS = 20_000  # a message longer than this (a pasted log) keeps its start
RECALL_BUDGET = 600  # tokens of memory a prompt gets by default
CONTEXT_CHARS = 10_000  # Claude Code caps what a hook adds to the context at 10,000 characters
BATCH = 200  # turns per add_dialogue call (each call is atomic; a long transcript is several)


def json_lines(path: Path, what: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each line of a JSON Lines file that is a JSON object; a blank line, or the
    last one while the agent is still writing it, is passed over. ``what`` names the file in errors."""
    try:
        handle = path.open(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        raise MalformedDataError(f"no {what} at {path}") from None
    except OSError as exc:
        raise MalformedDataError(f"the {what} {path} cannot be read: {exc.strerror or exc}") from None
    with handle:
        for number, line in enumerate(handle, 1):
            try:
                data = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(data, dict):
                yield number, data


def clip(text: str, limit: int) -> tuple[str, int]:
    """``text`` cut to ``limit`` characters with a note of what was left out, and how many characters that was."""
    text = text.strip()
    if len(text) <= limit:
        return text, 0
    left = len(text) - limit
    return f"{text[:limit].rstrip()} [... {left} more characters left out]", left


def tool_call_text(name: str, arguments: object) -> str:
    """``called NAME: {arguments}``, the arguments as compact JSON cut to :data:`TOOL_INPUT_CHARS`."""
    shown = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False,
                                                                     separators=(",", ":"), default=str)
    return f"called {name}: {clip(shown, TOOL_INPUT_CHARS)[0]}" if shown.strip() else f"called {name}"


def tool_result_turn(name: str, output: str, *, failed: bool = False) -> tuple[str, dict[str, Any]]:
    """A tool output's text (``NAME returned: ...``, cut to :data:`TOOL_RESULT_CHARS`) and its metadata."""
    kept, left = clip(output, TOOL_RESULT_CHARS)
    meta: dict[str, Any] = {"kind": "tool_result", "tool": name}
    if left:
        meta["left_out_chars"] = left
    if failed:
        meta["error"] = True
    return f"{name} {'failed' if failed else 'returned'}: {kept}", meta


def project_id(cwd: str | None) -> str | None:
    """The scope's ``agent_id`` for a project: ``project:`` and the absolute path of the folder the agent ran
    in (None without one), so a project's sessions share their memory and another project's stay apart."""
    if not cwd:
        return None
    return f"project:{Path(cwd).expanduser().resolve(strict=False)}"


@dataclass(frozen=True, slots=True)
class Captured:
    """What a capture did: the turns read, how many were stored, held already or skipped as redundant."""

    turns: int
    stored: int
    held: int
    skipped: int
    reasons: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"turns": self.turns, "stored": self.stored, "held": self.held, "skipped": self.skipped,
                "reasons": dict(self.reasons)}


def held_source_ids(memory: Any, *, user_id: str | None, agent_id: str | None, session_id: str | None) -> set[str]:
    """The source ids of every unit the scope holds (superseded ones too), read page by page."""
    held: set[str] = set()
    offset = 0
    while True:
        page = memory.units(user_id=user_id, agent_id=agent_id, session_id=session_id, include_superseded=True,
                            limit=500, offset=offset)
        for unit in page:
            held.update(unit.source_ids)
        if len(page) < 500:
            return held
        offset += len(page)


def new_turns(memory: Any, turns: Sequence[Mapping[str, Any]], *, user_id: str | None, agent_id: str | None,
              session_id: str | None) -> list[Mapping[str, Any]]:
    """The turns whose id the scope does not hold yet (what a capture would store, at most)."""
    if not turns:
        return []
    held = held_source_ids(memory, user_id=user_id, agent_id=agent_id, session_id=session_id)
    return [t for t in turns if t.get("id") not in held]


def capture(memory: Any, turns: Sequence[Mapping[str, Any]], *, user_id: str | None, agent_id: str | None,
            session_id: str | None, fresh: Sequence[Mapping[str, Any]] | None = None) -> Captured:
    """Store the turns of one session that ``memory`` does not hold yet (``fresh``: that subset, when the caller
    has computed it with :func:`new_turns`), :data:`BATCH` at a time.

    A turn whose id is held already is not sent again; one whose content is held under another id is a
    duplicate, and one the novelty filter finds redundant is skipped: both are counted, neither stored.
    """
    if session_id is None:
        raise InvalidInputError("a transcript is captured into one session: session_id is missing")
    todo = list(fresh) if fresh is not None else new_turns(memory, turns, user_id=user_id, agent_id=agent_id,
                                                           session_id=session_id)
    stored, reasons = 0, dict[str, int]()
    for start in range(0, len(todo), BATCH):
        for result in memory.add_dialogue(todo[start:start + BATCH], user_id=user_id, agent_id=agent_id,
                                          session_id=session_id):
            if result.accepted:
                stored += 1
            else:
                why = result.reason.split(":")[0]  # "redundant", "duplicate" (the rest names the unit)
                reasons[why] = reasons.get(why, 0) + 1
    return Captured(len(turns), stored, len(turns) - len(todo), sum(reasons.values()), reasons)


@dataclass(frozen=True, slots=True)
class Recall:
    """The memory a prompt recalled: the text the agent reads (empty when nothing matched) and its hits,
    each with :func:`omnimem.integrations.hit_metadata` (time, speaker, rank, fused score, similarity)."""

    text: str
    hits: list[dict[str, Any]]
    tokens: int

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "hits": self.hits, "tokens": self.tokens}


def recall(memory: Any, prompt: str, *, user_id: str | None, agent_id: str | None, budget: int = RECALL_BUDGET,
           heading: str = "Memory of this project from omnimem (its earlier sessions and this one):") -> Recall:
    """The memory of this user and project relevant to ``prompt``, packed within ``budget`` tokens, under
    ``heading``; at most :data:`CONTEXT_CHARS` characters (what Claude Code passes on whole)."""
    if not prompt.strip():
        return Recall("", [], 0)
    ctx = memory.search(prompt, budget=budget, user_id=user_id, agent_id=agent_id)
    if not ctx.hits:
        return Recall("", [], 0)
    body = ctx.render()
    text = clip(f"{heading}\n{body}", CONTEXT_CHARS - 60)[0]  # room for the note of what was cut
    hits = [{"text": hit.unit.summary, **hit_metadata(hit)} for hit in sorted(ctx.hits, key=lambda h: h.rank)]
    return Recall(text, hits, ctx.tokens)
