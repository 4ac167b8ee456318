"""Benchmark support: data loaders, evidence ids and answer scoring (LoCoMo, Mem-Gallery)."""
