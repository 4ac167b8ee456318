"""A face: ``omnimem.pyramid`` keeps working; the pyramid lives in :mod:`omnimem.engine.retrieval.pyramid`."""

from omnimem.engine.retrieval.pyramid import Context, Hit, RawContent, build_context

__all__ = ["Context", "Hit", "RawContent", "build_context"]
