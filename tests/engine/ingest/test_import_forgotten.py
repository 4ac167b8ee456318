"""A forget cannot be undone by an import: after a whole user is forgotten, no import stores her units again,
whatever times it carries (mem0's ``updated_at``, an omnimem dump's ``record_time``), unless
``allow_forgotten``; on every engine, SQLite and PostgreSQL among them. A mem0 memory's record time is the
time of the import (docs/mem0.md), not its ``updated_at``."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from omnimem import Memory

HEADER = {"kind": "header", "format": "omnimem-export", "version": 1}
CAROL = {"id": "7e6d5c4b-3a29-4180-9f8e-7d6c5b4a3928", "memory": "Works night shifts at the hospital",
         "user_id": "carol", "created_at": "2025-02-01T08:00:00+00:00", "updated_at": "2025-02-03T08:00:00+00:00"}
LATER = "2099-01-01T00:00:00+00:00"


def found(mem: Memory) -> list[str]:
    return [h.unit.summary for h in mem.search("night shifts hospital", user_id="carol").hits]


def test_a_mem0_memory_with_a_later_updated_at_stays_forgotten(mem: Memory) -> None:
    before = datetime.now(timezone.utc)
    assert mem.import_mem0([CAROL])["stored"] == 1
    unit = mem.units(user_id="carol")[0]
    assert unit.record_time >= before  # recorded when imported, not at mem0's updated_at
    assert mem.forget(user_id="carol") == 1
    assert mem.import_mem0([CAROL])["forgotten"] == 1
    again = mem.import_mem0([{**CAROL, "updated_at": LATER}])
    assert again == {"units": 1, "stored": 0, "skipped": 1, "forgotten": 1, "events": 0}
    assert found(mem) == [] and mem.count_units(user_id="carol") == 0
    assert mem.import_mem0([{**CAROL, "updated_at": LATER}], allow_forgotten=True)["stored"] == 1
    assert found(mem) == ["Works night shifts at the hospital"]


def test_a_dump_with_a_later_record_time_stays_forgotten(mem: Memory) -> None:
    mem.add("Carol's door code is 4711", user_id="carol")
    backup = [r for r in mem.export(user_id="carol") if r["kind"] in ("header", "unit")]
    mem.forget(user_id="carol")
    forged: list[dict[str, Any]] = [r if r["kind"] == "header" else {**r, "record_time": LATER} for r in backup]
    assert mem.import_records(forged)["forgotten"] == 1
    fresh = {"kind": "unit", "id": "c0ffee01", "text": "Carol's new door code is 1234", "user_id": "carol",
             "record_time": LATER}
    assert mem.import_records([HEADER, fresh])["forgotten"] == 1  # an import cannot tell it from an old one
    assert mem.count_units(user_id="carol") == 0
    assert mem.add("Carol's new door code is 1234", user_id="carol").accepted  # add still takes new content
    assert mem.import_records(forged, allow_forgotten=True)["stored"] == 1
