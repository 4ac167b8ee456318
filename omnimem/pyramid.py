"""A face: ``omnimem.pyramid`` keeps working; the pyramid lives in :mod:`omnimem.engine.retrieval.pyramid`."""

from omnimem.engine.retrieval.pyramid import build_context
from omnimem.results import Context, Hit, RawContent

__all__ = ["Context", "Hit", "RawContent", "build_context"]
