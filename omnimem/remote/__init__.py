"""The HTTP client engine: :mod:`.engine` (``RemoteEngine``, behind ``Memory(url="http(s)://...")``) over :mod:`.transport`.

A face: this module only re-exports ``RemoteEngine``.
"""

from omnimem.remote.engine import RemoteEngine

__all__ = ["RemoteEngine"]
