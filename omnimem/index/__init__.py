"""Search indexes derived from the hot tier: dense (FAISS) and sparse (BM25)."""

from omnimem.index.dense import DenseIndex
from omnimem.index.sparse import SparseIndex

__all__ = ["DenseIndex", "SparseIndex"]
