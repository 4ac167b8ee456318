"""One exception root for everything omnimem raises on purpose.

Each class carries a stable ``code`` (its name) and an HTTP ``status`` so a
server can send it and a client can re-raise the same class.
"""

from __future__ import annotations


class OmnimemError(Exception):
    """Root of every error omnimem raises deliberately."""

    status: int = 500

    @property
    def code(self) -> str:
        return type(self).__name__


class InvalidInputError(OmnimemError, ValueError):
    """The caller passed something we cannot store or interpret."""

    status = 400


class InvalidTimeError(InvalidInputError):
    """A time string could not be parsed into a timezone-aware datetime."""


class MalformedDataError(InvalidInputError):
    """An input file (LoCoMo JSON, JSONL turns, ...) is not what it claims to be."""


class NotFoundError(OmnimemError, KeyError):
    """A unit (or other record) with the given id does not exist."""

    status = 404

    def __str__(self) -> str:  # KeyError quotes its message; we do not want that
        return str(self.args[0]) if self.args else self.code


class StoreError(OmnimemError):
    """The store on disk is missing, not a store, or unusable."""

    status = 500


class NotAStoreError(StoreError):
    """A folder exists but does not hold an omnimem store."""

    status = 400


class ReadOnlyStoreError(StoreError):
    """A write was asked of a store opened read-only (or that cannot be written)."""

    status = 409


class WriteConflictError(StoreError):
    """A write lost to concurrent writers (deadlock, serialisation failure) on every retry; nothing of it was
    stored and the same call can simply be made again."""

    status = 503


class EmbedderMismatchError(StoreError):
    """The store was built by a different embedder than the one configured."""

    status = 409


class SchemaVersionError(StoreError):
    """The store was written by a newer omnimem than this one."""

    status = 409


class ConfigError(OmnimemError):
    """Settings are contradictory or invalid."""

    status = 400


class MissingDependencyError(OmnimemError, ImportError):
    """An optional dependency is not installed; the message names the extra."""

    status = 501


class AuthError(OmnimemError):
    """A request carried no credentials, or a key that is unknown or revoked."""

    status = 401


class ForbiddenError(OmnimemError):
    """The caller is known but may not do this (its role is too low)."""

    status = 403


class ScopeError(ForbiddenError):
    """A scoped key asked for a user or agent other than its own."""


class CsrfError(ForbiddenError):
    """A cookie-authenticated write came without the session's CSRF token."""


class HostNotAllowedError(ForbiddenError):
    """A request named a Host the server does not answer for (``--allowed-host``): DNS rebinding is refused."""


class RequestTimeoutError(OmnimemError):
    """A request body did not arrive within the server's body timeout (``--body-timeout``)."""

    status = 408


class RateLimitError(OmnimemError):
    """Too many requests for this key; ``retry_after`` says when to try again (seconds)."""

    status = 429

    def __init__(self, message: str = "rate limit exceeded", retry_after: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after = float(retry_after)


class PayloadTooLargeError(InvalidInputError):
    """A request body or upload is larger than the server accepts."""

    status = 413


class RemoteUnsupportedError(OmnimemError, NotImplementedError):
    """Kept for code that catches it: a remote Memory now has no in-process members at all (``hasattr`` is False)."""

    status = 501


class RemoteError(OmnimemError):
    """A server could not be reached, or answered something that is not an omnimem reply."""

    status = 502


class InvalidExtractionError(InvalidInputError):
    """An extractor produced an entity or relation that cannot go into the graph."""


def all_error_classes() -> list[type[OmnimemError]]:
    """Every OmnimemError subclass defined so far (this module's and other modules'), root first."""
    found: list[type[OmnimemError]] = [OmnimemError]
    todo: list[type[OmnimemError]] = [OmnimemError]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in found:
                found.append(sub)
                todo.append(sub)
    return found


def error_class(code: str) -> type[OmnimemError]:
    """The class whose ``code`` is ``code`` (how a client re-raises a server's error); the root if unknown."""
    for cls in all_error_classes():
        if cls.__name__ == code:
            return cls
    return OmnimemError


def missing_extra(module: str, extra: str) -> MissingDependencyError:
    """Build the error raised when an optional import fails."""
    return MissingDependencyError(
        f"{module} is not installed; install it with: pip install 'omnimem[{extra}]'"
    )


def missing_dependency(missing: ModuleNotFoundError) -> Exception:
    """The error for an embedded memory whose own dependencies are not installed (a client-only install,
    ``pip install --no-deps omnimem``); ``missing`` itself when what is missing is a module of omnimem's."""
    if (missing.name or "omnimem").partition(".")[0] == "omnimem":
        return missing
    return MissingDependencyError(
        f"an embedded memory needs {missing.name}, one of omnimem's own dependencies, and it is not installed "
        "(a client-only install, pip install --no-deps omnimem, offers Memory(url='http://...') only): "
        "pip install omnimem")
