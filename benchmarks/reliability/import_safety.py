"""Import safety: no import half-stored by a NUL, no forgotten unit back after an import, on both backends.

With the fake embedder, on the embedded store (a folder, SQLite) and on a private pgserver PostgreSQL (the
``postgres`` extra):

- **Half-stored imports.** A two-user file whose first user's five records are fine and whose last record
  (the second user's) holds a NUL character in one field: text, speaker, user_id, agent_id or session_id of an
  omnimem dump, or memory, user_id, agent_id or run_id of a mem0 export. Counted: files refused with a
  ``MalformedDataError``, other outcomes (an error of another class, or the file accepted), and files that
  stored any unit though one record was bad (half-stored imports; target 0).
- **Forgotten units back.** Carol's unit is added and her mem0 memory imported; both are exported; carol is
  forgotten as a whole; then the backup, the backup with every ``record_time`` in 2099, the mem0 memory, the
  same with ``updated_at`` in 2099, and a new unit recorded in 2099 are imported. Counted: carol's units
  stored by those imports and her search hits afterwards (target 0), then the units ``allow_forgotten=True``
  restores (the escape hatch still works).

    python -m benchmarks import-safety                  # both backends
    python -m benchmarks import-safety --backends sqlite

Writes ``results/import-safety.json`` (with its command).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from benchmarks.harness.backends import database_server
from benchmarks.harness.paths import RESULTS
from omnimem import Memory, MalformedDataError, __version__

NUL = "\x00"
HEADER = {"kind": "header", "format": "omnimem-export", "version": 1}
LATER = "2099-01-01T00:00:00+00:00"
DUMP_FIELDS = ("text", "speaker", "user_id", "agent_id", "session_id")
MEM0_FIELDS = ("memory", "user_id", "agent_id", "run_id")


@contextmanager
def opened(backend: str) -> Iterator[Memory]:
    """A fresh store of ``backend`` on the fake embedder."""
    if backend == "sqlite":
        with tempfile.TemporaryDirectory(prefix="omnimem-import-safety-") as folder:
            with Memory(Path(folder) / "store", embedder="fake") as mem:
                yield mem
        return
    with database_server("pgserver") as databases:
        assert databases is not None
        with Memory(url=databases.fresh(), embedder="fake") as mem:
            yield mem


def _mem0(n: int, user: str) -> dict[str, Any]:
    return {"id": f"{n:08x}-0000-4000-8000-000000000000", "memory": f"{user}'s memory number {n}",
            "user_id": user, "created_at": "2025-01-02T03:04:05+00:00"}


def _unit(n: int, user: str) -> dict[str, Any]:
    return {"kind": "unit", "id": f"{n:032x}", "text": f"{user}'s note number {n}", "user_id": user,
            "speaker": user}


def half_stored(mem: Memory) -> dict[str, Any]:
    """The NUL files: refused, other outcomes, files that stored units all the same (half-stored)."""
    refused = other = half = 0
    n = 0
    for kind, fields in (("omnimem", DUMP_FIELDS), ("mem0", MEM0_FIELDS)):
        for field in fields:
            n += 10
            make = _unit if kind == "omnimem" else _mem0
            bad = make(n + 6, "bob")
            bad[field] = f"{bad.get(field) or 'x'}{NUL}"
            good = [make(n + k, "ann") for k in range(5)]
            before = mem.stats()["units"]
            try:
                if kind == "omnimem":
                    mem.import_records([HEADER, *good, bad])
                else:
                    mem.import_mem0([*good, bad])
                other += 1
            except MalformedDataError:
                refused += 1
            except Exception:  # noqa: BLE001 - counted: anything but the typed refusal
                other += 1
            half += mem.stats()["units"] > before
    return {"files": refused + other, "refused": refused, "other_outcomes": other, "half_stored": half}


def forgotten_back(mem: Memory) -> dict[str, Any]:
    """Carol forgotten, then five imports that try to bring her back."""
    mem.add("Carol's door code is 4711", user_id="carol")
    memory = {"id": "7e6d5c4b-3a29-4180-9f8e-7d6c5b4a3928", "memory": "Carol works night shifts at the hospital",
              "user_id": "carol", "created_at": "2025-02-01T08:00:00+00:00",
              "updated_at": "2025-02-03T08:00:00+00:00"}
    mem.import_mem0([memory])
    backup = [r for r in mem.export(user_id="carol") if r["kind"] in ("header", "unit")]
    mem.forget(user_id="carol")
    later = [r if r["kind"] == "header" else {**r, "record_time": LATER} for r in backup]
    fresh = {"kind": "unit", "id": "c0ffee01", "text": "Carol's new door code is 1234", "user_id": "carol",
             "record_time": LATER}
    tries: dict[str, Callable[[], dict[str, int]]] = {
        "backup": lambda: mem.import_records(backup), "backup, record_time 2099": lambda: mem.import_records(later),
        "mem0 memory": lambda: mem.import_mem0([memory]),
        "mem0 memory, updated_at 2099": lambda: mem.import_mem0([{**memory, "updated_at": LATER}]),
        "new unit, record_time 2099": lambda: mem.import_records([HEADER, fresh])}
    stored = {name: run()["stored"] for name, run in tries.items()}
    hits = len(mem.search("Carol door code night shifts hospital", user_id="carol").hits)
    left = mem.count_units(user_id="carol")
    restored = mem.import_records(backup, allow_forgotten=True)["stored"]
    return {"imports": len(tries), "stored_by_import": stored, "units_back": sum(stored.values()),
            "units_after": left, "search_hits_after": hits, "restored_with_allow_forgotten": restored}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks import-safety", description=__doc__.split("\n")[0])
    parser.add_argument("--backends", default="sqlite,postgresql", help="comma-separated: sqlite, postgresql")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    results: dict[str, Any] = {}
    for backend in backends:
        with opened(backend) as mem:
            results[backend] = {"half_stored": half_stored(mem)}
        with opened(backend) as mem:
            results[backend]["forgotten"] = forgotten_back(mem)
    data = {"command": " ".join(["python -m benchmarks import-safety", *(argv if argv is not None else sys.argv[1:])]),
            "when": datetime.now(timezone.utc).isoformat(timespec="seconds"), "omnimem": __version__,
            "python": platform.python_version(), "results": results,
            "totals": {"half_stored_imports": sum(r["half_stored"]["half_stored"] for r in results.values()),
                       "forgotten_units_back": sum(r["forgotten"]["units_back"] for r in results.values())}}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "import-safety.json").write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n",
                                                 encoding="utf-8")
    print(json.dumps(data["totals"]))


if __name__ == "__main__":
    main()
