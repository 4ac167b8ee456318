"""The cold tier: raw content addressed by its SHA-256, loaded only on demand."""

from __future__ import annotations

import hashlib
import os
import re
import threading
from pathlib import Path
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


class FileColdStore:
    """Files under ``root/ab/<sha256>``; written via a temp file and rename."""

    def __init__(self, root: Path) -> None:
        self.root = root

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
        self._path(ref).unlink(missing_ok=True)

    def exists(self, ref: str) -> bool:
        return self._path(ref).exists()


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
