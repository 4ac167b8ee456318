"""Faces of the old ``omnimem.ingest`` paths: the rooms themselves live in :mod:`omnimem.engine.ingest`."""
