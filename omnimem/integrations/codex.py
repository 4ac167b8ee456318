"""Codex CLI: capture its session files into omnimem (``docs/codex.md``).

Codex writes each session as a rollout file, ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``
(``CODEX_HOME`` defaults to ``~/.codex``). Every line is ``{"timestamp", "type", "payload"}``; the first is
``session_meta`` (the session ``id`` and its ``cwd``), and the conversation is in the ``response_item``
lines. Codex's ``notify`` program is run after every turn with one JSON argument
(``{"type": "agent-turn-complete", "thread-id", "cwd", ...}``): :func:`read_notification` reads it and
:func:`find_rollout` finds the thread's rollout file.

What :func:`read_rollout` keeps, one turn per item:

- ``message`` items of the ``user`` and ``assistant`` roles, their text (speaker ``user`` / ``assistant``),
  without the context Codex sends itself as user messages (``<environment_context>``, ``<user_instructions>``,
  AGENTS.md instructions);
- tool calls (``function_call``, ``custom_tool_call``, ``local_shell_call``, ``web_search_call``) as
  ``called NAME: {arguments}``, the arguments cut to 300 characters;
- tool outputs (``function_call_output``, ``custom_tool_call_output``) as ``NAME returned: ...`` (speaker
  ``tool``), cut to their first 1,000 characters.

Left out: reasoning (encrypted, or a summary of it), ``event_msg`` lines (they repeat the messages for the
interface), ``turn_context``, ``compacted`` and snapshot lines, other roles (developer instructions), and
lines that are not JSON. A turn's id is ``<session id>#<line number>``: a rollout only grows, so a file
captured again stores only its new lines.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omnimem.errors import MalformedDataError, NotFoundError
from omnimem.integrations.transcripts import TEXT_CHARS, clip, json_lines, tool_call_text, tool_result_turn

TURN_COMPLETE = "agent-turn-complete"
_CONTEXT_MESSAGES = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions", "<INSTRUCTIONS>",
                     "<permissions instructions>", "<user_shell_command>", "<turn_aborted>")


@dataclass(frozen=True, slots=True)
class Rollout:
    """One Codex session file: its session id, the folder it ran in, and its turns."""

    path: Path
    session_id: str
    cwd: str | None
    turns: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Notification:
    """What Codex's ``notify`` program receives after a turn."""

    type: str
    thread_id: str | None
    cwd: str | None


def sessions_dir() -> Path:
    """Where Codex keeps its rollout files: ``$CODEX_HOME/sessions``, ``~/.codex/sessions`` by default."""
    home = os.environ.get("CODEX_HOME")
    return (Path(home).expanduser() if home else Path.home() / ".codex") / "sessions"


def read_notification(raw: str) -> Notification:
    """The JSON argument Codex passes its ``notify`` program; a MalformedDataError when it is not one."""
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise MalformedDataError(f"the Codex notification is not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise MalformedDataError("the Codex notification is not a JSON object with a \"type\"")
    thread, cwd = data.get("thread-id"), data.get("cwd")
    return Notification(data["type"], thread if isinstance(thread, str) and thread else None,
                        cwd if isinstance(cwd, str) and cwd else None)


def find_rollout(thread_id: str, sessions: Path | None = None) -> Path:
    """The rollout file of a Codex thread (the newest, should a session have been forked into a second file)."""
    root = sessions if sessions is not None else sessions_dir()
    found = sorted(root.rglob(f"*{thread_id}.jsonl"), key=lambda p: p.stat().st_mtime) if root.is_dir() else []
    if not found:
        raise NotFoundError(f"no Codex session file for thread {thread_id} under {root}")
    return found[-1]


def rollouts(sessions: Path) -> list[Path]:
    """Every rollout file under a sessions folder, oldest first."""
    if not sessions.is_dir():
        raise NotFoundError(f"{sessions} is not a folder of Codex sessions")
    return sorted(sessions.rglob("rollout-*.jsonl"))


def read_rollout(path: str | Path) -> Rollout:
    """A Codex rollout file's session and turns."""
    path = Path(path)
    session_id, cwd = None, None
    lines: list[tuple[int, str | None, Mapping[str, Any]]] = []
    for number, line in json_lines(path, "Codex session file"):
        kind, payload = line.get("type"), line.get("payload")
        if not isinstance(payload, Mapping):
            continue
        if kind == "session_meta" and session_id is None:
            session_id = payload.get("id") if isinstance(payload.get("id"), str) else None
            cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
        elif kind == "response_item":
            lines.append((number, line.get("timestamp") if isinstance(line.get("timestamp"), str) else None,
                          payload))
    named = re.match(r"rollout-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-(.+)", path.stem)  # rollout-<time>-<id>
    session = session_id or (named.group(1) if named else path.stem)
    tools: dict[str, str] = {}  # call_id -> tool name, to name each output
    turns = []
    for number, time, item in lines:
        turn = _item(item, tools)
        if turn is not None:
            turns.append({**turn, "time": time, "id": f"{session}#{number}"})
    return Rollout(path, session, cwd, turns)


def _item(item: Mapping[str, Any], tools: dict[str, str]) -> dict[str, Any] | None:
    """One response item as a turn (text, speaker, metadata), or None for what is left out."""
    what = item.get("type")
    meta: dict[str, Any] = {"agent": "codex"}
    if what == "message":
        role = item.get("role")
        text = _text(item.get("content"))
        if role not in ("user", "assistant") or not text or (role == "user" and text.startswith(_CONTEXT_MESSAGES)):
            return None
        return {"text": clip(text, TEXT_CHARS)[0], "speaker": role, "source": role,
                "metadata": {**meta, "kind": "message"}}
    call = _call(item)
    if call is not None:
        name, arguments = call
        if isinstance(item.get("call_id"), str):
            tools[item["call_id"]] = name
        return {"text": tool_call_text(name, arguments), "speaker": "assistant", "source": "assistant",
                "metadata": {**meta, "kind": "tool_call", "tool": name}}
    if what in ("function_call_output", "custom_tool_call_output"):
        output, failed = _output(item.get("output"))
        if not output:
            return None
        text, extra = tool_result_turn(tools.get(str(item.get("call_id")), "tool"), output, failed=failed)
        return {"text": text, "speaker": "tool", "source": "tool", "metadata": {**meta, **extra}}
    return None  # reasoning, snapshots, compaction markers, items a newer Codex adds


def _call(item: Mapping[str, Any]) -> tuple[str, object] | None:
    """(tool name, arguments) of a tool-call item, or None."""
    what = item.get("type")
    if what == "function_call":
        arguments = item.get("arguments", "")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except json.JSONDecodeError:
                pass  # shown as the string it is
        return str(item.get("name") or "tool"), arguments
    if what == "custom_tool_call":
        return str(item.get("name") or "tool"), item.get("input", "")
    if what == "local_shell_call":
        action = item.get("action")
        command = action.get("command") if isinstance(action, Mapping) else None
        return "shell", {"command": command} if command else {}
    if what == "web_search_call":
        action = item.get("action")
        return "web_search", {"query": action.get("query")} if isinstance(action, Mapping) else {}
    return None


def _output(output: object) -> tuple[str, bool]:
    """A tool output's text and whether it failed: a string (whose JSON may wrap it as ``{"output": ...}``),
    a list of content items, or ``{"content": ..., "success": false}``."""
    failed = False
    if isinstance(output, str):
        try:
            wrapped = json.loads(output)
        except json.JSONDecodeError:
            wrapped = None
        if isinstance(wrapped, Mapping) and isinstance(wrapped.get("output"), str):
            code = (wrapped.get("metadata") or {}).get("exit_code") if isinstance(wrapped.get("metadata"), Mapping) \
                else None
            return wrapped["output"].strip(), isinstance(code, int) and code != 0
        return output.strip(), failed
    if isinstance(output, Mapping):
        return _output(output.get("content", ""))[0], output.get("success") is False
    return _text(output), failed


def _text(content: object) -> str:
    """The text of a message's content items (``input_text``, ``output_text``, ``text``); images left out."""
    if isinstance(content, str):
        return content.strip()
    if not isinstance(content, list):
        return ""
    return "\n".join(str(c.get("text", "")) for c in content
                     if isinstance(c, Mapping) and c.get("type") in ("input_text", "output_text", "text")).strip()
