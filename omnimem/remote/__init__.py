"""The HTTP client engine: :mod:`.engine` (``RemoteEngine``, behind ``Memory(url="http(s)://...")``) over :mod:`.transport`.

A face: this module only re-exports (``omnimem.remote.RemoteMemory``, an alias of ``Memory``, keeps working).
"""

from omnimem.memory import Memory as RemoteMemory
from omnimem.remote.engine import RemoteEngine

__all__ = ["RemoteEngine", "RemoteMemory"]
