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
from omnimem.memory import Memory
from omnimem.results import AddResult, Context, Hit, RawContent
from omnimem.remote.memory import RemoteMemory  # registers Memory(url="http(s)://...")

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
    "MalformedDataError",
    "Memory",
    "MissingDependencyError",
    "Modality",
    "NotAStoreError",
    "NotFoundError",
    "OmnimemError",
    "RawContent",
    "ReadOnlyStoreError",
    "RemoteMemory",
    "Scope",
    "Settings",
    "SchemaVersionError",
    "StoreError",
    "__version__",
]
