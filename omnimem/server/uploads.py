"""Uploaded files: copied into a private temporary folder under a safe name, removed after the call.

The client's file name is kept only as a label (its last path component,
without control characters): ``../../etc/passwd`` becomes ``passwd`` inside
the temporary folder, so no upload can name a path on the server.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fastapi import UploadFile

from omnimem.errors import PayloadTooLargeError
from omnimem.contract import ANONYMOUS_UPLOAD
from omnimem.media.errors import EmptyMediaError

_UNSAFE = re.compile(r"[\x00-\x1f\x7f/\\:]")


def safe_name(name: str | None, fallback: str = "upload") -> str:
    """The last component of a client file name, printable, at most 200 characters."""
    if not name:
        return fallback
    last = re.split(r"[/\\]", name)[-1]
    cleaned = _UNSAFE.sub("", last).strip().lstrip(".")[:200]
    return cleaned or fallback


@contextmanager
def saved(upload: UploadFile, limit: int) -> Iterator[Path | bytes]:
    """The upload as a file in a fresh temporary folder (deleted on exit, whatever happens).

    An upload named ``upload`` (what the remote client sends for raw bytes) is
    handed over as bytes, so it is stored without a file name, as locally.
    """
    with tempfile.TemporaryDirectory(prefix="omnimem-upload-") as folder:
        path = Path(folder) / safe_name(upload.filename)
        with path.open("wb") as out:
            shutil.copyfileobj(upload.file, out, 1 << 20)
        size = path.stat().st_size
        if size == 0:
            raise EmptyMediaError("the uploaded file is empty")
        if size > limit:
            raise PayloadTooLargeError(f"the uploaded file is larger than {limit} bytes")
        yield path.read_bytes() if path.name == ANONYMOUS_UPLOAD else path
