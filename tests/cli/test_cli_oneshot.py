"""One-shot CLI writes on a MiniLM store embed with numpy (no torch), and ``import`` shows its progress.

``omnimem add`` embeds one text; importing torch for it was most of the command's
run time. :class:`NumpyMiniLMEmbedder` runs the same float32 weights in numpy:
its vectors equal the sentence-transformers ones to float rounding, so they may
be stored beside them (the int8 ONNX model may not: see ``omnimem.embed.onnx``).
The time saved is measured by ``python -m benchmarks cold-start``
(benchmarks/results/cold-start.md); these tests check what is deterministic.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from omnimem import Memory
from omnimem.embed.numpy_minilm import NumpyMiniLMEmbedder
from omnimem.cli.oneshot import read_only_query_embedder, write_embedder
from tests.cli.test_cli_cold_start import ROOT, StandInForTorchMiniLM, cli_in_fresh_process, make_store

pytestmark = pytest.mark.slow  # loads MiniLM weights

TEXTS = ["Thanks!", "ok", "Über café: naïve résumé", "What did Alex paint?",
         "Caroline went to the LGBTQ support group on 7 May 2023 and felt welcomed there.",
         "a long one " * 120]  # past the 256-token limit: truncated like sentence-transformers


def test_numpy_minilm_gives_the_torch_models_vectors() -> None:
    from omnimem.embed.minilm import MiniLMEmbedder

    ours, theirs = NumpyMiniLMEmbedder().embed(TEXTS), MiniLMEmbedder().embed(TEXTS)
    cosine = (ours * theirs).sum(axis=1)
    assert cosine.min() > 1 - 1e-5  # short texts included, where the int8 model drops to 0.994
    assert np.abs(ours - theirs).max() < 1e-4
    assert NumpyMiniLMEmbedder().name == MiniLMEmbedder().name == "all-MiniLM-L6-v2"


def test_add_on_a_minilm_store_imports_no_torch(tmp_path: Path) -> None:
    store = tmp_path / "mem"
    make_store(store, StandInForTorchMiniLM())  # records all-MiniLM-L6-v2 without loading torch here
    out, report = cli_in_fresh_process("add", "Alex bought a red kayak in Porto.", "--user-id", "u1",
                                       "--store", str(store), "--json")
    assert report == {"heavy": [], "code": 0} and out["accepted"] is True
    with Memory(store, embedder=NumpyMiniLMEmbedder()) as mem:
        stored = mem.store.get([str(out["id"])])[0]
        assert stored.summary == "Alex bought a red kayak in Porto."
        assert mem.stats()["embedder"] == "all-MiniLM-L6-v2"


def test_add_to_a_new_store_records_the_default_model_without_torch(tmp_path: Path) -> None:
    store = tmp_path / "new"
    out, report = cli_in_fresh_process("add", "Sam's dog is called Biscuit.", "--store", str(store), "--json")
    assert report == {"heavy": [], "code": 0} and out["accepted"] is True
    stats, _ = cli_in_fresh_process("stats", "--store", str(store), "--json")
    assert stats["embedder"] == "all-MiniLM-L6-v2"


def test_other_models_keep_their_own_embedder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "fake"
    with Memory(store, embedder="fake") as mem:
        mem.add("hello")
    assert write_embedder(store, None, None) is None  # a fake store: its own model
    assert write_embedder(tmp_path / "none", None, "fake") is None  # a configured other model for a new store
    assert isinstance(write_embedder(tmp_path / "none", None, None), NumpyMiniLMEmbedder)
    for remote in ("http://127.0.0.1:9/", "https://memory.example"):  # a server embeds for itself
        assert write_embedder(None, remote, None) is None and read_only_query_embedder(None, remote, None) is None
    monkeypatch.setenv("OMNIMEM_EMBEDDER", "fake")
    done = subprocess.run([sys.executable, "-m", "omnimem.cli", "add", "x y z", "--store", str(store)],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert done.returncode == 0, done.stderr


def test_import_shows_a_progress_bar_up_to_every_unit(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMNIMEM_EMBEDDER": "fake"}
    source = tmp_path / "src"
    with Memory(source, embedder="fake") as mem:
        mem.add_dialogue([{"speaker": "Ann", "text": f"note number {n} about topic {n * 7}"} for n in range(30)],
                         user_id="ann", session_id="s1")
        units = mem.stats()["units"]
    dump = tmp_path / "dump.jsonl"
    with Memory(source, embedder="fake") as mem:
        dump.write_text("".join(json.dumps(r) + "\n" for r in mem.export(all=True)), encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "omnimem.cli", "import", str(dump), "--store", str(tmp_path / "dst")],
                          capture_output=True, text=True, env={**env, "FORCE_COLOR": "1"}, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "importing dump.jsonl" in done.stderr and f"{units}/{units}" in done.stderr  # drawn on stderr
    assert f"{units} stored" in done.stdout.replace("\x1b[1;36m", "").replace("\x1b[0m", "")
    quiet = subprocess.run([sys.executable, "-m", "omnimem.cli", "import", str(dump), "--store", str(tmp_path / "q"),
                            "--json"], capture_output=True, text=True, env={**env, "FORCE_COLOR": "1"}, timeout=300)
    assert quiet.returncode == 0 and "importing" not in quiet.stderr  # --json: no bar
    assert json.loads(quiet.stdout)["stored"] == units


def test_import_records_reports_progress_for_every_unit(tmp_path: Path) -> None:
    with Memory(tmp_path / "a", embedder="fake") as mem:
        mem.add_dialogue([{"speaker": "Bo", "text": f"fact {n}: the colour code is {n * 13}"} for n in range(12)],
                         user_id="bo", session_id="s")
        records = list(mem.export(all=True))
    seen: list[int] = []
    with Memory(tmp_path / "b", embedder="fake") as mem:
        summary = mem.import_records(records, progress=seen.append)
        again: list[int] = []
        mem.import_records(records, progress=again.append)  # all present: skipped up front, still counted
    assert sum(seen) == summary["units"] == 12 and sum(again) == 12
