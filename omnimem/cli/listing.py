"""``omnimem list``: what the memory holds, newest first, without a query (the console's timeline).

:mod:`.commands` calls :func:`register` with its app. ``Memory.units`` pages oldest first, so the newest
page of a listing is the last page of that order: the command counts the matches, reads that page and
prints it reversed.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from omnimem.cli.common import errors, print_json, scope_words
from omnimem.cli.opening import AgentOpt, JsonOpt, SessionOpt, StoreOpt, UrlOpt, UserOpt, _memory, out


def register(app: typer.Typer) -> None:
    app.command("list")(list_units)


def list_units(
    user_id: UserOpt = None,
    agent_id: AgentOpt = None,
    session_id: SessionOpt = None,
    speaker: Annotated[str | None, typer.Option(help="Only what this speaker said.")] = None,
    modality: Annotated[str | None, typer.Option(help="Only text, image, audio or video memories.")] = None,
    since: Annotated[str | None, typer.Option(help="Only memories from this event time on (inclusive, ISO "
                                              "8601).")] = None,
    until: Annotated[str | None, typer.Option(help="Only memories before this event time (exclusive).")] = None,
    superseded: Annotated[bool, typer.Option("--superseded", help="Also list memories replaced by a "
                                             "correction.")] = False,
    limit: Annotated[int, typer.Option("--limit", min=1, max=1000, help="At most this many memories.")] = 20,
    offset: Annotated[int, typer.Option("--offset", min=0, help="Skip this many of the newest (older "
                                        "pages).")] = 0,
    store: StoreOpt = None,
    url: UrlOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """What the memory holds, newest first by event time, with scope and time filters (no query)."""
    filters: dict[str, Any] = {"modality": modality, "speaker": speaker, "since": since, "until": until,
                               "include_superseded": superseded, "user_id": user_id, "agent_id": agent_id,
                               "session_id": session_id}
    with errors(), _memory(store, existing=True, url=url) as mem:
        total = mem.count_units(**filters)
        newest = max(0, total - offset)  # one past the newest unit to show, in the oldest-first order
        first = max(0, newest - limit)
        shown = list(reversed(mem.units(**filters, limit=newest - first, offset=first))) if newest else []
    if as_json:
        print_json({"units": [u.to_dict() for u in shown], "total": total, "offset": offset})
        return
    narrowed = any(value is not None for value in (speaker, modality, since, until))
    _print_units(shown, total, offset, scope_words(user_id, agent_id, session_id) + (" matching the filters"
                                                                                     if narrowed else ""))


def _print_units(shown: list[Any], total: int, offset: int, scope: str) -> None:
    """A heading (how many, which of them), then one line per unit: id, time, speaker, text."""
    from omnimem.timeparse import format_time

    if not shown:
        out.print(f"no memories {scope} (`omnimem stats` counts users and sessions)" if not total else
                  f"{_memories(total)} {scope}, none past --offset {offset}",
                  markup=False, highlight=False, soft_wrap=True)
        return
    older = total - offset - len(shown)
    more = f"; --offset {offset + len(shown)} for the {older} older" if older else ""
    out.print(f"{_memories(total)} {scope}, newest first: {offset + 1} to {offset + len(shown)}{more}",
              markup=False, highlight=False, soft_wrap=True)
    for unit in shown:
        said = f"{unit.speaker}: {unit.summary}" if unit.speaker else unit.summary
        kind = "" if unit.modality.value == "text" else f"({unit.modality.value}) "
        out.print(f"  {unit.id}  [{format_time(unit.event_time)}] {kind}{said}", markup=False, highlight=False,
                  soft_wrap=True)


def _memories(n: int) -> str:
    return "1 memory" if n == 1 else f"{n} memories"
