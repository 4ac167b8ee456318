"""A face: ``omnimem.ingest.prepare.AddResult`` keeps working; it lives in :mod:`omnimem.engine.ingest.prepare`."""

from omnimem.engine.ingest.prepare import AddResult

__all__ = ["AddResult"]
