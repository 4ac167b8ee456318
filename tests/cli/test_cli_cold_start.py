"""A cold ``omnimem search`` imports only what it needs, and a torch-MiniLM store is searched without torch.

The import checks run the CLI in a fresh interpreter and read ``sys.modules``
afterwards: deterministic, unlike a timing. The speed itself is measured by
``python -m benchmarks cold-start`` (benchmarks/results/cold-start.md).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from omnimem import EmbedderMismatchError, Memory, ReadOnlyStoreError
from omnimem.embed.onnx import ONNX_NAME, OnnxMiniLMEmbedder
from omnimem.embed.query import fast_query_embedder, query_compatible
from omnimem.store.sqlite.opening import indexes_saved, read_meta

pytestmark = pytest.mark.slow  # loads the ONNX model

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "sentence_transformers", "transformers", "spacy")
TURNS = [
    {"id": "D1:1", "speaker": "Alex", "text": "I painted the lighthouse at Point Reyes in watercolour.", "time": "2024-03-02"},
    {"id": "D1:2", "speaker": "Sam", "text": "Our dog Biscuit chewed my hiking boots again.", "time": "2024-03-02"},
    {"id": "D1:3", "speaker": "Alex", "text": "Next week I fly to Lisbon for a conference.", "time": "2024-03-03"},
]

CHILD = """
import json, sys
from omnimem.cli.commands import app
try:
    app(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
heavy = sorted(m for m in sys.modules if m.split(".")[0] in {heavy!r})
print(json.dumps({{"heavy": heavy, "code": code}}), file=sys.stderr)
"""


class StandInForTorchMiniLM(OnnxMiniLMEmbedder):
    """Builds a store that records the torch MiniLM's name, without loading torch in the test process.

    Only the recorded name matters here: which model the CLI then chooses for the queries.
    """

    name = "all-MiniLM-L6-v2"


def cli_in_fresh_process(*args: str) -> tuple[dict[str, object], dict[str, object]]:
    """Run the CLI in a new interpreter; (its JSON output, what it imported and its exit code)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", CHILD.format(heavy=HEAVY), *args], capture_output=True,
                          text=True, env=env, check=True, timeout=300)
    report = json.loads(done.stderr.strip().splitlines()[-1])
    return json.loads(done.stdout), report


def make_store(path: Path, embedder: object) -> None:
    """A store of TURNS; closing it saves its indexes."""
    with Memory(path, embedder=embedder) as mem:  # type: ignore[arg-type]
        mem.add_dialogue(TURNS, user_id="u1", session_id="s1")
        mem.search("anything", user_id="u1")


def test_search_on_an_onnx_store_imports_no_torch(tmp_path: Path) -> None:
    store = tmp_path / "mem"
    make_store(store, "onnx")
    out, report = cli_in_fresh_process("search", "What did Alex paint?", "--store", str(store), "--json")
    assert report == {"heavy": [], "code": 0}
    assert "lighthouse" in out["hits"][0]["unit"]["summary"]  # type: ignore[index]


def test_search_on_a_torch_minilm_store_embeds_queries_with_onnx_read_only(tmp_path: Path) -> None:
    store = tmp_path / "mem"
    make_store(store, StandInForTorchMiniLM())
    db = store / "omnimem.db"
    before = db.stat().st_mtime_ns
    out, report = cli_in_fresh_process("search", "Where is Alex flying?", "--store", str(store), "--json")
    assert report == {"heavy": [], "code": 0}
    assert "Lisbon" in out["hits"][0]["unit"]["summary"]  # type: ignore[index]
    assert db.stat().st_mtime_ns == before  # opened read-only: nothing written
    stats, _ = cli_in_fresh_process("stats", "--store", str(store), "--json")
    assert stats["embedder"] == "all-MiniLM-L6-v2"  # the store still records the model that made its vectors


def test_a_query_model_serves_only_read_only_opens(tmp_path: Path) -> None:
    store = tmp_path / "mem"
    make_store(store, StandInForTorchMiniLM())
    assert query_compatible("all-MiniLM-L6-v2", ONNX_NAME) and not query_compatible(ONNX_NAME, "all-MiniLM-L6-v2")
    assert fast_query_embedder("all-MiniLM-L6-v2") == ONNX_NAME and fast_query_embedder("fake") is None
    with pytest.raises(EmbedderMismatchError, match="reembed"):
        Memory(store, embedder="onnx")  # writable: its vectors would be stored beside the other model's
    with Memory(store, embedder="onnx", read_only=True) as mem:
        assert mem.embedder.name == ONNX_NAME
        assert "watercolour" in mem.search("painting", user_id="u1").hits[0].unit.summary
        with pytest.raises(ReadOnlyStoreError):
            mem.add("a new fact", user_id="u1")
    with pytest.raises(EmbedderMismatchError):
        Memory(store, embedder="fake", read_only=True)  # not measured to be equivalent: refused as before


def test_a_configured_other_embedder_is_not_overridden(tmp_path: Path) -> None:
    store = tmp_path / "mem"
    make_store(store, StandInForTorchMiniLM())
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMNIMEM_EMBEDDER": "fake"}
    done = subprocess.run([sys.executable, "-m", "omnimem.cli", "search", "x", "--store", str(store)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 2 and "built with embedder 'all-MiniLM-L6-v2', not 'fake'" in done.stderr


def test_a_store_without_saved_indexes_is_opened_writable_once_to_save_them(tmp_path: Path) -> None:
    store = tmp_path / "mem"
    make_store(store, "onnx")
    shutil.rmtree(store / "index")  # saved indexes lost (or never written by an older version)
    assert not indexes_saved(store, read_meta(store)["seq"])
    out, report = cli_in_fresh_process("search", "Where is Alex flying?", "--store", str(store), "--json")
    assert report["code"] == 0 and "Lisbon" in out["hits"][0]["unit"]["summary"]  # type: ignore[index]
    assert indexes_saved(store, read_meta(store)["seq"])  # the next search loads them instead of rebuilding
