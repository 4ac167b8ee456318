"""The conversation loaders, read here by the benchmarks and tests: they live in :mod:`omnimem.contract.loaders`."""

from omnimem.contract.loaders import Dialogue, load_jsonl, load_locomo, locomo_turn_text

__all__ = ["Dialogue", "load_jsonl", "load_locomo", "locomo_turn_text"]
