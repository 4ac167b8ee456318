"""The cold tier: raw content addressed by its SHA-256, loaded only on demand."""

from __future__ import annotations

import hashlib
import os
import re
import threading
from pathlib import Path
import uuid
from collections.abc import Mapping
from typing import Protocol

from omnimem.errors import InvalidInputError, NotFoundError

_REF = re.compile(r"^[0-9a-f]{64}$")


def content_ref(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def check_ref(ref: str) -> str:
    """Refs are bare hex digests, so they can never name a path outside the tier."""
    if not _REF.match(ref):
        raise InvalidInputError(f"not a cold-tier reference: {ref!r}")
    return ref


class ColdStore(Protocol):
    def put(self, data: bytes) -> str: ...
    def get(self, ref: str) -> bytes: ...
    def delete(self, ref: str) -> None: ...
    def exists(self, ref: str) -> bool: ...
    def put_journaled(self, blobs: Mapping[str, bytes]) -> str | None: ...
    def journal_done(self, journal: str | None) -> None: ...
    def interrupted(self) -> list[tuple[str, list[str]]]: ...


class FileColdStore:
    """Files under ``root/ab/<sha256>``; written via a temp file and rename.

    A write transaction first lists the files it is about to create in a
    journal (``root/.writing/<id>``), then writes them, and removes the journal
    after it committed. A journal that is still there names files a crashed
    (or failed) transaction may have left without a unit; the store removes
    those that no unit references, while it holds SQLite's write lock, which
    every cold-tier write also holds (so no other process is writing one).
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.journals = root / ".writing"

    def _path(self, ref: str) -> Path:
        check_ref(ref)
        return self.root / ref[:2] / ref

    def put(self, data: bytes) -> str:
        ref = content_ref(data)
        path = self._path(ref)
        if path.exists():
            return ref
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{ref}.{os.getpid()}.{threading.get_ident()}.tmp")
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        tmp.replace(path)
        return ref

    def get(self, ref: str) -> bytes:
        path = self._path(ref)
        try:
            return path.read_bytes()
        except FileNotFoundError:
            raise NotFoundError(f"cold-tier content {ref} is missing") from None

    def delete(self, ref: str) -> None:
        path = self._path(ref)
        path.unlink(missing_ok=True)
        if path.parent.is_dir():  # a temp file of a write that was killed part way
            for tmp in path.parent.glob(f".{ref}.*.tmp"):
                tmp.unlink(missing_ok=True)

    def exists(self, ref: str) -> bool:
        return self._path(ref).exists()

    def put_journaled(self, blobs: Mapping[str, bytes]) -> str | None:
        """Write ``blobs`` (ref -> bytes), journaling the new ones; returns the journal's name."""
        new = [ref for ref in blobs if not self._path(ref).exists()]
        journal = None
        if new:
            self.journals.mkdir(parents=True, exist_ok=True)
            journal = f"{os.getpid()}-{uuid.uuid4().hex}"
            with open(self.journals / journal, "w", encoding="ascii") as fh:
                fh.write("\n".join(new) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
        for data in blobs.values():
            self.put(data)
        return journal

    def journal_done(self, journal: str | None) -> None:
        if journal is not None:
            (self.journals / journal).unlink(missing_ok=True)

    def interrupted(self) -> list[tuple[str, list[str]]]:
        """Journals left behind, with the refs each names."""
        if not self.journals.is_dir():
            return []
        out = []
        for path in sorted(self.journals.iterdir()):
            try:
                refs = [r for r in path.read_text(encoding="ascii", errors="replace").split() if _REF.match(r)]
            except OSError:
                continue
            out.append((path.name, refs))
        return out


class MemoryColdStore:
    """The cold tier of an in-memory ``Memory()``."""

    def __init__(self) -> None:
        self._data: dict[str, bytes] = {}

    def put(self, data: bytes) -> str:
        ref = content_ref(data)
        self._data[ref] = data
        return ref

    def get(self, ref: str) -> bytes:
        try:
            return self._data[check_ref(ref)]
        except KeyError:
            raise NotFoundError(f"cold-tier content {ref} is missing") from None

    def delete(self, ref: str) -> None:
        self._data.pop(ref, None)

    def exists(self, ref: str) -> bool:
        return ref in self._data

    def put_journaled(self, blobs: Mapping[str, bytes]) -> str | None:
        for data in blobs.values():
            self.put(data)
        return None

    def journal_done(self, journal: str | None) -> None:
        return None

    def interrupted(self) -> list[tuple[str, list[str]]]:
        return []
