"""A local PostgreSQL + pgvector for trying the backend: ``postgresql+pgserver://FOLDER``.

PyPI's ``pgserver`` ships PostgreSQL 16 with pgvector as a wheel (the test
suite uses it too). ``start(folder)`` initialises a data folder on first use,
starts the server on a Unix socket in it (or reuses the one already running
there), makes sure a database ``omnimem`` exists and returns its
``postgresql://`` URL. The server is left running after the process exits,
so the next command only connects; ``stop(folder)`` ends it
(``omnimem pg-start`` / ``omnimem pg-stop``). It is for a laptop, not for
production: trust authentication, local socket only.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from omnimem.errors import ConfigError, StoreError, missing_extra

SCHEME = "postgresql+pgserver"
PREFIX = SCHEME + "://"
DATABASE = "omnimem"


def is_local_server_url(url: str | None) -> bool:
    """Whether ``url`` is ``postgresql+pgserver://FOLDER``."""
    return url is not None and url.lower().startswith(PREFIX)


def folder_of(url: str) -> Path:
    """The data folder a ``postgresql+pgserver://`` URL names (relative to the working directory, or absolute)."""
    rest = url[len(PREFIX):].split("?", 1)[0]
    if not rest:
        raise ConfigError(f"{url!r} names no folder; use {PREFIX}./pgdata (relative) or {PREFIX}/abs/path")
    return Path(rest).expanduser().resolve()


def _pgserver() -> Any:
    import warnings

    try:
        with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI)
            warnings.simplefilter("ignore")
            import pgserver
    except ImportError:
        raise missing_extra("pgserver (a local PostgreSQL + pgvector)", "pgserver") from None
    return pgserver


@contextmanager
def parent_modes_kept(folder: Path) -> Iterator[None]:
    """Put back the modes of the folders above ``folder`` that pgserver changed.

    Run as root, pgserver starts PostgreSQL as its system user ``pgserver`` and gives every folder above the
    data folder ``g+rx,o+rx`` so that user can enter (a ``700`` home becomes ``755``: listable by anyone).
    The running server needs none of that (it works inside its data folder); ``pg_ctl`` does, while it
    runs, so the modes are widened only for the call and restored after it.
    """
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        yield
        return
    parents = [p for p in folder.resolve().parents if p.exists()]
    before = {p: p.stat().st_mode & 0o7777 for p in parents}
    try:
        yield
    finally:
        for path, mode in before.items():
            if path.stat().st_mode & 0o7777 != mode:
                path.chmod(mode)


def _new_folder(folder: Path) -> None:
    """The data folder (and any folder above it that omnimem makes) private to its owner: ``700``."""
    missing = [p for p in [folder, *folder.parents] if not p.exists()]
    for path in reversed(missing):
        path.mkdir(mode=0o700, exist_ok=True)


def start(folder: Path) -> str:
    """Start (or reuse) the server of ``folder``; the ``postgresql://`` URL of its ``omnimem`` database.

    As root, the modes of the folders above ``folder`` are the same afterwards (:func:`parent_modes_kept`).
    """
    pgserver = _pgserver()
    try:
        _new_folder(folder)
        # the class, not get_server(): that caches a handle per process, which would outlive a pg-stop
        with parent_modes_kept(folder):
            server = pgserver.PostgresServer(folder, cleanup_mode=None)  # None: keep running after this process
            if DATABASE not in server.psql(f"SELECT datname FROM pg_database WHERE datname = '{DATABASE}';"):
                server.psql(f"CREATE DATABASE {DATABASE};")
            return str(server.get_uri(DATABASE))
    except (OSError, RuntimeError, AssertionError, subprocess.SubprocessError) as exc:  # initdb, pg_ctl, psql
        detail = (getattr(exc, "stderr", None) or str(exc)).strip().splitlines()
        hint = (" (as root, pgserver runs PostgreSQL as the system user 'pgserver', which must be able to enter "
                "every folder above it)") if hasattr(os, "geteuid") and os.geteuid() == 0 else ""
        raise StoreError(f"could not start a local PostgreSQL in {folder}{hint}: "
                         f"{detail[-1] if detail else type(exc).__name__}") from None


def resolve(url: str) -> str:
    """A ``postgresql+pgserver://FOLDER`` URL as the ``postgresql://`` URL of its running server."""
    return start(folder_of(url))


def stop(folder: Path) -> bool:
    """Stop the server of ``folder``; False when none was running there."""
    if not (folder / "postmaster.pid").exists():
        return False
    pgserver = _pgserver()
    as_user = "pgserver" if hasattr(os, "geteuid") and os.geteuid() == 0 else None  # who pgserver ran it as
    try:
        with parent_modes_kept(folder):
            if as_user is not None:  # pg_ctl runs as pgserver's user: it must enter the folders above, for now
                pgserver.utils.ensure_prefix_permissions(folder)
            pgserver.pg_ctl(["-w", "stop"], pgdata=folder, user=as_user)
    except subprocess.CalledProcessError as exc:
        if "Is server running?" in (exc.stderr or "") or not (folder / "postmaster.pid").exists():
            return False  # a stale pid file: nothing was running
        raise StoreError(f"could not stop the PostgreSQL in {folder}: {(exc.stderr or str(exc)).strip()}") from None
    return True
