"""Claude Code hooks: recall before every prompt, capture the session's transcript (``docs/claude-code.md``).

Claude Code runs a command hook with the event as JSON on stdin (``hook_event_name``, ``session_id``,
``transcript_path``, ``cwd``, and ``prompt`` for ``UserPromptSubmit``). :func:`read_event` checks that
JSON; :func:`read_transcript` turns the session's transcript into turns for
:func:`omnimem.integrations.transcripts.capture`; :func:`prompt_context` is the JSON a
``UserPromptSubmit`` hook prints for Claude Code to add the recalled memory to the model's context
(``hookSpecificOutput.additionalContext``).

The transcript is JSON Lines, one entry per line. What is kept of it:

- ``user`` and ``assistant`` entries' text, one turn per text block (speaker ``user`` / ``assistant``);
- a tool call (an assistant ``tool_use`` block) as ``called NAME: {input}``, its input cut to 300 characters;
- a tool's result (a user ``tool_result`` block) as ``NAME returned: ...`` (speaker ``tool``), cut to its first
  1,000 characters; the count of what was cut is in the unit's metadata (``left_out_chars``).

What is left out: thinking blocks, images, entries of other types (summaries, file snapshots, system and
progress records), meta entries (``isMeta``), side chains (a subagent's own turns), the records of local
slash commands (``<command-name>``, ``<local-command-stdout>``), and lines that are not JSON (a line still
being written). Each turn's id is its entry's ``uuid`` (``uuid#n`` for the n-th block of an entry with
several), so capturing a transcript again stores only what it gained since.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omnimem.errors import InvalidInputError, MalformedDataError
from omnimem.integrations.transcripts import TEXT_CHARS, clip, json_lines, tool_call_text, tool_result_turn

RECALL_EVENTS = ("UserPromptSubmit",)
CAPTURE_EVENTS = ("SessionEnd", "PreCompact")
EVENTS = RECALL_EVENTS + CAPTURE_EVENTS
MAX_EVENT_BYTES = 10 << 20  # a hook's stdin is one event: a prompt, ids and paths
_COMMAND_RECORDS = ("<command-name>", "<command-message>", "<command-args>", "<local-command-stdout>",
                    "<local-command-stderr>", "<local-command-caveat>")


@dataclass(frozen=True, slots=True)
class HookEvent:
    """One hook call, as Claude Code describes it on stdin."""

    name: str  # hook_event_name
    session_id: str
    transcript_path: str | None
    cwd: str | None
    prompt: str | None

    @property
    def recalls(self) -> bool:
        return self.name in RECALL_EVENTS


def read_event(raw: str | bytes) -> HookEvent:
    """The event of a hook's stdin; a MalformedDataError naming what is wrong with it otherwise."""
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", errors="replace")
    if not raw.strip():
        raise MalformedDataError("the hook read no JSON on stdin (Claude Code passes the event there)")
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise MalformedDataError(f"the hook's stdin is not JSON ({exc.msg} at line {exc.lineno} column "
                                 f"{exc.colno})") from None
    if not isinstance(data, dict):
        raise MalformedDataError(f"the hook's stdin is JSON {type(data).__name__}, not an object with "
                                 "hook_event_name and session_id")
    name = data.get("hook_event_name")
    if not isinstance(name, str) or not name:
        raise MalformedDataError("the hook's JSON has no hook_event_name")
    if name not in EVENTS:
        raise InvalidInputError(f"omnimem hook claude-code handles {', '.join(EVENTS)}, not {name!r}; configure "
                                "it for those events only (docs/claude-code.md)")
    session = data.get("session_id")
    if not isinstance(session, str) or not session.strip():
        raise MalformedDataError(f"the {name} event has no session_id")
    fields = {key: data.get(key) for key in ("transcript_path", "cwd", "prompt")}
    for key, value in fields.items():
        if value is not None and not isinstance(value, str):
            raise MalformedDataError(f"the {name} event's {key} is {type(value).__name__}, not a string")
    if name in CAPTURE_EVENTS and not fields["transcript_path"]:
        raise MalformedDataError(f"the {name} event has no transcript_path to capture")
    return HookEvent(name, session, fields["transcript_path"], fields["cwd"], fields["prompt"])


def prompt_context(text: str) -> dict[str, Any]:
    """What a ``UserPromptSubmit`` hook prints (JSON on stdout, exit 0) for Claude Code to add ``text`` to the
    model's context next to the prompt."""
    return {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": text}}


def read_transcript(path: str | Path) -> list[dict[str, Any]]:
    """The turns of a Claude Code transcript (the JSONL file at ``transcript_path``), in order."""
    turns: list[dict[str, Any]] = []
    tools: dict[str, str] = {}  # tool_use id -> tool name, to name each result
    for _, entry in json_lines(Path(path).expanduser(), "transcript"):  # older events wrote ~/.claude/...
        turns.extend(_turns(entry, tools))
    return turns


def _turns(entry: Mapping[str, Any], tools: dict[str, str]) -> list[dict[str, Any]]:
    kind, message, uuid = entry.get("type"), entry.get("message"), entry.get("uuid")
    if kind not in ("user", "assistant") or entry.get("isMeta") or entry.get("isSidechain"):
        return []
    if not isinstance(message, Mapping) or not isinstance(uuid, str) or not uuid:
        return []
    content = message.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if not isinstance(blocks, list):
        return []
    found = [turn for block in blocks if isinstance(block, Mapping)
             for turn in [_block(str(kind), block, tools)] if turn is not None]
    time = entry.get("timestamp") if isinstance(entry.get("timestamp"), str) else None
    return [{**turn, "time": time, "id": uuid if len(found) == 1 else f"{uuid}#{n}"}
            for n, turn in enumerate(found)]


def _block(kind: str, block: Mapping[str, Any], tools: dict[str, str]) -> dict[str, Any] | None:
    """One content block as a turn (text, speaker, metadata), or None for what is left out."""
    what = block.get("type")
    if what == "text" and isinstance(block.get("text"), str):
        said = block["text"].strip()
        if not said or (kind == "user" and said.startswith(_COMMAND_RECORDS)):
            return None
        return {"text": clip(said, TEXT_CHARS)[0], "speaker": kind, "source": kind,
                "metadata": {"agent": "claude-code", "kind": "message"}}
    if what == "tool_use" and kind == "assistant":
        name = str(block.get("name") or "tool")
        if isinstance(block.get("id"), str):
            tools[block["id"]] = name
        return {"text": tool_call_text(name, block.get("input", {})), "speaker": "assistant", "source": "assistant",
                "metadata": {"agent": "claude-code", "kind": "tool_call", "tool": name}}
    if what == "tool_result" and kind == "user":
        name = tools.get(str(block.get("tool_use_id")), "tool")
        output = _result_text(block.get("content"))
        if not output:
            return None
        text, meta = tool_result_turn(name, output, failed=bool(block.get("is_error")))
        return {"text": text, "speaker": "tool", "source": "tool", "metadata": {"agent": "claude-code", **meta}}
    return None  # thinking, images, documents, blocks a newer Claude Code adds


def _result_text(content: object) -> str:
    """A tool result's text: a string, or the text blocks of a list (images are left out)."""
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content
                         if isinstance(b, Mapping) and b.get("type") == "text").strip()
    return ""
