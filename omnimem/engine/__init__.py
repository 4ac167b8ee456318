"""Engines behind the facade, and the contract they share (:mod:`omnimem.contract`).

``Memory()``, ``Memory(path=...)`` and ``Memory(url="postgresql://...")`` run on
:class:`omnimem.engine.local.LocalEngine` (this process); ``Memory(url="http(s)://...")``
on :class:`omnimem.remote.engine.RemoteEngine`, which the remote wing registers.
"""
