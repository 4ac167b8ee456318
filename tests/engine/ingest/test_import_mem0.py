"""Moving from mem0: ``Memory.import_mem0`` and ``omnimem import --format mem0`` read what mem0's ``get_all``
returns (tests/data holds one export of its open-source ``Memory`` and one of its platform) and keep ids (as
source ids: each unit gets a fresh omnimem id, see tests/server/test_import_oracle.py), times and scopes; a bad
memory stores nothing and names the memory."""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from omnimem import Memory
from omnimem.cli import app
from omnimem.errors import MalformedDataError, ScopeError
from omnimem.mau import MAU
from tests.server.conftest import start, stop

DATA = Path(__file__).resolve().parents[2] / "data"
OSS = DATA / "mem0_get_all.json"  # {"results": [...]}, as mem0's Memory.get_all answers
PLATFORM = DATA / "mem0_platform_get_all.json"  # a list, as mem0's platform client answers


def export(path: Path = OSS) -> Any:
    return json.loads(path.read_text())


def imported(mem: Memory, **scope: str) -> dict[str, MAU]:
    """The store's units by the mem0 id each was imported from."""
    return {u.metadata["mem0"]["id"]: u for u in mem.units(limit=100, **scope)}


def test_a_mem0_export_keeps_ids_times_and_scopes(mem: Memory) -> None:
    assert mem.import_mem0(export()) == {"units": 5, "stored": 5, "skipped": 0, "forgotten": 0, "events": 0}
    units = imported(mem)
    for memory in export()["results"]:
        unit = units[memory["id"]]
        assert unit.id != memory["id"] and unit.source_ids == (memory["id"],)  # mem0's id is the source id
        assert unit.summary == memory["memory"]
        assert (unit.user_id, unit.agent_id, unit.session_id) == (
            memory.get("user_id"), memory.get("agent_id"), memory.get("run_id"))
        assert unit.event_time == datetime.fromisoformat(memory["created_at"])
        assert unit.metadata["mem0"]["hash"] == memory["hash"]
        assert {k: v for k, v in unit.metadata.items() if k != "mem0"} == (memory["metadata"] or {})
    allergy = units["5c3f1e0a-8d47-4b8e-9a1b-2f6c7d8e9a01"].metadata["mem0"]
    assert allergy == {"id": "5c3f1e0a-8d47-4b8e-9a1b-2f6c7d8e9a01", "hash": "943983c4c193ffe651ee6fcc5a8dc91b", "updated_at": "2025-04-02T18:30:05.004418-07:00",
                       "actor_id": "alice", "role": "user"}
    assert mem.import_mem0(export())["stored"] == 0  # the same export twice adds nothing


def test_imported_memories_stay_in_their_scopes(mem: Memory) -> None:
    mem.import_mem0(export())
    alice = {h.unit.summary for h in mem.search("dog trip allergic seats", user_id="alice").hits}
    assert alice == {"Is planning a trip to Japan in April", "Is allergic to shellfish",
                     "Prefers window seats on long flights"}
    assert [h.unit.summary for h in mem.search("dog", user_id="bob").hits] == ["Has a dog named Biscuit"]
    session = mem.search("seats", user_id="alice", session_id="booking-2025-03-20").hits
    assert [h.unit.source_ids for h in session] == [("d2a4b6c8-1e3f-4a5b-8c7d-9e0f1a2b3c4d",)]


def test_a_platform_export_is_a_list_and_keeps_its_app_and_categories(mem: Memory) -> None:
    assert mem.import_mem0(export(PLATFORM))["stored"] == 1
    unit = imported(mem)["7e6d5c4b-3a29-4180-9f8e-7d6c5b4a3928"]
    assert (unit.user_id, unit.agent_id, unit.session_id) == ("carol", None, None)
    assert unit.metadata["mem0"]["app_id"] == "care-app"
    assert unit.metadata["mem0"]["categories"] == ["professional_details"]


GOOD = {"id": "11111111-2222-4333-8444-555555555555", "memory": "Likes green tea", "user_id": "dana",
        "created_at": "2025-01-02T03:04:05+00:00"}


@pytest.mark.parametrize(("bad", "words"), [
    ("not a memory", "record 2: not a JSON object"),
    ({"memory": "no id", "user_id": "dana"}, "record 2: no id"),
    ({**GOOD, "id": "../../etc/passwd"}, "record 2 (id ../../etc/passwd): id must be 1-64 hex/-/_ characters"),
    ({**GOOD, "id": GOOD["id"]}, "record 2 (id 11111111-2222-4333-8444-555555555555): the same id as record 1"),
    ({**GOOD, "id": "22222222-2222-4333-8444-555555555555", "memory": "  "}, "no memory text"),
    ({**GOOD, "id": "33333333-2222-4333-8444-555555555555", "created_at": "yesterday-ish"}, "created_at"),
    ({**GOOD, "id": "44444444-2222-4333-8444-555555555555", "user_id": 7}, "user_id must be a string"),
    ({**GOOD, "id": "55555555-2222-4333-8444-555555555555", "metadata": ["a"]}, "metadata must be an object"),
    ({**GOOD, "id": "66666666-2222-4333-8444-555555555555", "metadata": {"mem0": 1}}, '"mem0" key'),
    ({**GOOD, "id": "77777777-2222-4333-8444-555555555555", "memory": "a\x00b"}, "text holds a NUL character"),
    ({**GOOD, "id": "88888888-2222-4333-8444-555555555555", "run_id": "r\x00"}, "session_id holds a NUL"),
])
def test_a_bad_memory_is_named_and_nothing_is_stored(unchanged_mem: Memory, bad: Any, words: str) -> None:
    with pytest.raises(MalformedDataError, match="record 2") as caught:
        unchanged_mem.import_mem0({"results": [GOOD, bad]})
    assert words in str(caught.value)
    assert unchanged_mem.count_units(user_id="dana") == 0


@pytest.mark.parametrize("shape", [{"memories": []}, "a string", 42])
def test_an_export_of_another_shape_is_refused(unchanged_mem: Memory, shape: Any) -> None:
    with pytest.raises(MalformedDataError, match="list of memories"):
        unchanged_mem.import_mem0(shape)


def test_the_cli_imports_a_mem0_file(tmp_path: Path) -> None:
    runner, store = CliRunner(), str(tmp_path / "store")
    done = runner.invoke(app, ["import", "--format", "mem0", str(OSS), "--store", store, "--json"],
                         env={"OMNIMEM_EMBEDDER": "fake"})
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["stored"] == 5
    with Memory(tmp_path / "store", embedder="fake") as mem:
        assert imported(mem)["0f9e8d7c-6b5a-4c3d-9e2f-1a0b9c8d7e6f"].session_id == "onboarding"
    broken = tmp_path / "broken.json"
    broken.write_text('{"results": [')
    failed = runner.invoke(app, ["import", "--format", "mem0", str(broken), "--store", store])
    assert failed.exit_code != 0 and "broken.json: not a JSON document" in failed.output
    assert failed.output.count("error:") == 1
    unknown = runner.invoke(app, ["import", "--format", "zep", str(OSS), "--store", store])
    assert unknown.exit_code != 0 and "unknown import format 'zep'" in unknown.output


def test_a_user_key_imports_only_its_own_mem0_memories(tmp_path: Path) -> None:
    served = start(tmp_path)
    try:
        alice = served.remote("alice")
        with pytest.raises(ScopeError):  # the export holds bob's memory and an agent-only one too
            alice.import_mem0(export())
        assert served.memory.count_units() == 0
        own = [m for m in export()["results"] if m.get("user_id") == "alice"]
        assert alice.import_mem0(own)["stored"] == 3
        assert {h.unit.user_id for h in alice.search("trip seats allergic").hits} == {"alice"}
        alice.close()
    finally:
        stop(served)


def test_the_docs_example_runs_on_the_export_the_page_shows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    page = (Path(__file__).resolve().parents[3] / "docs" / "mem0.md").read_text()
    shown = re.search(r"```json\n(.*?)```", page, re.S)
    example = [b for b in re.findall(r"```python\n(.*?)```", page, re.S) if "import_mem0" in b]
    assert shown is not None and len(example) == 1
    (tmp_path / "mem0_export.json").write_text(shown.group(1))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OMNIMEM_EMBEDDER", "fake")
    exec(compile(example[0], "docs/mem0.md", "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    assert printed == ["{'units': 1, 'stored': 1, 'skipped': 0, 'forgotten': 0, 'events': 0}",
                       "Is planning a trip to Japan in April 2025-03-14 09:12:44.137842-07:00"]
