"""``omnimem pg-start`` leaves the folders above its data folder as it found them (issue 35, item 8).

Run by root, pgserver gives every folder above the data folder ``g+rx,o+rx`` so its ``pgserver`` user can
enter: a private ``700`` working folder became ``755``. omnimem creates the data folder ``700`` and puts
the parents' modes back once the server has started or stopped; the server keeps working.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from omnimem.store.postgres import local_server

pytest.importorskip("pgserver")
ROOT = Path(__file__).resolve().parents[2]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def private_home() -> Iterator[Path]:
    """``<tmp>/home``, both folders 700, as a user's home is; the server started in it is stopped afterwards."""
    top = Path(tempfile.mkdtemp(prefix="omnimem-modes-"))
    home = top / "home"
    home.mkdir()
    for folder in (top, home):
        folder.chmod(0o700)
    yield home
    data = home / "new" / "pg"
    if (data / "postmaster.pid").exists():
        local_server.stop(data)
    shutil.rmtree(top, ignore_errors=True)


def omnimem(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMNIMEM_EMBEDDER": "fake"}
    return subprocess.run([sys.executable, "-m", "omnimem.cli", *args], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=300)


def test_pg_start_and_stop_keep_the_parents_private(private_home: Path) -> None:
    top = private_home.parent
    started = omnimem(private_home, "pg-start", "new/pg")
    assert started.returncode == 0, started.stderr
    assert started.stdout.startswith("postgresql://")
    assert (mode(top), mode(private_home)) == (0o700, 0o700)
    assert (mode(private_home / "new"), mode(private_home / "new" / "pg")) == (0o700, 0o700)
    if os.geteuid() == 0:
        assert "their modes were put back as they were" in started.stderr

    added = omnimem(private_home, "--url", "postgresql+pgserver://./new/pg", "add", "Ann moved to Lisbon",
                    "--user-id", "ann")
    assert added.returncode == 0, added.stderr  # the server works with its parents private again
    assert (mode(top), mode(private_home)) == (0o700, 0o700)
    stats = omnimem(private_home, "--url", "postgresql+pgserver://./new/pg", "stats")
    path = [line for line in stats.stdout.splitlines() if line.startswith("path: ")]
    assert path and path[0].startswith("path: postgresql://") and "none" not in path[0]  # the database, no password

    stopped = omnimem(private_home, "pg-stop", "new/pg")
    assert stopped.returncode == 0, stopped.stderr
    assert (mode(top), mode(private_home)) == (0o700, 0o700)
