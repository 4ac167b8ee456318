"""What to write, decided without writing: checks, the ingestor, novelty, summaries, restatement, supersession
proposals, the jobs a batch needs, media as units, dumps, redaction. The writer and enrichment stand on it."""
