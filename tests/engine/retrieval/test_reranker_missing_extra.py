"""Without the ``torch`` extra, a search with a reranker says which extra to install, in one line.

The cross-encoder is sentence-transformers' (the ``torch`` extra). A store with
``reranker=`` set still opens and stores without it; its first search raises
:class:`~omnimem.errors.MissingDependencyError` naming the extra, and the CLI
prints that line and exits 1 (it was a bare ImportError and a traceback).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from omnimem import Memory
from omnimem.errors import MissingDependencyError

ROOT = Path(__file__).resolve().parents[3]
HINT = "sentence-transformers is not installed; install it with: pip install 'omnimem[torch]'"
BLOCKER = """
import sys

class HideTorchExtra:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"sentence_transformers", "torch"}:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, HideTorchExtra())
"""


def test_a_search_with_a_reranker_names_the_torch_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # as if it were not installed
    (tmp_path / "cross-encoder").mkdir()
    with Memory(tmp_path / "m", embedder="fake", reranker=str(tmp_path / "cross-encoder")) as mem:
        mem.add("the lighthouse at sunset", user_id="u")
        with pytest.raises(MissingDependencyError) as caught:
            mem.search("lighthouse", user_id="u")
    assert str(caught.value) == HINT


def test_the_cli_search_with_a_reranker_and_no_torch_extra_is_one_line(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BLOCKER)
    (tmp_path / "cross-encoder").mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]), "OMNIMEM_EMBEDDER": "fake",
           "OMNIMEM_RERANKER": str(tmp_path / "cross-encoder")}

    def omnimem(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "omnimem.cli", *args, "--store", "mem"], cwd=tmp_path,
                              env=env, text=True, capture_output=True, timeout=300, stdin=subprocess.DEVNULL)

    added = omnimem("add", "the lighthouse at sunset", "--user-id", "u")
    assert added.returncode == 0, added.stderr
    done = omnimem("search", "lighthouse", "--user-id", "u")
    assert done.returncode == 1
    assert done.stderr.splitlines() == [f"error: {HINT}"]
