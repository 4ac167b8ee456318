"""``omnimem hook claude-code``: docs/claude-code.md's settings block runs as printed, fed the page's events and
transcript; a transcript is stored once however often it is captured; a failing recall never breaks the prompt.

The hook runs as Claude Code runs it: the command string of the settings block through a shell, the event JSON
on stdin, in a folder of its own, on the deterministic fake embedder.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from omnimem import Memory
from omnimem.cli import app
from omnimem.integrations.claude_code import prompt_context, read_event, read_transcript
from omnimem.errors import InvalidInputError, MalformedDataError

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "claude-code.md").read_text(encoding="utf-8")


def page_json(contains: str) -> Any:
    """The page's JSON block that holds ``contains``."""
    blocks = [b for b in re.findall(r"```json\n(.*?)```", PAGE, re.S) if contains in b]
    assert len(blocks) == 1, f"the page has {len(blocks)} JSON blocks with {contains!r}"
    return json.loads(blocks[0])


def page_transcript() -> str:
    return re.findall(r"```jsonl\n(.*?)```", PAGE, re.S)[0]


def settings_commands() -> dict[str, dict[str, Any]]:
    """Each event's hook entry of the settings block."""
    hooks = page_json('"hooks"')["hooks"]
    return {event: entries[0]["hooks"][0] for event, entries in hooks.items()}


def env_for(home: Path) -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)  # where pip put the `omnimem` command
    env = {**os.environ, "HOME": str(home), "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
           "OMNIMEM_EMBEDDER": "fake", "OMNIMEM_USER_ID": "ana"}
    for name in ("OMNIMEM_STORE", "OMNIMEM_URL", "OMNIMEM_API_KEY", "OMNIMEM_CONFIG"):
        env.pop(name, None)
    return env


def run_hook(command: str, event: dict[str, Any], home: Path, folder: Path) -> subprocess.CompletedProcess[str]:
    """The command as Claude Code runs it: through a shell, the event as JSON on stdin."""
    return subprocess.run(["bash", "-c", command], input=json.dumps(event), capture_output=True, text=True,
                          cwd=folder, env=env_for(home), timeout=300)


def test_the_settings_block_runs_as_printed_on_the_documented_events(tmp_path: Path) -> None:
    home, folder = tmp_path / "home", tmp_path / "acme"
    folder.mkdir(parents=True)
    commands = settings_commands()
    assert set(commands) == {"UserPromptSubmit", "PreCompact", "SessionEnd"}
    assert len({c["command"] for c in commands.values()}) == 1  # one command; the event comes on stdin
    assert commands["SessionEnd"]["timeout"] == commands["PreCompact"]["timeout"] == 60
    prompt, end = page_json('"prompt": '), page_json('"reason": ')
    transcript = Path(end["transcript_path"].replace("~", str(home), 1))
    transcript.parent.mkdir(parents=True)
    transcript.write_text(page_transcript(), encoding="utf-8")

    before = run_hook(commands["UserPromptSubmit"]["command"], prompt, home, folder)
    assert before.returncode == 0 and before.stdout == ""  # no store yet: no memory, the prompt goes on
    assert before.stderr.count("\n") == 1 and "nothing to recall" in before.stderr

    stored = run_hook(commands["SessionEnd"]["command"], end, home, folder)
    assert stored.returncode == 0, stored.stderr
    assert stored.stdout.startswith("omnimem: 4 of 4 turns stored (0 held already)")
    compact = {**end, "hook_event_name": "PreCompact", "trigger": "auto", "custom_instructions": None}
    compact.pop("reason")
    again = run_hook(commands["PreCompact"]["command"], compact, home, folder)
    assert again.returncode == 0 and again.stdout.startswith("omnimem: 0 of 4 turns stored (4 held already)")

    answer = run_hook(commands["UserPromptSubmit"]["command"], prompt, home, folder)
    assert answer.returncode == 0, answer.stderr
    output = json.loads(answer.stdout)
    assert set(output) == {"hookSpecificOutput"}  # stdout is the JSON object alone, as Claude Code parses it
    told = output["hookSpecificOutput"]
    assert told["hookEventName"] == "UserPromptSubmit"
    assert "user: We ship the api with `make release`, never by hand. Remember that." in told["additionalContext"]
    documented = page_json('"additionalContext"')["hookSpecificOutput"]["additionalContext"]
    shown = documented.splitlines()  # the answer the page shows: its heading first, then lines of it
    assert told["additionalContext"].startswith(shown[0] + "\n") and shown[-1] == "..."
    assert set(shown[1:-1]) <= set(told["additionalContext"].splitlines())
    assert len(told["additionalContext"]) <= 10_000  # Claude Code's cap on what a hook adds

    with Memory(home / ".omnimem" / "coding") as mem:  # the scope the page promises
        units = mem.units(user_id="ana", agent_id="project:/home/ana/acme", session_id=end["session_id"])
    assert [u.speaker for u in units] == ["user", "assistant", "assistant", "tool"]
    assert [u.source_ids for u in units][1:3] == [("1d3e4b2f-8c7e-4f9b-8a21-3c4d5e6f7081#0",),
                                                  ("1d3e4b2f-8c7e-4f9b-8a21-3c4d5e6f7081#1",)]


def transcript_line(n: int, text: str, kind: str = "user") -> str:
    return json.dumps({"type": kind, "uuid": f"u-{n}", "timestamp": f"2026-12-01T10:{n:02d}:00.000Z",
                       "message": {"role": kind, "content": text if kind == "user" else [{"type": "text",
                                                                                            "text": text}]}})


def capture(store: Path, transcript: Path, session: str = "s-1", cwd: str = "/work/acme") -> Any:
    event = {"session_id": session, "transcript_path": str(transcript), "cwd": cwd,
             "hook_event_name": "SessionEnd", "reason": "other"}
    return CliRunner().invoke(app, ["hook", "claude-code", "--store", str(store), "--user-id", "ana"],
                              input=json.dumps(event), env={"OMNIMEM_EMBEDDER": "fake"})


def test_a_transcript_captured_twice_or_grown_since_is_stored_once(tmp_path: Path) -> None:
    store, transcript = tmp_path / "mem", tmp_path / "t.jsonl"
    lines = [transcript_line(0, "The staging database is called acme-stage-7."),
             transcript_line(1, "I will use acme-stage-7 for the migration test.", "assistant")]
    transcript.write_text("\n".join(lines) + "\n")
    first = capture(store, transcript)
    assert first.exit_code == 0 and "2 of 2 turns stored (0 held already)" in first.stdout
    assert "0 of 2 turns stored (2 held already)" in capture(store, transcript).stdout
    with transcript.open("a") as out:  # the session went on: two more entries, and a line still being written
        out.write(transcript_line(2, "Lunch is at the Thai place on Friday.") + "\n")
        out.write(transcript_line(3, "Booked a table for Friday at noon.", "assistant") + "\n")
        out.write('{"type": "user", "uuid": "u-4", "mess')
    grown = capture(store, transcript)
    assert grown.exit_code == 0 and "2 of 4 turns stored (2 held already)" in grown.stdout
    with Memory(store) as mem:
        units = mem.units(user_id="ana", agent_id="project:/work/acme", session_id="s-1")
        assert [u.source_ids[0] for u in units] == ["u-0", "u-1", "u-2", "u-3"]
        assert mem.count_units() == 4


def test_what_a_transcript_keeps_and_leaves_out(tmp_path: Path) -> None:
    long_output = "PASSED test_x;" * 200  # 2,800 characters
    entries = [
        {"type": "summary", "summary": "Release work", "leafUuid": "b"},
        {"type": "user", "uuid": "m", "isMeta": True, "message": {"role": "user", "content": "Caveat: local."}},
        {"type": "user", "uuid": "c", "message": {"role": "user", "content": "<command-name>/clear</command-name>"}},
        {"type": "assistant", "uuid": "s", "isSidechain": True,
         "message": {"role": "assistant", "content": [{"type": "text", "text": "subagent notes"}]}},
        {"type": "assistant", "uuid": "a", "timestamp": "2026-12-01T10:00:00Z", "message": {"role": "assistant",
         "content": [{"type": "thinking", "thinking": "private"}, {"type": "tool_use", "id": "t1", "name": "Bash",
                                                                   "input": {"command": "pytest -q"}}]}},
        {"type": "user", "uuid": "r", "timestamp": "2026-12-01T10:00:09Z", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "is_error": True,
             "content": [{"type": "text", "text": long_output}, {"type": "image", "source": {"data": "AAAA"}}]}]}},
        {"type": "user", "uuid": "i", "message": {"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "data": "AAAA"}}]}},
    ]
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in entries) + "\nnot json\n")
    turns = read_transcript(path)
    assert [(t["id"], t["speaker"], t["source"]) for t in turns] == [("a", "assistant", "assistant"),
                                                                   ("r", "tool", "tool")]
    assert turns[0]["text"] == 'called Bash: {"command":"pytest -q"}' and turns[0]["time"] == "2026-12-01T10:00:00Z"
    result = turns[1]
    assert result["text"].startswith("Bash failed: PASSED test_x;PASSED")
    assert result["text"].endswith("[... 1800 more characters left out]")
    assert result["metadata"] == {"agent": "claude-code", "kind": "tool_result", "tool": "Bash",
                                  "left_out_chars": 1800, "error": True}


@pytest.mark.parametrize(("stdin", "says"), [
    ("", "no JSON on stdin"),
    ("{not json", "not JSON"),
    ("[1, 2]", "JSON list, not an object"),
    ('{"session_id": "s"}', "no hook_event_name"),
    ('{"hook_event_name": "UserPromptSubmit"}', "no session_id"),
    ('{"hook_event_name": "Stop", "session_id": "s"}', "handles UserPromptSubmit, SessionEnd, PreCompact"),
    ('{"hook_event_name": "SessionEnd", "session_id": "s"}', "no transcript_path"),
    ('{"hook_event_name": "UserPromptSubmit", "session_id": "s", "prompt": 5}', "prompt is int"),
])
def test_bad_stdin_gets_one_line_and_exit_1_never_2(stdin: str, says: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["hook", "claude-code", "--store", str(tmp_path / "mem")], input=stdin)
    assert result.exit_code == 1  # Claude Code reads 2 as "block the prompt"
    assert result.stdout == "" and result.stderr.count("\n") == 1 and says in result.stderr
    assert result.stderr.startswith("error: ")


def test_read_event_raises_typed_errors() -> None:
    with pytest.raises(MalformedDataError):
        read_event(b"\xff\xfe")
    with pytest.raises(InvalidInputError, match="Notification"):
        read_event('{"hook_event_name": "Notification", "session_id": "s"}')
    event = read_event('{"hook_event_name": "UserPromptSubmit", "session_id": "s", "cwd": "/a", "prompt": "hi"}')
    assert event.recalls and event.prompt == "hi" and event.transcript_path is None
    assert prompt_context("x") == {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
                                                          "additionalContext": "x"}}


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # nothing listens once the socket is closed


def test_a_recall_that_fails_lets_the_prompt_go_on(tmp_path: Path) -> None:
    event = {"session_id": "s", "cwd": str(tmp_path), "hook_event_name": "UserPromptSubmit", "prompt": "deploy?"}
    down = CliRunner().invoke(app, ["hook", "claude-code", "--url", f"http://127.0.0.1:{closed_port()}"],
                              input=json.dumps(event))
    assert down.exit_code == 0 and down.stdout == ""
    assert down.stderr.count("\n") == 1 and down.stderr.startswith("omnimem: no memory recalled: ")
    not_a_store = tmp_path / "file"
    not_a_store.write_text("x")
    broken = CliRunner().invoke(app, ["hook", "claude-code", "--store", str(not_a_store)], input=json.dumps(event))
    assert broken.exit_code == 0 and broken.stdout == "" and broken.stderr.count("\n") == 1


def test_a_prompt_recalls_its_own_project_only(tmp_path: Path) -> None:
    store = tmp_path / "mem"
    for project, fact in (("/work/acme", "The acme api deploys with make release."),
                          ("/work/zeta", "The zeta api deploys with a shell script.")):
        path = tmp_path / f"{project.rsplit('/', 1)[1]}.jsonl"
        path.write_text(transcript_line(0, fact) + "\n")
        assert capture(store, path, session=f"s-{project}", cwd=project).exit_code == 0
    event = {"session_id": "new", "cwd": "/work/acme", "hook_event_name": "UserPromptSubmit",
             "prompt": "how does the api deploy?"}
    out = CliRunner().invoke(app, ["hook", "claude-code", "--store", str(store), "--user-id", "ana"],
                             input=json.dumps(event), env={"OMNIMEM_EMBEDDER": "fake"})
    text = json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "make release" in text and "shell script" not in text
    other_user = CliRunner().invoke(app, ["hook", "claude-code", "--store", str(store), "--user-id", "bo"],
                                    input=json.dumps(event), env={"OMNIMEM_EMBEDDER": "fake"})
    assert other_user.exit_code == 0 and other_user.stdout == ""


@pytest.mark.slow
def test_the_hook_reaches_a_running_server_with_its_key(tmp_path: Path) -> None:
    from tests.server.test_serve_cli import _serving

    store = tmp_path / "served"
    with Memory(store, embedder="fake"):  # a store for the server (its keys live in it)
        pass
    made = CliRunner().invoke(app, ["keys", "create", "--name", "hooks", "--user-id", "ana", "--role", "write",
                                    "--store", str(store), "--json"])
    key = json.loads(made.stdout)["api_key"]
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(transcript_line(0, "The release train leaves every Thursday at noon.") + "\n")
    end = {"session_id": "s-1", "transcript_path": str(transcript), "cwd": "/work/acme",
           "hook_event_name": "SessionEnd", "reason": "other"}
    prompt = {"session_id": "s-2", "cwd": "/work/acme", "hook_event_name": "UserPromptSubmit",
              "prompt": "when does the release train leave?"}
    with _serving(store, "--embedder", "fake") as url:
        env = {"OMNIMEM_URL": url, "OMNIMEM_API_KEY": key, "OMNIMEM_USER_ID": "ana"}
        hook = ["hook", "claude-code"]
        stored = CliRunner().invoke(app, hook, input=json.dumps(end), env=env)
        assert stored.exit_code == 0 and stored.stdout == f"omnimem: 1 of 1 turns stored (0 held already) from " \
                                                          f"{transcript} -> {url}\n"
        assert "0 of 1 turns stored (1 held already)" in CliRunner().invoke(app, hook, input=json.dumps(end),
                                                                              env=env).stdout
        recalled = CliRunner().invoke(app, hook, input=json.dumps(prompt), env=env)
        assert "every Thursday at noon" in json.loads(recalled.stdout)["hookSpecificOutput"]["additionalContext"]
        wrong_key = CliRunner().invoke(app, hook, input=json.dumps(prompt), env={**env, "OMNIMEM_API_KEY": "x"})
        assert wrong_key.exit_code == 0 and wrong_key.stdout == "" and "no memory recalled" in wrong_key.stderr


def test_the_runnable_example_runs_in_an_empty_folder(tmp_path: Path) -> None:
    block = re.findall(r"```python\n(.*?)```", PAGE.split("## Runnable example", 1)[1], re.S)[0]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    env.pop("OMNIMEM_EMBEDDER", None)  # the default model, as a reader runs it
    out = subprocess.run([sys.executable, "-c", block], capture_output=True, text=True, cwd=tmp_path, env=env,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "Captured(turns=2, stored=2, held=0, skipped=0, reasons={})",
        "Captured(turns=2, stored=0, held=2, skipped=0, reasons={})",
        "Memory of this project from omnimem (its earlier sessions and this one):",
        "[2026-12-01 10:00]",
        "user: Our staging database is acme-stage-7.",
        "assistant: Noted: staging is acme-stage-7.",
        "[('user', ['u-1']), ('assistant', ['a-1'])]"]
