"""The write path's rooms: validation, planning of enrichment jobs, the ingest pipeline, media and loaders."""
