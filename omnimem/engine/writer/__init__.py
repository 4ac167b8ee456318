"""The engine's single writer: the only door through which anything is stored, and the owner of the locks.

Every change of an engine's store goes through one :class:`Writer`
(:mod:`omnimem.engine.writer.core`): adds (grouped with concurrent adds by
:mod:`omnimem.engine.writer.group`), media, updates, restatement, imports,
enrichment's versions, deletes and forgets, supersession, re-embedding and the
job queue's claims. It embeds, inserts (units with their derived rows, audit
event, supersessions and jobs in one transaction), indexes, wakes the
enrichment workers and closes the engine, holding ``WriterState.write_lock``
(one writer at a time) and ``WriterState.lock`` (store and index together)
while it does. The :class:`~omnimem.engine.state.WriterState` is the writer's:
only it sets ``closed`` and swaps the embedder and the search.
The work rooms (ingest, enrichment, lifecycle, governance) decide *what* to
write and hand it over; they take no lock and call no write method of the
store (``tests/architecture/test_write_path.py``).
"""

from omnimem.engine.writer.core import Changes, Writer

__all__ = ["Changes", "Writer"]
