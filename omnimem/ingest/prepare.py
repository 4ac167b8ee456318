"""A face: ``omnimem.ingest.prepare.AddResult`` keeps working; it lives in :mod:`omnimem.engine.ingest.prepare`."""

from omnimem.results import AddResult

__all__ = ["AddResult"]
