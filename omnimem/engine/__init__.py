"""Engines behind the facade: ``LocalEngine`` (embedded, in this process) today.

``Memory(path=...)`` and ``Memory()`` choose :class:`omnimem.engine.local.LocalEngine`;
the PostgreSQL and server engines will sit next to it, chosen by ``url=``.
"""
