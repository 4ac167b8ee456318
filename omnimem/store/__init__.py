"""Storage backends behind the :class:`~omnimem.store.base.Store` protocol."""

from omnimem.store.base import Store, StoreMeta
from omnimem.store.sqlite.store import SQLiteStore

__all__ = ["SQLiteStore", "Store", "StoreMeta"]
