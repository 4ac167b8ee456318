"""``omnimem`` command line: a thin shell over :class:`omnimem.Memory`.

Errors from omnimem become one line on stderr and a non-zero exit.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from omnimem.cli.common import HELP_NAMES, OneLineErrors, cli_words as _cli_words, counted as _counted, \
    errors as _errors, fail as _fail, print_json as _print_json, readable as _readable, scope_words as _scope_words
from omnimem.cli.opening import AgentOpt, EmbedderOpt, JsonOpt, SessionOpt, StoreOpt, UrlOpt, UserOpt, \
    _bar, _memory, _reader, _where, _writer_embedder, err, out
from omnimem.cli.hits import hit_scores, print_context as _print_context
from omnimem.cli.records import _print_events

if TYPE_CHECKING:
    from omnimem.memory import LocalMemory

app = typer.Typer(help="Lifelong multimodal memory for AI agents.", no_args_is_help=True, add_completion=False,
                  cls=OneLineErrors, context_settings={"help_option_names": HELP_NAMES})
FORMATS = ("locomo", "jsonl")  # what `omnimem ingest FORMAT FILE` reads


def _print_version(value: bool) -> None:
    if value:
        from omnimem.config import VERSION

        typer.echo(f"omnimem {VERSION}")
        raise typer.Exit()


@app.callback()
def _options(
    ctx: typer.Context,
    url: Annotated[str | None, typer.Option(
        "--url", help="A PostgreSQL database instead of a store folder: postgresql://user:pw@host:5432/db "
        "(default: $OMNIMEM_URL, config 'url'); used by every command when --store is not given.")] = None,
    version: Annotated[bool, typer.Option("--version", is_eager=True, callback=_print_version,
                                          help="Print omnimem's version and exit.")] = False,
) -> None:
    """Lifelong multimodal memory for AI agents."""
    if url:  # one place every command reads it from, like the environment variable it stands for
        import os

        previous = os.environ.get("OMNIMEM_URL")
        os.environ["OMNIMEM_URL"] = url

        def restore() -> None:  # for this invocation only (CLIs run in-process by tests and tools)
            if previous is None:
                os.environ.pop("OMNIMEM_URL", None)
            else:
                os.environ["OMNIMEM_URL"] = previous

        ctx.call_on_close(restore)


@app.command()
def ingest(
    fmt: Annotated[str, typer.Argument(metavar="FORMAT", help="locomo | jsonl")],
    file: Annotated[Path | None, typer.Argument(help="File to ingest.", show_default=False)] = None,
    store: StoreOpt = None,
    conversation: Annotated[str | None, typer.Option(help="LoCoMo: only this sample_id, e.g. conv-26.")] = None,
    user_id: UserOpt = None,
    agent_id: AgentOpt = None,
    embedder: EmbedderOpt = None,
    restate: Annotated[bool, typer.Option(help="Rewrite turns into self-contained units with the configured LLM.")] = False,
    graph: Annotated[bool | None, typer.Option("--graph/--no-graph", help="Build the knowledge graph while ingesting.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Ingest a conversation file (LoCoMo JSON or JSONL turns), with a progress bar."""
    from omnimem.contract.loaders import load_jsonl, load_locomo

    if file is None:  # `omnimem ingest turns.jsonl`: the format, not the file, is what is missing
        _fail(f"the format is missing: omnimem ingest FORMAT FILE, FORMAT one of {', '.join(FORMATS)} (e.g. "
              f"omnimem ingest {'locomo' if fmt.endswith('.json') else 'jsonl'} {fmt})" if fmt not in FORMATS
              else f"missing the file to ingest: omnimem ingest {fmt} FILE")
    with _errors():
        if fmt == "locomo":
            dialogues = load_locomo(file, conversation=conversation)
        elif fmt == "jsonl":
            if conversation:
                _fail("--conversation only applies to locomo files")
            dialogues = load_jsonl(file)
        else:
            _fail(f"unknown format {fmt!r}; use {' or '.join(FORMATS)}")
        total = sum(len(d.turns) for d in dialogues)
        if not total:  # before the store is opened: an empty file creates none
            from omnimem.errors import MalformedDataError

            raise MalformedDataError(f"{file} holds no turns, so nothing was stored (a JSONL file has one JSON "
                                     "object with a \"text\" per line)" if fmt == "jsonl" else
                                     f"{file} holds no conversation turns, so nothing was stored")
        stored = skipped = 0
        small = _writer_embedder(store, texts=total, chosen=embedder)  # a few turns: no torch import
        with _memory(store, small or embedder, graph=graph) as mem, _interrupted_ingest(mem, total, store):
            if restate and mem.llm is None:
                err.print("note: no LLM is configured; --restate stores each turn as 'On <date>, <speaker> said: ...'",
                          markup=False, highlight=False)
            with _bar(as_json) as bar:
                task = bar.add_task(f"loading the embedding model ({mem.embedder.name})", total=total)
                bar.refresh()
                mem.embedder.embed([file.name])  # a model loads on its first text: its own phase, not a bar at 0
                bar.update(task, description=f"ingesting {file.name}")
                for d in dialogues:
                    results = mem.add_dialogue(
                        d.turns,
                        user_id=user_id or d.user_id,
                        agent_id=agent_id or d.agent_id,
                        session_id=d.session_id,
                        restate=restate,
                        progress=lambda n: bar.advance(task, n),
                    )
                    stored += sum(r.accepted for r in results)
                    skipped += sum(not r.accepted for r in results)
            summary = {"turns": total, "stored": stored, "skipped": skipped, "store": _where(mem),
                       "units": mem.stats()["units"]}
        if as_json:
            _print_json(summary)
        else:
            out.print(f"{_counted(total, 'turn')}: {stored} stored, {skipped} skipped (duplicate or redundant) -> "
                      f"{summary['store']}")


@contextmanager
def _interrupted_ingest(mem: LocalMemory, turns: int, store: Path | None) -> Iterator[None]:
    """Ctrl-C during an ingest: say what was stored and that the same command resumes, then exit 130."""
    before = mem.count_units()
    try:
        yield
    except KeyboardInterrupt:
        stored = mem.count_units() - before
        err.print(f"interrupted: {stored} of {turns} turns stored in {_where(mem)}; run the same command again to "
                  "resume (turns already stored are skipped)", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(130) from None


@app.command()
def add(
    text: Annotated[str, typer.Argument(help="What to remember.")],
    store: StoreOpt = None,
    speaker: Annotated[str | None, typer.Option(help="Who said it.")] = None,
    time: Annotated[str | None, typer.Option(help="When it happened (ISO 8601).")] = None,
    source_id: Annotated[str | None, typer.Option(help="Id of the source record.")] = None,
    user_id: UserOpt = None,
    agent_id: AgentOpt = None,
    session_id: SessionOpt = None,
    as_json: JsonOpt = False,
    source: Annotated[str | None, typer.Option(help="What it is: user (default), assistant, tool, document, "
                                                    "import, derived.")] = None,
    trust: Annotated[str | None, typer.Option(help="trusted or untrusted (default: from --source).")] = None,
) -> None:
    """Remember one piece of text."""
    with _errors(), _memory(store, _writer_embedder(store)) as mem:
        result = mem.add(
            text, speaker=speaker, time=time, source_id=source_id,
            user_id=user_id, agent_id=agent_id, session_id=session_id, source=source, trust=trust,
        )
    if as_json:
        _print_json(result.to_dict())
    elif result.accepted:
        out.print(result.id)
    else:
        out.print(f"skipped: {result.reason}" + (f" (see {result.duplicate_of})" if result.duplicate_of else ""))


def _print_media(result: Any, as_json: bool) -> None:
    if as_json:
        _print_json(result.to_dict())
        return
    stored = [r for r in result.results if r.accepted]
    out.print(f"{len(stored)} unit(s) stored, {len(result.results) - len(stored)} skipped")
    for key, value in result.stats.items():
        out.print(f"  {key}: {value}", highlight=False)
    for r in result.results:
        out.print(f"  {r.id or '-'}  {r.reason}", highlight=False)


@app.command("add-image")
def add_image(
    file: Annotated[Path, typer.Argument(help="PNG, JPEG, WebP, ... image.")],
    caption: Annotated[str | None, typer.Option(help="What the image shows (searched instead of file facts).")] = None,
    store: StoreOpt = None,
    time: Annotated[str | None, typer.Option(help="When it was taken (default: EXIF date).")] = None,
    user_id: UserOpt = None,
    agent_id: AgentOpt = None,
    session_id: SessionOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Remember an image (raw bytes in the cold tier; near-duplicates skipped)."""
    with _errors(), _memory(store) as mem:
        result = mem.add_image(file, caption, time=time, user_id=user_id, agent_id=agent_id, session_id=session_id)
    if as_json:
        _print_json(result.to_dict())
    else:
        out.print(result.id if result.accepted else f"skipped: {result.reason}")


@app.command("add-audio")
def add_audio(
    file: Annotated[Path, typer.Argument(help="WAV, FLAC, MP3, M4A, ... recording.")],
    store: StoreOpt = None,
    time: Annotated[str | None, typer.Option(help="When the recording started.")] = None,
    user_id: UserOpt = None,
    agent_id: AgentOpt = None,
    session_id: SessionOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Remember the speech in a recording (silence dropped, segments transcribed offline)."""
    from rich.progress import Progress, SpinnerColumn, TextColumn

    with _errors(), _memory(store) as mem:
        with Progress(SpinnerColumn(), TextColumn("{task.description}"), console=err, disable=as_json,
                      transient=True) as bar:
            task = bar.add_task(f"transcribing {file.name}: 0 segments", total=None)
            done = [0]

            def advance(n: int) -> None:
                done[0] += n
                bar.update(task, description=f"transcribing {file.name}: {done[0]} segments")

            result = mem.add_audio(file, time=time, user_id=user_id, agent_id=agent_id, session_id=session_id,
                                   progress=advance)
    _print_media(result, as_json)


@app.command("add-video")
def add_video(
    file: Annotated[Path, typer.Argument(help="MP4, MKV, WebM, ... video.")],
    store: StoreOpt = None,
    time: Annotated[str | None, typer.Option(help="When the video started.")] = None,
    fps: Annotated[float, typer.Option(help="Frames sampled per second.")] = 1.0,
    max_frames: Annotated[int, typer.Option(help="Most frames to sample.")] = 200,
    user_id: UserOpt = None,
    agent_id: AgentOpt = None,
    session_id: SessionOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Remember a video: scene-change frames, its speech, and one event unit linking them."""
    with _errors(), _memory(store) as mem:
        with err.status(f"processing {file.name}"):
            result = mem.add_video(file, time=time, fps=fps, max_frames=max_frames,
                                   user_id=user_id, agent_id=agent_id, session_id=session_id)
    _print_media(result, as_json)


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to recall.")],
    store: StoreOpt = None,
    top_k: Annotated[int | None, typer.Option("--top-k", min=1, help="At most this many memories: the best of the "
                                              "fused ranking, those that fit the budget (default: as many as the "
                                              "budget holds).")] = None,
    theta: Annotated[float | None, typer.Option(help="Similarity for full text (level 2, default 0.4).")] = None,
    budget: Annotated[int | None, typer.Option(help="Token budget of the context (default 6000).")] = None,
    user_id: UserOpt = None,
    agent_id: AgentOpt = None,
    session_id: SessionOpt = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="Rows of the table: the N best hits.")] = 10,
    context: Annotated[bool, typer.Option("--context", help="Print the packed context (what an LLM reads).")] = False,
    now: Annotated[str | None, typer.Option("--now", help="The time relative times in the query (\"last week\", "
                                            "\"in March\") are read against, ISO 8601 (default: the clock).")] = None,
    planner: Annotated[str | None, typer.Option("--planner", help="Plan the search: none, offline (rewritten "
                                                "queries and a second hop) or llm (the configured model); the "
                                                "plan is in --json (default: the planner setting).")] = None,
    url: UrlOpt = None,
    as_json: JsonOpt = False,
    min_trust: Annotated[str | None, typer.Option("--min-trust", help="Only memories at least this trusted "
                                                                     "(trusted: no tool output, documents or "
                                                                     "imports).")] = None,
) -> None:
    """The best memories for a query, with time, speaker and score (--json: the whole context)."""
    with _errors(), _reader(store, url) as mem:
        ctx = mem.search(
            query, top_k=top_k, theta=theta, budget=budget,
            user_id=user_id, agent_id=agent_id, session_id=session_id, now=now, planner=planner, min_trust=min_trust,
        )
        held = mem.count_units(user_id=user_id, agent_id=agent_id, session_id=session_id) if not ctx.hits else None
    if held is not None and not as_json and not context:
        scope = _scope_words(user_id, agent_id, session_id)
        out.print(f"no memories {scope} (`omnimem stats` counts users and sessions)" if held == 0
                  else f"no memory {scope} matched", markup=False, highlight=False, soft_wrap=True)
        return
    _print_context(ctx, as_json=as_json, context=context, limit=limit)


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="The question.")],
    store: StoreOpt = None,
    budget: Annotated[int | None, typer.Option(help="Token budget of the context (default 6000).")] = None,
    user_id: UserOpt = None,
    agent_id: AgentOpt = None,
    session_id: SessionOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Answer from memory with the configured LLM (OMNIMEM_LLM_*); offline, show the evidence."""
    with _errors(), _reader(store) as mem:
        answer = mem.ask(question, budget=budget, user_id=user_id, agent_id=agent_id, session_id=session_id)
    if as_json:
        _print_json(answer.to_dict())
        return
    if answer.answer is None:
        err.print(f"note: {_cli_words(answer.note or '')}", markup=False, highlight=False, soft_wrap=True)
    else:
        out.print(answer.answer, markup=False, highlight=False)
    from omnimem.context import primary_score, ranked_by
    from omnimem.timeparse import format_time

    by = ranked_by(answer.evidence, answer.context.plan)  # what ranked the evidence first, the similarity second
    for hit in answer.evidence[:5]:
        u = hit.unit
        said = f"{u.speaker}: {u.summary}" if u.speaker else u.summary
        out.print(f"  {primary_score(hit, by)}  cos {hit.score:.3f}  [{format_time(u.event_time)}] {said}",
                  markup=False, highlight=False)


@app.command()
def get(unit_id: str, store: StoreOpt = None, as_json: JsonOpt = False) -> None:
    """Show one unit."""
    with _errors(), _memory(store, existing=True) as mem:
        unit = mem.get(unit_id)
    data = unit.to_dict()
    if as_json:
        _print_json(data)
    else:
        for key, value in data.items():
            out.print(f"[bold]{key}[/bold]: {value}", highlight=False)


@app.command()
def delete(
    unit_id: str,
    chain: Annotated[bool, typer.Option("--chain", help="Also delete every other version (what it replaced and what replaced it).")] = False,
    store: StoreOpt = None,
) -> None:
    """Delete one unit from every tier and index; a unit it replaced becomes current again (unless --chain)."""
    with _errors(), _memory(store, existing=True) as mem:
        mem.delete(unit_id, chain=chain)
    out.print(f"deleted {unit_id}")


@app.command("trust")
def set_trust(
    unit_id: str,
    level: Annotated[str, typer.Argument(help="trusted or untrusted.")],
    reason: Annotated[str | None, typer.Option(help="Why (recorded in the audit log).")] = None,
    store: StoreOpt = None,
) -> None:
    """Change a unit's trust (an admin's verb, recorded in the audit log); untrusted text is fenced in contexts."""
    with _errors(), _memory(store, existing=True) as mem:
        unit = mem.set_trust(unit_id, level, reason=reason)
    out.print(f"{unit.id} is {unit.trust}")


@app.command()
def forget(
    user_id: UserOpt = None,
    agent_id: AgentOpt = None,
    session_id: SessionOpt = None,
    since: Annotated[str | None, typer.Option(help="Only units whose event time is at or after this.")] = None,
    until: Annotated[str | None, typer.Option(help="Only units whose event time is before this.")] = None,
    unit: Annotated[list[str] | None, typer.Option("--unit", help="Only these unit ids (repeatable).")] = None,
    all_units: Annotated[bool, typer.Option("--all", help="Wipe the whole store (takes no other criteria).")] = False,
    all_users: Annotated[bool, typer.Option("--all-users", help="A --session-id/--since/--until forget for every user (else name --user-id or --agent-id).")] = False,
    reason: Annotated[str | None, typer.Option(help="Why (recorded in the audit log).")] = None,
    preview: Annotated[bool, typer.Option("--preview", help="List what would be forgotten; change nothing.")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask before --all (for scripts).")] = False,
    store: StoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Delete units with zero residue (by scope, time range or id); the audit log keeps ids, never content.
    --preview lists what would go; --all asks first on a terminal (--yes: don't ask)."""
    criteria: dict[str, Any] = {"user_id": user_id, "agent_id": agent_id, "session_id": session_id, "since": since,
                                "until": until, "unit_ids": unit, "all": all_units, "all_users": all_users,
                                "reason": reason}
    with _errors(), _memory(store, existing=True) as mem:
        if preview:
            _print_preview(mem.preview_forget(**criteria), as_json)
            return
        if all_units and not yes:
            _confirm_wipe(mem)
        count = mem.forget(**criteria)
    if as_json:
        _print_json({"forgotten": count})
    else:
        out.print(f"forgot {count} unit(s)")


def _print_preview(units: list[Any], as_json: bool) -> None:
    """What ``forget --preview`` prints: the units that would go (nothing is changed)."""
    if as_json:
        _print_json({"units": [u.to_dict() for u in units], "count": len(units)})
        return
    from omnimem.timeparse import format_time

    for u in units:
        out.print(f"  {u.id}  [{format_time(u.event_time)}] {u.user_id or '-'}: {u.summary}", markup=False,
                  highlight=False, soft_wrap=True)
    out.print(f"would forget {len(units)} unit(s); nothing was changed (run it without --preview to forget them)",
              markup=False, highlight=False, soft_wrap=True)


def _confirm_wipe(mem: LocalMemory) -> None:
    """``forget --all`` on a terminal asks first; with no terminal to ask on, it needs --yes."""
    held = mem.count_units()
    if not sys.stdin.isatty():
        _fail(f"forget --all wipes all {held} unit(s) of {_where(mem)}; pass --yes to confirm (no terminal to ask "
              "on), or --preview to list them", 2)
    if not typer.confirm(f"forget all {held} unit(s) of {_where(mem)}? This cannot be undone", default=False,
                         err=True):
        typer.echo("nothing was forgotten", err=True)  # the user's answer, not an error
        raise typer.Exit(1)


@app.command()
def update(
    unit_id: str,
    text: Annotated[str | None, typer.Option(help="The corrected text.")] = None,
    time: Annotated[str | None, typer.Option(help="The corrected event time.")] = None,
    speaker: Annotated[str | None, typer.Option(help="The corrected speaker.")] = None,
    reason: Annotated[str | None, typer.Option(help="Why (recorded in the audit log).")] = None,
    store: StoreOpt = None,
) -> None:
    """Replace a unit with a corrected version; the old one is kept for history."""
    with _errors(), _memory(store, _writer_embedder(store), existing=True) as mem:
        result = mem.update(unit_id, text=text, time=time, speaker=speaker, reason=reason)
    out.print(result.id if result.accepted else f"skipped: {result.reason}")


@app.command()
def history(unit_id: str, store: StoreOpt = None, as_json: JsonOpt = False) -> None:
    """Every audit-log event about one unit."""
    with _errors(), _memory(store, existing=True) as mem:
        events = mem.history(unit_id)
    _print_events(events, as_json)


@app.command()
def reembed(
    embedder: Annotated[str, typer.Option("--embedder", help="The new embedding model (a registered name).")],
    store: StoreOpt = None,
) -> None:
    """Rebuild every vector with another embedding model and record it in the store."""
    with _errors(), _memory(store, existing=True) as mem:
        before = mem.embedder.name
        count = mem.reembed(embedder)
    out.print(f"re-embedded {count} unit(s): {before} -> {embedder}")


@app.command()
def stats(store: StoreOpt = None, as_json: JsonOpt = False) -> None:
    """Counts, embedder and index sizes of a store (a running server's writer counters: GET /v1/stats)."""
    with _errors(), _memory(store, existing=True) as mem:
        data = mem.stats()
        where = _where(mem)
    data.pop("writer", None)  # the writer's counters are its process's: this command wrote nothing (a server's
    #                           own are in GET /v1/stats)
    if data.get("path") is None:  # a database: its URL, without the password
        data["path"] = where
    if as_json:
        _print_json(data)
        return
    for key, value in data.items():
        out.print(f"[bold]{key}[/bold]: ", _readable(value), sep="", highlight=False)


@app.command()
def demo(
    store: Annotated[Path | None, typer.Option("--store", "-s", help="Store folder to keep (default: a temporary "
                                               "one, deleted when the demo ends).")] = None,
    question: Annotated[str, typer.Option(help="What to ask the sample conversation.")] = "What did Alex paint?",
    file: Annotated[Path | None, typer.Option(help="Conversation JSONL (default: the sample conversation that "
                                              "ships with omnimem).")] = None,
) -> None:
    """Ingest the bundled sample conversation and show what it recalls (--store DIR keeps the store)."""
    import tempfile

    from omnimem.context import primary_score, ranked_by
    from omnimem.contract.loaders import load_jsonl
    from omnimem.memory import LocalMemory
    from omnimem.timeparse import format_time

    if file is not None and not file.exists():
        _fail(f"no conversation file at {file}")
    with _errors(), _sample(file) as sample, tempfile.TemporaryDirectory() as tmp, \
            LocalMemory(store or Path(tmp) / "mem") as mem:
        turns = stored = 0
        for d in load_jsonl(sample):
            turns += len(d.turns)
            stored += sum(r.accepted for r in mem.add_dialogue(d.turns, user_id=d.user_id, session_id=d.session_id))
        where = str(mem.path) if store else "a temporary store, deleted when the demo ends (--store DIR keeps one)"
        held = f" ({turns - stored} already held)" if turns > stored else ""
        out.print(f"stored {stored} of {_counted(turns, 'turn')}{held} from "
                  f"{file.name if file else 'the sample conversation'} with {mem.embedder.name} in {where}",
                  markup=False, highlight=False)
        ctx = mem.search(question, budget=400)
        by = ranked_by(ctx.hits, ctx.plan)  # what ranked the hits first, as every surface shows it
        out.print(f"[bold]{question}[/bold]  ({'fused score' if by == 'fused' else 'rank'}, dense rank, BM25 rank, "
                  "cosine)")
        for hit in sorted(ctx.hits, key=lambda h: h.rank)[:5]:
            u = hit.unit
            _, dense, sparse, cosine = hit_scores(hit)
            out.print(f"  {primary_score(hit, by)}  d#{dense:<2} b#{sparse:<2} {cosine}  [{format_time(u.event_time)}] "
                      f"{u.speaker}: "
                      f"{u.summary}", markup=False, highlight=False)
    kept = str(store) if store else "./mem"
    steps = [] if store else [f"omnimem demo --store {kept}   (keeps the store to explore)"]
    steps += [f"omnimem list --store {kept}   (what it holds, newest first)",
              f'omnimem search "where does Sam work?" --store {kept}',
              f"omnimem ingest jsonl FILE --store {kept}   (your own conversation, one JSON turn per line)"]
    out.print("\nnext:\n" + "\n".join(f"  {step}" for step in steps), markup=False, highlight=False)


@contextmanager
def _sample(file: Path | None) -> Iterator[Path]:
    """``--file``, else the sample conversation shipped inside the package (read through importlib.resources)."""
    if file is not None:
        yield file
        return
    from importlib.resources import as_file, files

    with as_file(files("omnimem.cli").joinpath("sample_conversation.jsonl")) as path:
        yield path


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True}, add_help_option=False)
def bench(ctx: typer.Context) -> None:
    """Benchmarks (source checkout only): the same commands as `python -m benchmarks ...`."""
    module = _benchmark_package()
    if module is None:
        _fail("the benchmarks are not part of the omnimem package; run them from a source checkout of the "
              "repository, in its root folder, as `python -m benchmarks ...`", 2)
    module.build_app()(list(ctx.args), prog_name="omnimem bench")


def _benchmark_package() -> Any:
    """``benchmarks.cli``: the benchmarks of the source checkout this omnimem runs from (or any importable
    omnimem ``benchmarks`` package); None when omnimem is installed without them."""
    import importlib

    root = Path(__file__).resolve().parents[2]
    if (root / "benchmarks" / "__init__.py").is_file() and str(root) not in sys.path:
        sys.path.insert(0, str(root))  # a checkout (an editable install): its benchmarks sit beside omnimem/
    try:
        package = importlib.import_module("benchmarks")
    except ImportError:
        return None
    return importlib.import_module("benchmarks.cli") if getattr(package, "OMNIMEM_BENCHMARKS", False) else None


from omnimem.cli import graph as _graph, listing as _listing, records as _records  # noqa: E402

_records.register(app)  # log, export, import
_listing.register(app)  # list
_graph.register(app)  # graph show, graph export

from omnimem.cli.server import register as _register_server  # noqa: E402

_register_server(app)  # serve, keys

from omnimem.cli.mcp import mcp_command  # noqa: E402  (omnimem mcp: the MCP server on stdio)

app.command("mcp")(mcp_command)

from omnimem.cli.hook import hook_command  # noqa: E402  (omnimem hook claude-code | codex)

app.command("hook")(hook_command)

from omnimem.cli import postgres as cli_postgres  # noqa: E402 - `omnimem migrate`

cli_postgres.register(app)

from omnimem.cli.queue import register as _register_queue  # noqa: E402

_register_queue(app)  # `omnimem worker`, `omnimem queue`


def main() -> None:
    from omnimem.cli.commands import app as registered  # under `python -m omnimem.cli.commands` this module is __main__

    registered()


if __name__ == "__main__":
    main()
