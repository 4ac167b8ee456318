"""A small ``ingest`` or ``import`` takes the path ``add`` takes: the numpy MiniLM, no torch (issue 36).

A one-turn ``ingest jsonl`` spent ~10 s importing torch and sentence-transformers for one text. Up to
``SMALL_WRITE`` texts the CLI embeds with :class:`~omnimem.embed.numpy_minilm.NumpyMiniLMEmbedder`, whose
vectors equal the torch model's to float rounding: the store records the same model and dimension, and a
later torch open (``serve``, a big ingest) searches them as its own.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from omnimem import Memory
from omnimem.cli.oneshot import SMALL_WRITE
from tests.cli.test_cli_cold_start import ROOT, TURNS, cli_in_fresh_process

pytestmark = pytest.mark.slow  # the torch MiniLM is the reference the vectors are checked against


def _turns_file(tmp_path: Path, turns: list[dict[str, str]]) -> Path:
    path = tmp_path / "turns.jsonl"
    path.write_text("".join(json.dumps({**t, "user_id": "u1", "session_id": "s1"}) + "\n" for t in turns))
    return path


def _vectors(store: Path) -> dict[str, np.ndarray]:
    """Each unit's stored vector by its source id."""
    with Memory(store, embedder="all-MiniLM-L6-v2") as mem:
        by_rid = {int(r): v for rids, vs in mem.store.vectors() for r, v in zip(rids, vs)}
        units = mem.store.get_rows(list(by_rid))
    return {units[rid].source_ids[0]: vector for rid, vector in by_rid.items()}


def test_a_small_ingest_imports_no_torch_and_stores_the_torch_models_vectors(tmp_path: Path) -> None:
    turns = _turns_file(tmp_path, TURNS)
    store = tmp_path / "cli"
    out, report = cli_in_fresh_process("ingest", "jsonl", str(turns), "--store", str(store), "--json")
    assert report == {"heavy": [], "code": 0}
    assert out["stored"] == len(TURNS) and out["units"] == len(TURNS)

    again, report = cli_in_fresh_process("ingest", "jsonl", str(turns), "--store", str(store), "--json")
    assert report == {"heavy": [], "code": 0}
    assert (again["stored"], again["skipped"], again["units"]) == (0, len(TURNS), len(TURNS))  # idempotent

    reference = tmp_path / "torch"
    with Memory(reference, embedder="all-MiniLM-L6-v2") as mem:  # the torch model, as a big ingest uses
        mem.add_dialogue(TURNS, user_id="u1", session_id="s1")
        assert mem.stats()["embedder"] == "all-MiniLM-L6-v2"
    ours, theirs = _vectors(store), _vectors(reference)
    assert set(ours) == {t["id"] for t in TURNS} == set(theirs)
    assert min(float(ours[k] @ theirs[k]) for k in ours) >= 0.9995
    assert {v.shape for v in ours.values()} == {(384,)}


def test_a_small_import_imports_no_torch(tmp_path: Path) -> None:
    turns = _turns_file(tmp_path, TURNS)
    source = tmp_path / "source"
    cli_in_fresh_process("ingest", "jsonl", str(turns), "--store", str(source), "--json")
    dump = tmp_path / "dump.jsonl"
    exported = subprocess.run([sys.executable, "-m", "omnimem.cli", "export", "--all", "--store", str(source)],
                              capture_output=True, text=True, check=True, cwd=ROOT, timeout=300)
    dump.write_text(exported.stdout)
    out, report = cli_in_fresh_process("import", str(dump), "--store", str(tmp_path / "copy"), "--json")
    assert report == {"heavy": [], "code": 0} and out["stored"] == len(TURNS)
    with Memory(tmp_path / "copy", embedder="all-MiniLM-L6-v2") as mem:
        assert mem.stats()["units"] == len(TURNS)


def test_a_big_ingest_still_loads_the_torch_model(tmp_path: Path) -> None:
    many = [{"id": f"D1:{i}", "speaker": "Ann", "text": f"note number {i} about the garden", "time": "2024-03-02"}
            for i in range(SMALL_WRITE + 1)]
    _, report = cli_in_fresh_process("ingest", "jsonl", str(_turns_file(tmp_path, many)),
                                     "--store", str(tmp_path / "big"), "--json")
    assert report["code"] == 0 and "torch" in report["heavy"]
