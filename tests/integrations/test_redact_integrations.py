"""redact_pii reaches the integrations that write with Memory.put (LangGraph store, OpenAI Agents session, CrewAI)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from omnimem import Memory

EMAIL, NAME = "maria.kowalski@example.org", "Maria Kowalski"


def test_a_langgraph_item_is_stored_and_read_back_redacted(tmp_path: Path) -> None:
    pytest.importorskip("langgraph")
    from omnimem.integrations.langgraph import OmnimemStore

    with Memory(tmp_path / "store", embedder="fake", redact_pii=True) as mem:
        store = OmnimemStore(memory=mem)
        store.put(("ann", "contacts"), "maria", {"text": f"{NAME} writes from {EMAIL}", "n": 3})
        item = store.get(("ann", "contacts"), "maria")
        assert item is not None and item.value == {"text": "<PERSON> writes from <EMAIL>", "n": 3}
        dump = json.dumps(list(mem.export(all=True)))
        assert EMAIL not in dump and "Kowalski" not in dump and "<EMAIL>" in dump


def test_an_openai_agents_session_item_is_stored_and_read_back_redacted(tmp_path: Path) -> None:
    pytest.importorskip("agents")
    from omnimem.integrations.openai_agents import OmnimemSession

    with Memory(tmp_path / "store", embedder="fake", redact_pii=True) as mem:
        session = OmnimemSession(mem, session_id="s", user_id="ana")
        asyncio.run(session.add_items([{"role": "user", "content": f"Email {NAME} at {EMAIL} please"}]))
        assert asyncio.run(session.get_items()) == [{"role": "user", "content": "Email <PERSON> at <EMAIL> please"}]
        dump = json.dumps(list(mem.export(all=True)))
        assert EMAIL not in dump and "Kowalski" not in dump


def test_a_crewai_record_is_stored_and_read_back_redacted(tmp_path: Path) -> None:
    pytest.importorskip("crewai", reason="crewai runs in its own venv: see docs/crewai.md")
    from crewai.memory.types import MemoryRecord

    from omnimem.integrations.crewai import OmnimemStorage

    with Memory(tmp_path / "store", embedder="fake", redact_pii=True) as mem:
        storage = OmnimemStorage(mem, user_id="ana")
        record = MemoryRecord(content=f"{NAME}'s email is {EMAIL}", scope="/office", categories=["fact"],
                              embedding=[1.0, 0.0])
        storage.save([record])
        kept = storage.get_record(record.id)
        assert kept is not None and kept.content == "<PERSON>'s email is <EMAIL>"
        dump = json.dumps(list(mem.export(all=True)))
        assert EMAIL not in dump and "Kowalski" not in dump


def test_a_langgraph_item_whose_key_holds_personal_data_is_still_found_by_it(tmp_path: Path) -> None:
    pytest.importorskip("langgraph")
    from omnimem.integrations.langgraph import OmnimemStore

    with Memory(tmp_path / "store", embedder="fake", redact_pii=True) as mem:
        store = OmnimemStore(memory=mem)
        store.put(("ann", "contacts"), EMAIL, {"note": "met at the fair"})
        store.put(("ann", "contacts"), EMAIL, {"note": "met at the fair again"})  # the same item, a new version
        item = store.get(("ann", "contacts"), EMAIL)
        assert item is not None and item.key == EMAIL and item.value == {"note": "met at the fair again"}
        assert "<EMAIL>" in json.dumps([u.metadata for u in mem.units(user_id="ann")])  # the metadata copy redacted
        store.delete(("ann", "contacts"), EMAIL)
        assert store.get(("ann", "contacts"), EMAIL) is None and mem.count_units(include_superseded=True) == 0
