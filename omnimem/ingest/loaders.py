"""A face: ``omnimem.ingest.loaders`` keeps working; the loaders live in :mod:`omnimem.engine.ingest.loaders`."""

from omnimem.engine.ingest.loaders import Dialogue, load_jsonl, load_locomo, locomo_turn_text

__all__ = ["Dialogue", "load_jsonl", "load_locomo", "locomo_turn_text"]
