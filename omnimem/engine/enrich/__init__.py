"""Enrichment off the write path: model work runs as durable jobs, never in the caller's thread.

``add``/``add_dialogue``/media adds store each unit at once with what needs
no model (offline summary, embedding, text index), and enqueue its
enrichment in the same transaction (:mod:`omnimem.engine.ingest.plan`). Workers
(:mod:`omnimem.engine.enrich.worker`: threads of the engine, or ``omnimem worker``)
claim the jobs and run them (:mod:`omnimem.engine.enrich.jobs`): LLM restatement,
LLM summaries, vision captions, graph extraction and auto-supersession. An
enriched version replaces its unit through supersession (history kept, the
same source ids), never as a duplicate. The model calls themselves (summaries, restatement, supersession
proposals) live in :mod:`omnimem.engine.ingest`, a floor down: the write path makes them too.
"""
