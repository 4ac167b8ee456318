"""``omnimem hook codex``: docs/codex.md's config.toml block runs as printed.

Its ``notify`` command runs as Codex runs it (the argv of the block plus the notification JSON as the last
argument, no shell) on the page's session file, stored where Codex writes it; its ``[mcp_servers.omnimem]``
table starts ``omnimem mcp`` as Codex would, and that server finds what the hook stored.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from omnimem import Memory
from omnimem.cli import app
from omnimem.errors import MalformedDataError, NotFoundError
from omnimem.integrations.codex import find_rollout, read_notification, read_rollout
from tests.integrations.test_claude_code import env_for

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "codex.md").read_text(encoding="utf-8")
HOME = "/home/you"  # the page's home folder, put in a temporary folder here
THREAD = "0199a2d7-41c4-78b1-b7cc-a45d62a89cd5"


def config() -> dict[str, Any]:
    blocks = re.findall(r"```toml\n(.*?)```", PAGE, re.S)
    assert len(blocks) == 1
    return tomllib.loads(blocks[0])


def notification() -> str:
    blocks = [b for b in re.findall(r"```json\n(.*?)```", PAGE, re.S) if "agent-turn-complete" in b]
    assert len(blocks) == 1
    return blocks[0]


def session_lines() -> list[str]:
    return re.findall(r"```jsonl\n(.*?)```", PAGE, re.S)[0].splitlines()


def filled(args: list[str], home: Path) -> list[str]:
    return [a.replace(HOME, str(home)) for a in args]


def environment(home: Path) -> dict[str, str]:
    env = env_for(home)
    env.pop("CODEX_HOME", None)
    return env


def notify(home: Path, folder: Path) -> subprocess.CompletedProcess[str]:
    """The notify program as Codex starts it: the configured argv, then the notification JSON."""
    env = environment(home)
    argv = filled(config()["notify"], home)
    command = shutil.which(argv[0], path=env["PATH"])
    assert command, f"{argv[0]} is not on PATH"
    return subprocess.run([command, *argv[1:], notification()], capture_output=True, text=True, cwd=folder,
                          env=env, timeout=300)


def write_session(home: Path, lines: list[str]) -> Path:
    path = home / ".codex" / "sessions" / "2026" / "12" / "01" / f"rollout-2026-12-01T10-00-00-{THREAD}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_the_notify_command_stores_the_session_once(tmp_path: Path) -> None:
    home, folder = tmp_path / "home", tmp_path / "acme"
    folder.mkdir(parents=True)
    lines = session_lines()
    path = write_session(home, lines)

    first = notify(home, folder)
    assert first.returncode == 0, first.stderr
    assert first.stdout == f"omnimem: 4 of 4 turns stored (0 held already) from {path} -> " \
                           f"{home}/.omnimem/coding\n"
    assert "0 of 4 turns stored (4 held already)" in notify(home, folder).stdout
    grown = [*lines, json.dumps({"timestamp": "2026-12-01T10:05:00.000Z", "type": "response_item", "payload": {
        "type": "message", "role": "user", "content": [{"type": "input_text", "text": "Now tag the release."}]}})]
    write_session(home, grown)
    assert "1 of 5 turns stored (4 held already)" in notify(home, folder).stdout

    with Memory(home / ".omnimem" / "coding") as mem:  # the scope the page promises
        units = mem.units(user_id="ana", agent_id="project:/home/ana/acme", session_id=THREAD)
    assert [(u.speaker, u.summary) for u in units] == [
        ("user", "The staging database is acme-stage-7; run migrations there first."),
        ("assistant", 'called shell: {"command":["make","migrate","DB=acme-stage-7"]}'),
        ("tool", "shell returned: applied 3 migrations"),
        ("assistant", "Migrations ran on acme-stage-7: 3 applied."),
        ("user", "Now tag the release.")]
    assert [u.source_ids[0] for u in units] == [f"{THREAD}#{n}" for n in (3, 7, 8, 9, 10)]


@pytest.mark.slow
def test_the_mcp_server_of_the_block_finds_what_the_hook_stored(tmp_path: Path) -> None:
    from fastmcp import Client

    from tests.integrations.test_mcp_clients import launch, walk

    home, folder = tmp_path / "home", tmp_path / "empty"
    folder.mkdir(parents=True)
    write_session(home, session_lines())
    assert notify(home, folder).returncode == 0
    server = config()["mcp_servers"]["omnimem"]
    assert server["command"] == "omnimem" and server["args"][0] == "mcp"
    server = {**server, "args": filled(server["args"], home)}

    async def search() -> Any:
        async with Client(launch(server, folder)) as client:
            found = await client.call_tool("search", {"query": "which database do migrations run on first?",
                                                      "user_id": "ana"})
            return found.structured_content

    assert "acme-stage-7" in asyncio.run(search())["context"]
    assert asyncio.run(walk(launch(server, folder)))["search"]["hits"]  # and every tool works


def test_the_backfill_stores_every_session_of_a_folder(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_session(home, session_lines())
    other = home / ".codex" / "sessions" / "2026" / "12" / "02" / "rollout-2026-12-02T09-00-00-other.jsonl"
    other.parent.mkdir(parents=True)
    other.write_text(json.dumps({"timestamp": "2026-12-02T09:00:00Z", "type": "response_item", "payload": {
        "type": "message", "role": "user", "content": [{"type": "input_text", "text": "Use tabs."}]}}) + "\n")
    args = ["hook", "codex", "--sessions", str(home / ".codex" / "sessions"), "--store", str(tmp_path / "mem"),
            "--user-id", "ana"]
    out = CliRunner().invoke(app, args, env={"OMNIMEM_EMBEDDER": "fake"})
    assert out.exit_code == 0, out.output
    assert [line.split(" from ")[0] for line in out.stdout.splitlines()] == [
        "omnimem: 4 of 4 turns stored (0 held already)", "omnimem: 1 of 1 turns stored (0 held already)"]
    again = CliRunner().invoke(app, args, env={"OMNIMEM_EMBEDDER": "fake"})
    assert again.stdout.count("0 held already") == 0 and again.stdout.count("turns stored") == 2
    with Memory(tmp_path / "mem") as mem:
        assert mem.count_units() == 5
        assert [u.scope.session_id for u in mem.units(user_id="ana", session_id="other")] == ["other"]


@pytest.mark.parametrize(("args", "says"), [
    (["{not json"], "not JSON"),
    (['{"type": "agent-turn-complete"}'], "no thread-id"),
    ([json.dumps({"type": "agent-turn-complete", "thread-id": "nope"}), "--sessions", "."],
     "no Codex session file for thread nope"),
    ([], "needs the notification JSON"),
    (["--sessions", "no-such-folder"], "is not a folder of Codex sessions"),
])
def test_a_failure_is_one_line_and_exit_1(args: list[str], says: str, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    out = CliRunner().invoke(app, ["hook", "codex", "--store", str(tmp_path / "mem"), *args])
    assert out.exit_code == 1 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and says in out.stderr


def test_other_notifications_are_left_alone(tmp_path: Path) -> None:
    out = CliRunner().invoke(app, ["hook", "codex", "--store", str(tmp_path / "mem"), '{"type": "approval"}'])
    assert out.exit_code == 0 and out.stdout == "" and "nothing to capture" in out.stderr
    assert not (tmp_path / "mem").exists()


def test_the_reader_functions_raise_typed_errors(tmp_path: Path) -> None:
    with pytest.raises(MalformedDataError):
        read_notification("[]")
    with pytest.raises(NotFoundError):
        find_rollout(THREAD, tmp_path)
    with pytest.raises(MalformedDataError, match="no Codex session file"):
        read_rollout(tmp_path / "missing.jsonl")
    told = read_notification(notification())
    assert (told.type, told.thread_id, told.cwd) == ("agent-turn-complete", THREAD, "/home/ana/acme")
