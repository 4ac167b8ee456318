"""Which units of an add are new content, checked inside the add's transaction under its scope locks.

Content hashes include the exact scope (user, agent, session), and an add holds the
advisory lock of each of its units' scopes (:mod:`omnimem.store.postgres.locks`), so
the check here and the insert after it are atomic against every other writer: of
several processes adding the same content at once, one stores it and the others
skip it, as the embedded store does with its single writer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from omnimem.mau import MAU
from omnimem.store.jobs import NewJob
from omnimem.store.postgres.governance_sql import tenant_of


def new_content(conn: Any, units: Sequence[MAU],
                supersedes: Mapping[str, Sequence[str]]) -> tuple[list[MAU], dict[str, str]]:
    """(units to store, {skipped unit id: id of the unit holding its content}).

    A unit is never a duplicate of a unit it supersedes (an enriched version keeps its original's hash); a
    unit whose id is stored already with the same content (the same import run twice at once) is skipped as
    a duplicate of itself, while the same id with other content fails the insert, as on SQLite; the second
    unit of the batch with the same content is skipped as a duplicate of the first.
    """
    holders: dict[str, list[str]] = {}
    for chash, uid in conn.execute(
            "SELECT content_hash, id FROM units WHERE tenant = ANY(%s) AND content_hash = ANY(%s) ORDER BY rid",
            (sorted({tenant_of(u.scope) for u in units}), sorted({u.content_hash for u in units}))):
        holders.setdefault(chash, []).append(uid)
    kept: list[MAU] = []
    skipped: dict[str, str] = {}
    for unit in units:
        same = holders.get(unit.content_hash, [])
        found = [h for h in same if h not in supersedes.get(unit.id, ())]
        if found:  # the same id with the same content: a duplicate of itself; with other content: fails the insert
            skipped[unit.id] = unit.id if unit.id in found else found[0]
        else:
            kept.append(unit)
            holders.setdefault(unit.content_hash, []).append(unit.id)  # a second one in the batch is skipped
    return kept, skipped


def missing(conn: Any, ids: Sequence[str]) -> set[str]:
    """Those of ``ids`` no unit has (any more): a predecessor deleted before the add took its locks."""
    if not ids:
        return set()
    found = {r[0] for r in conn.execute("SELECT id FROM units WHERE id = ANY(%s)", (sorted(set(ids)),))}
    return set(ids) - found


def jobs_without(jobs: Sequence[NewJob], skipped: Mapping[str, str]) -> list[NewJob]:
    """The jobs of the units that are stored: a skipped unit leaves its job out, or its id out of a job's list."""
    kept: list[NewJob] = []
    for job in jobs:
        if job.payload.get("unit") in skipped:
            continue
        if isinstance(units := job.payload.get("units"), list):
            left = [u for u in units if u not in skipped]
            if not left:
                continue
            job = replace(job, payload={**job.payload, "units": left})
        kept.append(job)
    return kept
