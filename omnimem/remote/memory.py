"""A face: ``omnimem.remote.memory.RemoteMemory`` keeps working.

``RemoteMemory`` is an alias of :class:`omnimem.memory.Memory`: ``RemoteMemory(url="http(s)://...",
api_key=...)`` is ``Memory(url=...)`` over :class:`omnimem.remote.engine.RemoteEngine`.
"""

from omnimem.memory import Memory as RemoteMemory

__all__ = ["RemoteMemory"]
