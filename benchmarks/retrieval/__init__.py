"""Retrieval: evidence recall on LoCoMo, LongMemEval and Mem-Gallery, QA, the retrieval targets, and what
retrieval options cost (packing, planner, reranker, query embedder, CPU kernels)."""
