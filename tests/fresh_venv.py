"""The checkout's wheel installed with ``--no-deps`` into a fresh virtual environment, for install tests.

The wheel is built from a copy of ``omnimem/``, ``pyproject.toml`` and ``README.md`` (building in the checkout
would leave build/ in it), offline, without build isolation. The caller adds the dependencies it wants the
venv to see (a ``.pth`` file in :func:`site_packages`).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]


def wheel_in_fresh_venv(tmp: Path) -> Path:
    """A fresh venv at ``tmp/fresh`` holding only the omnimem wheel; its folder."""
    source = tmp / "source"
    shutil.copytree(ROOT / "omnimem", source / "omnimem", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    subprocess.run([*PIP, "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q", "-w",
                    str(tmp / "dist"), str(source)], check=True, capture_output=True)
    wheel = next((tmp / "dist").glob("omnimem-*.whl"))
    fresh = tmp / "fresh"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(fresh)], check=True)
    subprocess.run([*PIP, "--python", str(fresh / "bin" / "python"), "install", "--no-deps", "--no-index", "-q",
                    str(wheel)], check=True, capture_output=True)
    return fresh


def site_packages(venv: Path) -> Path:
    return next(venv.glob("lib/python*/site-packages"))
