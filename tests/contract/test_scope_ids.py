"""One rule for scope ids that are not strings: refused everywhere, never read as text. ``"user_id": 5`` in a
JSONL file for ``omnimem ingest jsonl``, in an omnimem dump or in a mem0 export, and ``user_id=5`` in the Python
API, are each a typed error naming the place, and nothing is stored (``ingest`` used to store "5")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnimem import InvalidInputError, MalformedDataError, Memory
from omnimem.cli import app
from omnimem.contract.loaders import load_jsonl

HEADER = {"kind": "header", "format": "omnimem-export", "version": 1}


@pytest.mark.parametrize("key", ["user_id", "agent_id", "session_id"])
def test_ingest_jsonl_refuses_a_number_as_a_scope_id(tmp_path: Path, key: str) -> None:
    turns = tmp_path / "turns.jsonl"
    turns.write_text(json.dumps({"text": "Ann likes tea", "user_id": "ann"}) + "\n"
                     + json.dumps({"text": "Ann likes jazz", "user_id": "ann", key: 5}) + "\n")
    with pytest.raises(MalformedDataError, match=f"turns.jsonl:2: {key} must be a string, got int"):
        load_jsonl(turns)
    store = tmp_path / "store"
    done = CliRunner().invoke(app, ["ingest", "jsonl", str(turns), "--store", str(store)],
                              env={"OMNIMEM_EMBEDDER": "fake"})
    assert done.exit_code != 0 and done.output.count("error:") == 1
    assert f"turns.jsonl:2: {key} must be a string, got int" in done.output
    if Memory.exists(store):
        with Memory(store, embedder="fake") as mem:
            assert mem.stats()["units"] == 0


def test_the_api_and_every_import_refuse_a_number_as_a_scope_id(mem: Memory) -> None:
    with pytest.raises(InvalidInputError, match="user_id must be a string, got int"):
        mem.add("Ann likes tea", user_id=5)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="session_id must be a string, got int"):
        mem.add_dialogue([{"text": "Ann likes tea"}], user_id="ann", session_id=3)  # type: ignore[arg-type]
    with pytest.raises(MalformedDataError, match=r"record 2 \(id a1\): user_id must be a string, got int"):
        mem.import_records([HEADER, {"kind": "unit", "id": "a1", "text": "Ann likes tea", "user_id": 5}])
    with pytest.raises(MalformedDataError, match="record 1 .*user_id must be a string"):
        mem.import_mem0([{"id": "11111111-2222-4333-8444-555555555555", "memory": "Likes tea", "user_id": 5}])
    assert mem.stats()["units"] == 0
