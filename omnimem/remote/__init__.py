"""The HTTP client engine: :mod:`.memory` (``RemoteMemory``, ``Memory(url="http(s)://...")``) over :mod:`.transport`.

A face: this module only re-exports ``RemoteMemory`` (``omnimem.remote.RemoteMemory`` keeps working).
"""

from omnimem.remote.memory import RemoteMemory

__all__ = ["RemoteMemory"]
