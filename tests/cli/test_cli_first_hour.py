"""What a new user meets first on the command line (issue 23): no store made by a typo, flags named as
flags, readable counts, one-line usage errors, whole key ids, and a hint when nothing is found."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import typer
from typer.testing import Result

from omnimem import Memory
from omnimem.cli import app

Run = Callable[..., Result]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "store"
    with Memory(path, embedder="fake") as m:
        m.add("I painted a sunset over the lake", speaker="Ann", user_id="ann", time="2024-05-01")
        m.add("a note without a speaker", user_id="ann", time="2024-05-02")
    return path


def one_error_line(res: Result) -> str:
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    return lines[0]


@pytest.mark.parametrize("args", [
    ("serve",), ("mcp",), ("keys", "list"), ("keys", "create", "--name", "me", "--role", "admin"),
    ("keys", "revoke", "some-key"), ("queue",), ("worker", "--drain"),
], ids=lambda a: " ".join(a[:2]))
def test_a_mistyped_store_is_refused_and_nothing_is_created(run: Run, tmp_path: Path, args: tuple[str, ...]) -> None:
    typo = tmp_path / "stroe"
    res = run(*args, "--store", typo)
    assert res.exit_code == 2
    line = one_error_line(res)
    assert str(typo) in line and "holds no omnimem store" in line
    assert not typo.exists()


def test_adding_creates_the_store_a_typo_does_not(run: Run, tmp_path: Path) -> None:
    new = tmp_path / "new"
    assert run("add", "first memory", "--store", new).exit_code == 0 and Memory.exists(new)
    assert run("keys", "create", "--name", "me", "--role", "admin", "--store", new).exit_code == 0


@pytest.mark.parametrize(("args", "flags", "python"), [
    (("forget",), ["--all"], "all=True"),
    (("forget", "--session-id", "s"), ["--user-id or --agent-id", "--all-users"], "all_users=True"),
    (("export",), ["--all"], "all=True"),
])
def test_errors_name_flags_not_python_arguments(run: Run, store: Path, args: tuple[str, ...], flags: list[str],
                                                python: str) -> None:
    res = run(*args, "--store", store)
    assert res.exit_code == 2
    line = one_error_line(res)
    assert all(flag in line for flag in flags) and python not in line and "user_id" not in line


def test_stats_prints_counts_as_integers_in_readable_lines(run: Run, store: Path) -> None:
    res = run("stats", "--store", store)
    assert res.exit_code == 0
    lines = res.stdout.splitlines()
    assert "units: 2" in lines and "by_modality: text 2" in lines and "llm: none" in lines
    assert "queue: pending 0, running 0, failed 0" in lines
    filters = next(line for line in lines if line.startswith("filters: "))
    assert "text_stored 2" in filters
    assert not any(c in res.stdout for c in "{}'") and ".0," not in res.stdout and not res.stdout.count(".0\n")


def test_retrying_or_dropping_an_unknown_job_fails_in_one_line(run: Run, store: Path) -> None:
    for option in ("--retry", "--drop"):
        res = run("queue", option, "42", "--store", store)
        assert res.exit_code == 2 and "no failed job 42" in one_error_line(res)


def test_keys_list_never_cuts_a_key_id(run: Run, store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = []
    for n in range(2):
        res = run("keys", "create", "--name", f"a-long-name-for-the-agent-key-number-{n}", "--role", "write",
                  "--user-id", "a-user-with-a-rather-long-identifier", "--agent-id", "an-agent-with-a-long-name",
                  "--store", store, "--json")
        ids.append(res.stdout.split('"key_id": "')[1].split('"')[0])
    monkeypatch.setenv("COLUMNS", "60")
    listed = run("keys", "list", "--store", store)
    assert listed.exit_code == 0
    assert all(any(key_id in line for line in listed.stdout.splitlines()) for key_id in ids), listed.stdout
    assert "…" not in listed.stdout


@pytest.mark.parametrize(("args", "says"), [
    (("keys", "create", "--role", "admin"), "Missing option '--name'"),
    (("search", "x", "--limit", "0"), "--limit"),
    (("add",), "Missing argument"),
    (("no-such-command",), "No such command"),
])
def test_usage_errors_are_one_line_and_exit_2(run: Run, store: Path, args: tuple[str, ...], says: str) -> None:
    res = run(*args, "--store", store)
    assert res.exit_code == 2 and says in one_error_line(res) and "╭" not in res.output


def test_ask_shows_units_without_a_speaker_without_a_colon(run: Run, store: Path) -> None:
    res = run("ask", "what did I note or paint?", "--store", store, "--user-id", "ann")
    assert res.exit_code == 0
    evidence = [line for line in res.stdout.splitlines() if "]" in line]
    assert any(line.endswith("] Ann: I painted a sunset over the lake") for line in evidence), res.stdout
    assert any(line.endswith("] a note without a speaker") for line in evidence), res.stdout
    assert " : " not in res.stdout and "pass llm=" not in res.stderr


def test_graph_show_on_a_store_without_a_graph_says_it_is_off(run: Run, store: Path) -> None:
    res = run("graph", "show", "Ann", "--store", store)
    assert res.exit_code == 2
    line = one_error_line(res)
    assert "knowledge graph is off" in line and "--graph" in line and "no entity called" not in line


def test_a_search_in_an_empty_scope_says_so(run: Run, store: Path) -> None:
    res = run("search", "sunset", "--user-id", "nobody", "--store", store)
    assert res.exit_code == 0 and "no memories for user 'nobody'" in res.stdout and "┏" not in res.stdout
    found = run("search", "sunset", "--user-id", "ann", "--store", store)
    assert "sunset" in found.stdout and "no memories" not in found.stdout


def _commands(group: object, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for name, command in getattr(group, "commands", {}).items():
        out += _commands(command, (*path, name)) if hasattr(command, "commands") else [(*path, name)]
    return out


def test_help_shows_no_python_types(run: Run) -> None:
    commands = _commands(typer.main.get_command(app))
    assert ("forget",) in commands and ("keys", "list") in commands
    for command in commands:
        if command == ("bench",):  # passes everything on to the benchmarks' own CLI
            continue
        res = run(*command, "--help")
        assert res.exit_code == 0, command
        assert "<bool>" not in res.stdout and "list[" not in res.stdout, (command, res.stdout)
    forget = run("forget", "--help").stdout
    assert "--unit" in forget and "<str>" in forget
