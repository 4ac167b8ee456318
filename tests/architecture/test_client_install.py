"""A client-only install: the omnimem wheel without its dependencies, beside httpx, pydantic and numpy only.

``pip install --no-deps omnimem`` then ``pip install httpx pydantic numpy`` is what a user of a server needs
(docs/serving.md, "A client-only install"). Here that install is made for real: the wheel is built from the
checkout and installed with ``--no-deps`` into a fresh virtual environment, whose only other packages are the
files of those three distributions and of what they require (read from their installed metadata, linked from
this interpreter's site-packages). torch, FAISS, onnxruntime, bm25s and the tokenizers are not there at all,
not just blocked. A remote ``Memory`` adds and searches against a live server; an embedded one is refused
with the error that names what is missing.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from importlib.metadata import PackageNotFoundError, distribution, requires
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests.fresh_venv import site_packages, wheel_in_fresh_venv

CLIENT = ("httpx", "pydantic", "numpy")  # docs/serving.md names these three
ABSENT = ("torch", "faiss", "onnxruntime", "bm25s", "tokenizers", "tiktoken", "sentence_transformers", "fastapi")


def closure(names: tuple[str, ...]) -> set[str]:
    """The distributions ``names`` install: them and what they require, without extras."""
    seen: set[str] = set()
    todo = [Requirement(n) for n in names]
    while todo:
        req = todo.pop()
        name = re.sub(r"[-_.]+", "-", req.name).lower()
        if name in seen or (req.marker is not None and not req.marker.evaluate({"extra": ""})):
            continue
        seen.add(name)
        try:
            todo.extend(Requirement(r) for r in requires(name) or [])
        except PackageNotFoundError:  # a requirement for another Python (exceptiongroup below 3.11)
            seen.discard(name)
    return seen


def link_distributions(names: set[str], into: Path) -> None:
    """Link each installed distribution's top-level files (packages, modules, .libs, .dist-info) into ``into``."""
    into.mkdir()
    for name in names:
        dist = distribution(name)
        tops = {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
        for top in tops - {"__pycache__"}:
            source = Path(str(dist.locate_file(top)))
            if source.exists() and not (into / top).exists():
                (into / top).symlink_to(source)


@pytest.fixture(scope="module")
def client_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding the omnimem wheel (``--no-deps``) and the client's three distributions only."""
    tmp = tmp_path_factory.mktemp("client")
    fresh = wheel_in_fresh_venv(tmp)
    link_distributions(closure(CLIENT), tmp / "deps")
    (site_packages(fresh) / "client-deps.pth").write_text(str(tmp / "deps") + "\n")
    return fresh


def run_client(venv: Path, code: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "OMNIMEM_"))}
    return subprocess.run([str(venv / "bin" / "python"), "-c", code, *args], capture_output=True, text=True,
                          env=env, cwd=venv, timeout=300)


def test_the_client_venv_holds_the_wheel_and_the_three_distributions_only(client_venv: Path) -> None:
    done = run_client(client_venv, f"""
import importlib.util, json, omnimem
print(json.dumps({{"file": omnimem.__file__,
                  "absent": [n for n in {ABSENT!r} if importlib.util.find_spec(n) is None]}}))
""")
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout)
    assert Path(found["file"]).is_relative_to(client_venv)  # the wheel's omnimem, not the checkout's
    assert found["absent"] == list(ABSENT)


def test_a_remote_memory_adds_and_searches_from_the_client_only_install(client_venv: Path, server: str) -> None:
    done = run_client(client_venv, """
import json, sys
from omnimem import Memory

with Memory(url=sys.argv[1]) as mem:
    added = mem.add("Alex bought a red kayak in Porto.", user_id="u1")
    context = mem.search("kayak", user_id="u1")
print(json.dumps({"accepted": added.accepted, "top": context.hits[0].text, "rendered": context.render()}))
""", server)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout)
    assert found["accepted"] is True
    assert "kayak" in found["top"] and "kayak" in found["rendered"]


def test_an_embedded_memory_in_the_client_only_install_names_what_is_missing(client_venv: Path) -> None:
    done = run_client(client_venv, """
from omnimem import Memory
from omnimem.errors import MissingDependencyError
try:
    Memory("./store")
except MissingDependencyError as e:
    print("refused:", e)
""")
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith("refused: ")
    assert "pip install omnimem" in done.stdout and "--no-deps" in done.stdout
    assert not (client_venv / "store").exists()  # refused before anything was created
