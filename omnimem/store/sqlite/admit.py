"""Which units of an add are new content, checked inside the add's write transaction.

The writer of each process checks content hashes before it embeds (one look-up
for a batch), but another process can store the same content between that
check and the insert. So the insert checks again after ``BEGIN IMMEDIATE``,
which holds SQLite's one write lock until the commit: the check and the insert
are one step against every other process, and of several processes adding the
same content at once one stores it and the others skip it, as duplicates (what
:mod:`omnimem.store.postgres.admit` does under PostgreSQL's scope locks).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import NamedTuple

from omnimem.mau import MAU
from omnimem.store.audit import AuditEvent
from omnimem.store.jobs import NewJob
from omnimem.store.postgres.admit import jobs_without  # backend-neutral: which jobs are left without the skipped
from omnimem.store.sqlite.graph import delete_units_cascade
from omnimem.store.sqlite.unit_rows import chunks


def new_content(conn: sqlite3.Connection, units: Sequence[MAU],
                supersedes: Mapping[str, Sequence[str]]) -> tuple[list[MAU], dict[str, str]]:
    """(units to store, {skipped unit id: id of the unit holding its content}).

    A unit that supersedes others (an update, an enriched version, which keeps its original's hash) is never
    skipped; a unit whose id is stored already with the same content (the same import run twice at once) is
    skipped as a duplicate of itself, while the same id with other content is left to fail the insert; the
    second unit of the batch with the same content is skipped as a duplicate of the first. Content hashes
    include the exact scope.
    """
    holders: dict[str, list[str]] = {}
    for chunk in chunks(sorted({u.content_hash for u in units}), 500):
        for chash, uid in conn.execute(
                f"SELECT content_hash, id FROM units WHERE content_hash IN ({','.join('?' * len(chunk))}) "
                "ORDER BY rid", chunk):
            holders.setdefault(chash, []).append(uid)
    kept: list[MAU] = []
    skipped: dict[str, str] = {}
    for unit in units:
        same = holders.get(unit.content_hash, [])
        if same and not supersedes.get(unit.id):
            skipped[unit.id] = unit.id if unit.id in same else same[0]
        else:
            kept.append(unit)
            holders.setdefault(unit.content_hash, []).append(unit.id)
    return kept, skipped


class Admitted(NamedTuple):
    """An add with the units another process stored first taken out (its event, supersessions, jobs, content)."""

    kept: list[MAU]
    skipped: dict[str, str]  # skipped unit id -> the id of the unit holding its content
    raw: Mapping[str, bytes]
    event: AuditEvent | None
    supersedes: Mapping[str, Sequence[str]]
    jobs: Sequence[NewJob]


def admit(conn: sqlite3.Connection, units: Sequence[MAU], raw: Mapping[str, bytes], event: AuditEvent | None,
          supersedes: Mapping[str, Sequence[str]], jobs: Sequence[NewJob]) -> Admitted:
    """What of an add is still to be written, checked inside its transaction (see the module docstring)."""
    kept, skipped = new_content(conn, units, supersedes)
    if not skipped:
        return Admitted(kept, skipped, raw, event, supersedes, jobs)
    refs = {u.raw_ref for u in kept}
    if event is not None:
        event = replace(event, unit_ids=tuple(i for i in event.unit_ids if i not in skipped))
    return Admitted(kept, skipped, {ref: data for ref, data in raw.items() if ref in refs}, event,
                    {k: v for k, v in supersedes.items() if k not in skipped}, jobs_without(jobs, skipped))


def drop_derived(conn: sqlite3.Connection, skipped: list[str]) -> None:
    """Remove the graph and CLIP rows an add's derived writers wrote for its skipped units."""
    delete_units_cascade(conn, skipped)
    for chunk in chunks(skipped, 500):
        conn.execute(f"DELETE FROM clip_vectors WHERE unit_id IN ({','.join('?' * len(chunk))})", chunk)
