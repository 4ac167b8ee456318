"""Reliability and isolation: the reliability tests at nightly sizes, writers (dialogue stall, ingest race),
relative-time fuzzing and the scope probe (RELIABILITY.md, SECURITY.md)."""
