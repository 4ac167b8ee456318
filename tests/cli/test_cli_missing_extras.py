"""Without the ``server`` extra, ``serve`` says which extra to install in one line and ``keys create`` works.

The CLI runs in a fresh interpreter whose ``sitecustomize`` hides the server's packages (FastAPI, uvicorn,
...) from every import, as an install without ``omnimem[server]`` would (issue 36: both commands ended in a
~40-line traceback, and creating a key needs no web framework).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HIDDEN = ("fastapi", "uvicorn", "starlette", "python_multipart", "prometheus_client", "fastapi_offline")
BLOCKER = f"""
import sys

class HideServerExtra:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {HIDDEN!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, HideServerExtra())
"""


def without_server_extra(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(BLOCKER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]), "OMNIMEM_EMBEDDER": "fake"}
    return subprocess.run([sys.executable, "-m", "omnimem.cli", *args], cwd=tmp_path, env=env, text=True,
                          capture_output=True, timeout=300, stdin=subprocess.DEVNULL)


def test_serve_without_the_server_extra_is_one_line(tmp_path: Path) -> None:
    done = without_server_extra(tmp_path, "serve", "--init", "--store", "mem")
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "error: fastapi is not installed; install it with: pip install 'omnimem[server]'"]


def test_keys_create_needs_no_web_framework(tmp_path: Path) -> None:
    done = without_server_extra(tmp_path, "keys", "create", "--init", "--name", "ann-agent", "--user-id", "ann",
                                "--role", "write", "--store", "mem")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("omk_")
    assert done.stderr.splitlines()[0] == f"created a new omnimem store in {tmp_path / 'mem'}"
    listed = without_server_extra(tmp_path, "keys", "list", "--store", "mem", "--json")
    assert listed.returncode == 0 and '"name": "ann-agent"' in listed.stdout
