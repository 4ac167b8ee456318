"""Errors for media the caller hands us that we cannot read.

All are :class:`~omnimem.errors.InvalidInputError` (HTTP 400): the bytes are
the problem, not omnimem, and retrying with the same input cannot help.
"""

from __future__ import annotations

from omnimem.errors import InvalidInputError


class UnsupportedMediaError(InvalidInputError):
    """The bytes are not a format we can decode (or lack the stream we need)."""

    status = 415


class CorruptMediaError(InvalidInputError):
    """The format was recognised but the data is truncated or damaged."""


class EmptyMediaError(InvalidInputError):
    """The input holds no data: zero bytes, zero samples or zero frames."""


class MediaTooLargeError(InvalidInputError):
    """The media declares more pixels or seconds than the configured limit (checked before decoding)."""

    status = 413
