"""omnimem: lifelong, multimodal memory for AI agents."""

from omnimem.config import Settings
from omnimem.errors import (
    ConfigError,
    EmbedderMismatchError,
    InvalidInputError,
    InvalidTimeError,
    MalformedDataError,
    MissingDependencyError,
    NotAStoreError,
    NotFoundError,
    OmnimemError,
    ReadOnlyStoreError,
    SchemaVersionError,
    StoreError,
)
from omnimem.mau import MAU, Links, Modality, Scope
from omnimem.memory import LocalMemory, Memory
from omnimem.memory import Memory as RemoteMemory  # an alias: Memory(url="http(s)://...") is the remote client
from omnimem.results import AddResult, Context, Hit, RawContent
from omnimem.remote.engine import RemoteEngine  # registers the engine of Memory(url="http(s)://...")

from omnimem.config import VERSION as __version__

__all__ = [
    "MAU",
    "AddResult",
    "ConfigError",
    "Context",
    "EmbedderMismatchError",
    "Hit",
    "InvalidInputError",
    "InvalidTimeError",
    "Links",
    "LocalMemory",
    "MalformedDataError",
    "Memory",
    "MissingDependencyError",
    "Modality",
    "NotAStoreError",
    "NotFoundError",
    "OmnimemError",
    "RawContent",
    "RemoteEngine",
    "ReadOnlyStoreError",
    "RemoteMemory",
    "Scope",
    "Settings",
    "SchemaVersionError",
    "StoreError",
    "__version__",
]
