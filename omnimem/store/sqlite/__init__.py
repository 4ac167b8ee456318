"""The embedded SQLite backend, mirroring :mod:`omnimem.store.postgres`.

- :mod:`.store`: the ``UnitStore`` contract (``SQLiteStore``); :mod:`.unit_rows`: row <-> unit;
- :mod:`.schema`: named, versioned migrations; :mod:`.opening`: what a read-only open may skip;
- :mod:`.graph`: ``GraphRows``; :mod:`.jobs`: the job queue; :mod:`.keys`: API keys.

A face: this module only re-exports ``SQLiteStore`` (``omnimem.store.sqlite.SQLiteStore`` keeps working).
"""

from omnimem.store.sqlite.store import SQLiteStore

__all__ = ["SQLiteStore"]
