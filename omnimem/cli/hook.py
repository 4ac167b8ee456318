"""``omnimem hook claude-code`` and ``omnimem hook codex``: memory a coding agent gets without wiring.

Registered on the CLI's typer app by :mod:`omnimem.cli.commands`. A hook runs before every prompt, so
it must never break one: a ``UserPromptSubmit`` call that fails prints one line on stderr and exits 0
(the prompt goes on without memory). Every other failure is one line on stderr and exit 1, which
Claude Code reports without blocking; the hook never exits 2, which Claude Code reads as "block the
prompt" (or the compaction). Pages: ``docs/claude-code.md``, ``docs/codex.md``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from omnimem.cli.common import cli_words, store_path
from omnimem.cli.opening import StoreOpt, _memory, _reader, _where, _writer_embedder
from omnimem.errors import OmnimemError

if TYPE_CHECKING:
    from omnimem.integrations.transcripts import Captured

TOOLS = ("claude-code", "codex")
FEW_TURNS = 4  # new turns a capture embeds with the numpy MiniLM: about a second each for a long turn, where
#                torch's load (5 s of CPU) then embeds a session's turns in well under a second (hook-cost.md)
REMOTE = ("http://", "https://")


def hook_command(
    tool: Annotated[str, typer.Argument(metavar="TOOL", help="claude-code (reads the hook's event JSON on stdin) "
                                        "or codex.")],
    notification: Annotated[str | None, typer.Argument(
        metavar="[NOTIFICATION]", help="codex: the JSON Codex's notify program gets after each turn.",
        show_default=False)] = None,
    store: StoreOpt = None,
    url: Annotated[str | None, typer.Option(
        "--url", help="A running omnimem serve (http://host:port) or a PostgreSQL database instead of --store "
                      "(default: $OMNIMEM_URL, config 'url').")] = None,
    api_key: Annotated[str | None, typer.Option(
        "--api-key", help="The server's API key (default: $OMNIMEM_API_KEY).")] = None,
    user_id: Annotated[str | None, typer.Option(
        "--user-id", help="Whose memory (default: $OMNIMEM_USER_ID, else your login name).")] = None,
    project: Annotated[str | None, typer.Option(
        "--project", help="The project's scope id (default: project:<the folder the agent runs in>).")] = None,
    budget: Annotated[int, typer.Option("--budget", help="Tokens of memory added before a prompt.")] = 600,
    file: Annotated[list[Path] | None, typer.Option(
        "--file", help="codex: capture this session file (repeatable).")] = None,
    sessions: Annotated[Path | None, typer.Option(
        "--sessions", help="codex: where its session files are (default: $CODEX_HOME/sessions, "
                           "~/.codex/sessions); alone, capture every one.")] = None,
) -> None:
    """Automatic memory for coding agents: recall before each Claude Code prompt, capture Claude Code and
    Codex sessions once (docs/claude-code.md, docs/codex.md). Never exits 2, which an agent reads as "block"."""
    if tool not in TOOLS:
        _stop(f"unknown TOOL {tool!r}; use {' or '.join(TOOLS)}")
    if store is not None and url is not None:
        _stop("pass either --store or --url, not both")

    def target() -> Target:  # made inside each path's error handling (a bad config file is a failure too)
        return Target(store, url, api_key or os.environ.get("OMNIMEM_API_KEY") or None,
                      user_id or os.environ.get("OMNIMEM_USER_ID") or _login(), project)

    if tool == "claude-code":
        if notification is not None or file or sessions is not None:
            _stop("claude-code reads its event on stdin; NOTIFICATION, --file and --sessions are for codex")
        _claude_code(target, budget)
    else:
        _codex(target, notification, file or [], sessions)


class Target:
    """Where the hook reads and writes, and whose memory it is."""

    def __init__(self, store: Path | None, url: str | None, api_key: str | None, user_id: str,
                 project: str | None) -> None:
        if url is None and store is None:
            from omnimem.config import Settings

            url = Settings.load().url
        self.store, self.url, self.api_key, self.user_id, self.project = store, url, api_key, user_id, project

    @property
    def remote(self) -> bool:
        return self.url is not None and self.url.startswith(REMOTE)

    def agent_id(self, cwd: str | None) -> str | None:
        from omnimem.integrations.transcripts import project_id

        return self.project or project_id(cwd)

    @contextmanager
    def reader(self) -> Iterator[Any]:
        """The memory a recall searches, opened for a quick read; None when the folder holds no store yet."""
        if self.remote:
            with self._server(timeout=5.0, retries=0) as mem:
                yield mem
            return
        if self.url is None:
            from omnimem.memory import Memory

            if not Memory.exists(store_path(self.store)):
                yield None
                return
        with _reader(self.store, self.url) as mem:
            yield mem

    def capture(self, turns: Sequence[Mapping[str, Any]], agent_id: str | None, session_id: str) -> Captured:
        """Store what the session gained; a folder store is created on the first capture."""
        from omnimem.integrations.transcripts import capture, new_turns

        user = self.user_id
        if self.remote:
            with self._server(timeout=60.0, retries=2) as mem:
                return capture(mem, turns, user_id=user, agent_id=agent_id, session_id=session_id)
        with self._writer(True) as mem:  # a few new turns embed without torch; more open again with its batches
            fresh = new_turns(mem, turns, user_id=user, agent_id=agent_id, session_id=session_id)
            self.where = _where(mem)
            if len(fresh) <= FEW_TURNS:
                return capture(mem, turns, fresh=fresh, user_id=user, agent_id=agent_id, session_id=session_id)
        with self._writer(False) as mem:
            return capture(mem, turns, fresh=fresh, user_id=user, agent_id=agent_id, session_id=session_id)

    def shown(self) -> str:
        return getattr(self, "where", None) or (self.url if self.remote else None) or str(store_path(self.store))

    @contextmanager
    def _writer(self, few: bool) -> Iterator[Any]:
        """The store opened to write: with the numpy MiniLM for a few texts (no torch import), else with the
        store's own model, whose batches embed a session's turns far faster once loaded."""
        with _memory(self.store, _writer_embedder(self.store, self.url) if few else None, url=self.url) as mem:
            yield mem

    @contextmanager
    def _server(self, *, timeout: float, retries: int) -> Iterator[Any]:
        from omnimem.memory import Memory

        with Memory(url=str(self.url), api_key=self.api_key, timeout=timeout, retries=retries) as mem:
            yield mem


def _claude_code(target: Callable[[], Target], budget: int) -> None:
    from omnimem.integrations.claude_code import read_event

    if sys.stdin is None or sys.stdin.isatty():
        _stop("omnimem hook claude-code reads the hook's event JSON on stdin, as Claude Code passes it "
              "(docs/claude-code.md)")
    try:
        event = read_event(sys.stdin.buffer.read(10 << 20))
    except OmnimemError as exc:
        _stop(str(exc))
    if event.recalls:
        try:
            _recall(target(), event.prompt or "", event.cwd, budget)
        except Exception as exc:  # noqa: BLE001 - a hook must never break the prompt: one line, exit 0
            _say(f"no memory recalled: {_words(exc)}")
        return
    from omnimem.integrations.claude_code import read_transcript

    try:
        turns = read_transcript(str(event.transcript_path))
        where = target()
        done = where.capture(turns, where.agent_id(event.cwd), event.session_id)
    except Exception as exc:  # noqa: BLE001 - one line, exit 1 (Claude Code reports it; nothing is blocked)
        _stop(f"{event.name}: the transcript was not captured: {_words(exc)}")
    _captured(done, str(event.transcript_path), where)


def _recall(target: Target, prompt: str, cwd: str | None, budget: int) -> None:
    from omnimem.integrations.claude_code import prompt_context
    from omnimem.integrations.transcripts import recall

    with target.reader() as mem:
        if mem is None:
            _say(f"no store at {target.shown()} yet: nothing to recall (a session's end creates it)")
            return
        found = recall(mem, prompt, user_id=target.user_id, agent_id=target.agent_id(cwd), budget=budget)
    if found.text:
        sys.stdout.write(json.dumps(prompt_context(found.text), ensure_ascii=False) + "\n")


def _codex(target: Callable[[], Target], notification: str | None, files: list[Path], sessions: Path | None
           ) -> None:
    from omnimem.integrations import codex

    try:
        where = target()
        told_cwd = None
        if notification is not None:
            told = codex.read_notification(notification)
            told_cwd = told.cwd
            if told.type != codex.TURN_COMPLETE:
                _say(f"nothing to capture for a Codex {told.type!r} notification")
                return
            if told.thread_id is None:
                _stop("the Codex notification has no thread-id")
            files = [*files, codex.find_rollout(told.thread_id, sessions)]
        elif not files:
            if sessions is None:
                _stop("omnimem hook codex needs the notification JSON (Codex's notify passes it), --file FILE "
                      "or --sessions DIR")
            files = codex.rollouts(sessions)
        for path in files:
            rollout = codex.read_rollout(path)
            done = where.capture(rollout.turns, where.agent_id(told_cwd or rollout.cwd), rollout.session_id)
            _captured(done, str(path), where)
    except typer.Exit:
        raise
    except Exception as exc:  # noqa: BLE001 - one line, exit 1
        _stop(f"the Codex session was not captured: {_words(exc)}")


def _captured(done: Captured, source: str, target: Target) -> None:
    skipped = f", {done.skipped} skipped ({', '.join(f'{n} {why}' for why, n in sorted(done.reasons.items()))})" \
        if done.skipped else ""
    sys.stdout.write(f"omnimem: {done.stored} of {done.turns} turns stored ({done.held} held already{skipped}) "
                     f"from {source} -> {target.shown()}\n")


def _words(exc: BaseException) -> str:
    if isinstance(exc, OmnimemError):
        return cli_words(str(exc))
    if isinstance(exc, typer.Exit):
        return "the store could not be opened"
    return f"{type(exc).__name__}: {exc}"


def _say(message: str) -> None:
    typer.echo(f"omnimem: {' '.join(message.split())}", err=True)


def _stop(message: str) -> NoReturn:
    """One line on stderr and exit 1 (never 2: an agent reads 2 as "block")."""
    typer.echo(f"error: {' '.join(message.split())}", err=True)
    raise typer.Exit(1)


def _login() -> str:
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (a container)
        return "local"
