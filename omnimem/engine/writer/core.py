"""The writer's doors: adds, media checks, versions, changes, re-embedding, the job queue, closing.

Each door takes the locks it needs, checks the engine is open and writable,
and makes its change. An add is decided and built by an
:class:`~omnimem.engine.ingest.pipeline.Ingestor` (what to write: duplicates,
tombstones, novelty, summaries, the embedding call, the units) and written
here: units, derived rows (graph, CLIP), the audit event, supersessions and
jobs in one transaction of the store, then indexed, then the enrichment
workers woken. A change that must read and write without another writer in
between (a delete of a chain, a forget by selection, the links of an import)
is handed over as a function of :class:`Changes`, run under the locks.

Lock order: ``write_lock`` (one writer; searches never wait on it) before
``lock`` (store and index together, held briefly; searches take it to catch
up with other processes). Never call a door while holding either.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any, TypeVar

from omnimem.embed.base import Embedder, role_scheme
from omnimem.embed.query import with_fast_queries
from omnimem.engine.ingest.pipeline import BATCH, Built, Ingestor, Progress, Rows, count
from omnimem.results import AddResult
from omnimem.engine.ingest.prepare import Pending, check_storable, stamped
from omnimem.engine.deps import Deps
from omnimem.engine.state import WriterState
from omnimem.contract.caller import acting_as, current_actor
from omnimem.engine.writer.group import GroupCommit
from omnimem.engine.writer.written import Call, Decided, Verdict, Written
from omnimem.mau import MAU, Links, Modality, Scope, search_text
from omnimem.store.audit import AuditEvent
from omnimem.store.base import CandidateSearch, RowWriter, SearchFilter
from omnimem.store.jobs import Job
from omnimem.text import EmbedInput, embed_texts

T = TypeVar("T")
Failure = tuple[int, Exception]  # which plan's transaction failed (the plans after it were not written), and why
STEP = 32  # units per transaction of a large call while other adds keep arriving (else ``BATCH``)


def raise_failure(outcome: tuple[list[Written], Failure | None]) -> list[Written]:
    """What :meth:`Writer.write` wrote for one call, or that call's error raised."""
    written, failure = outcome
    if failure is not None:
        raise failure[1]
    return written


class Changes:
    """What a change handed to :meth:`Writer.change` may write; it runs under the writer's locks."""

    def __init__(self, deps: Deps, state: WriterState) -> None:
        self._deps = deps
        self._state = state

    def remove(self, ids: list[str], event: AuditEvent, forgotten: Scope | None = None) -> None:
        """Delete units everywhere, then scrub: rewrite index files, checkpoint the WAL."""
        store, search = self._deps.store, self._state.search
        search.sync()
        removed = store.delete(ids, event=event, forgotten=forgotten)
        if removed:
            search.removed([rid for rid, _ in removed], store.last_write_seq)
        search.save()  # the files on disk must not keep forgotten vectors or words
        store.scrub()

    def supersede(self, pairs: dict[str, list[str]], event: AuditEvent) -> None:
        """Mark the units of each value superseded by their key, and log ``event``."""
        self._deps.store.supersede(pairs, event)
        self._state.search.sync()

    def log(self, event: AuditEvent) -> None:
        self._deps.store.log(event)

    def set_trust(self, ids: list[str], trust: str, event: AuditEvent) -> int:
        """Give units another trust (their fenced lines change: packing learns them again), and log ``event``."""
        changed = self._deps.store.set_trust(ids, trust, event)
        self._state.search.sync()
        return changed


class Writer:
    """The one writer of an engine (see :mod:`omnimem.engine.writer`)."""

    def __init__(self, deps: Deps, state: WriterState, ingestor: Ingestor, *, max_items: int = BATCH) -> None:
        self.deps = deps
        self.state = state  # the writer's own: its locks, closed, the embedder and search it swaps
        self.ingestor = ingestor  # decides the engine's own adds (enrichment brings its own)
        self._group = GroupCommit(self, max_items)

    # -- adds ---------------------------------------------------------------------------------------------
    def add(
        self, items: Sequence[Pending], progress: Progress | None = None, *, keep_chain: bool = False,
        allow_forgotten: bool = False, action: str = "add", reason: str | None = None,
    ) -> list[AddResult]:
        """Store validated units; concurrent calls are written as one group (:mod:`omnimem.engine.writer.group`).

        Not grouped (written at once in the caller's thread): calls with a progress callback, media chains
        (``keep_chain`` or chained items) and calls of more than the group's ``max_items`` items.
        """
        check_storable(items)  # the caller's own bad input raises here, before it queues
        items = stamped(items, self.deps.actor)  # in the caller's thread: its channel and actor
        if progress is not None or keep_chain or len(items) > self._group.max_items or any(i.chain for i in items):
            return self.ingest(items, progress, keep_chain=keep_chain, allow_forgotten=allow_forgotten,
                               action=action, reason=reason)
        return self._group.add(items, allow_forgotten, action, reason)

    def ingest(
        self, items: Sequence[Pending], progress: Progress | None = None, *, ingestor: Ingestor | None = None,
        keep_chain: bool = False, allow_forgotten: bool = False, action: str = "add", reason: str | None = None,
    ) -> list[AddResult]:
        """Store validated units now, in batches of ``BATCH``, decided and built by ``ingestor``.

        A call of more than one batch (not a media chain) is written in steps (:meth:`_ingest_in_steps`), so other
        writers' adds are written between two of its batches instead of waiting for the whole call.
        """
        check_storable(items)
        items = stamped(items, self.deps.actor)
        ingestor = ingestor or self.ingestor
        if len(items) > BATCH and not keep_chain and not any(i.chain for i in items):
            return self._ingest_in_steps(ingestor, items, progress, allow_forgotten, action, reason)
        with self.state.write_lock:
            return self._ingest(ingestor, items, progress, keep_chain, allow_forgotten, action, reason)

    def add_unless(self, item: Pending, check: Callable[[], Verdict | None]) -> AddResult:
        """Store ``item`` unless ``check`` (run under the write lock, so no add slips in between) says why not."""
        check_storable([item])
        item = stamped([item], self.deps.actor)[0]
        with self.state.write_lock:
            self.state.check_open(write=True)
            verdict = check()
            if verdict is None:
                return self._ingest(self.ingestor, [item], None, False, False, "add", None)[0]
            result, counts = verdict
            self.add_stats(counts)
            return result

    def _ingest(
        self, ingestor: Ingestor, items: Sequence[Pending], progress: Progress | None, keep_chain: bool,
        allow_forgotten: bool, action: str, reason: str | None,
    ) -> list[AddResult]:
        self.state.check_open(write=True)
        if not keep_chain:
            ingestor.reset_chain()
        self.sync()
        results: list[AddResult] = []
        recent: dict[Scope, list[tuple[str, str]]] = {}
        for start in range(0, len(items), BATCH):
            batch = items[start : start + BATCH]
            plans = self.decide(ingestor, [Call(batch, allow_forgotten, action, reason, current_actor())], recent, {})
            raise_failure(self.write(ingestor, plans, self.build(ingestor, plans)))
            results.extend(r for r in plans[0].results if r is not None)
            if progress is not None:
                progress(len(batch))
        return results

    def _ingest_in_steps(
        self, ingestor: Ingestor, items: Sequence[Pending], progress: Progress | None, allow_forgotten: bool,
        action: str, reason: str | None,
    ) -> list[AddResult]:
        """A large call in steps: decide a batch, embed it, write it, each step giving way to queued adds.

        The write lock is held only to decide a batch and to write it, never to embed it; before each step the
        adds queued by then (another user's, say) are written first, and while adds keep arriving the batches
        are ``STEP`` units instead of ``BATCH``, so such an add waits for one short step, not for the call.
        Each batch is still one transaction, decided against everything stored before it (earlier batches and
        whatever was written in between); content another writer stores between a batch's decision and its
        write is found inside the write's transaction and reported as a duplicate (:meth:`insert`). A reader
        sees the call's batches as they commit; after a crash the committed batches stay, and a re-run stores
        only the rest.
        """
        state = self.state
        with state.write_lock:
            state.check_open(write=True)
            ingestor.reset_chain()
            self.sync()
        results: list[AddResult] = []
        start, took = 0, 0.0
        while start < len(items):
            self._group.give_way(took)
            began = time.monotonic()
            batch = items[start : start + (STEP if self._group.busy() else BATCH)]
            start += len(batch)
            with state.write_lock:
                state.check_open(write=True)
                plans = self.decide(ingestor, [Call(batch, allow_forgotten, action, reason, current_actor())], {}, {})
            # the model calls (embedding; with enrich="sync", graph extraction), outside the write lock
            built = self.build(ingestor, plans)
            if built is not None:
                plans[0].rows = ingestor.rows(plans[0].accepted, built, action, reason)
            with state.write_lock:
                state.check_open(write=True)
                written = raise_failure(self.write(ingestor, plans, built, propose=False))
            for done in written:  # supersession proposals ask the model: after the write lock is let go
                if done.propose:
                    self.propose(done)
            took = time.monotonic() - began
            results.extend(r for r in plans[0].results if r is not None)
            if progress is not None:
                progress(len(batch))
        return results

    # -- the write sequence: every add is decided, built and written by these three -----------------------------
    def decide(self, ingestor: Ingestor, calls: Sequence[Call], recent: dict[Scope, list[tuple[str, str]]],
               seen: dict[str, str]) -> list[Decided]:
        """Each call's fate of each item, in order, against one look-up of them all (the caller holds the write
        lock). ``recent`` and ``seen`` carry what earlier calls will store, so a later call is decided as if it
        came after them (two identical texts in a group: the first is stored, the second is its duplicate)."""
        known, forgotten = ingestor.lookup([item for call in calls for item in call.items],
                                          all(call.allow_forgotten for call in calls))
        plans = []
        for call in calls:
            counts: dict[str, float] = {}
            results, accepted = ingestor.decide(call.items, known, {} if call.allow_forgotten else forgotten,
                                               recent, seen, counts)
            plans.append(Decided(call, results, accepted, counts))
        return plans

    def build(self, ingestor: Ingestor, plans: Sequence[Decided]) -> Built | None:
        """Every accepted item of ``plans`` made into units in one embedding call (``None``: nothing to store)."""
        accepted = [entry for plan in plans for entry in plan.accepted]
        if not accepted:  # all duplicates, forgotten or redundant: nothing to embed
            return None
        return ingestor.build([item for _, item, _ in accepted], [unit_id for _, _, unit_id in accepted])

    def write(self, ingestor: Ingestor, plans: Sequence[Decided], built: Built | None, *,
              propose: bool = True) -> tuple[list[Written], Failure | None]:
        """Store each plan's units in its own transaction, index them all in one update, add all their counters
        in one write; then report each (:meth:`finish`). The caller holds the write lock.

        What was written, and the failure that stopped it: a transaction that fails (that call's error) leaves
        the plans after it unwritten. ``propose=False`` leaves the supersession proposals to the caller
        (:meth:`propose`, after it lets the lock go).
        """
        written: list[tuple[Decided, Written | None]] = []
        failure: Failure | None = None
        totals: dict[str, float] = {}
        start = 0
        with self.state.lock:
            for n, plan in enumerate(plans):
                stop = start + len(plan.accepted)
                done = None
                if plan.accepted:
                    assert built is not None
                    part = built if len(plans) == 1 else built.part(start, stop)
                    try:
                        with acting_as(plan.call.actor):
                            done = self.insert(ingestor, plan.accepted, part, plan.counts, plan.call.action,
                                               plan.call.reason, rows=plan.rows)
                    except Exception as exc:  # this call's error, raised in its caller's thread
                        failure = (n, exc)
                        break
                written.append((plan, done))
                for name, value in plan.counts.items():
                    totals[name] = totals.get(name, 0.0) + value
                start = stop
            self.index([w for _, w in written if w is not None])
            self.add_stats(totals)
        for plan, done in written:
            if done is not None:
                self.finish(ingestor, done, plan.results, propose=propose)
        return [w for _, w in written if w is not None], failure

    def insert(self, ingestor: Ingestor, accepted: list[tuple[int, Pending, str]], built: Built,
               counts: dict[str, float], action: str, reason: str | None, *, rows: Rows | None = None) -> Written:
        """Store built units in one transaction of the store (the caller holds both locks; not yet indexed).

        ``counts`` are corrected for units another process stored first (they are duplicates).
        """
        p = self.deps
        rows = rows if rows is not None else ingestor.rows(accepted, built, action, reason)
        stored_rows = p.store.insert(built.units, built.raw, derived=rows.derived, event=rows.event,
                                     supersedes=rows.supersedes, jobs=rows.jobs)
        stored = {u.id for _, u in stored_rows}
        # another process stored the same content between our check and our write (PostgreSQL: the store
        # re-checks under its lock and skips it): a duplicate, as if our check had seen it
        raced = {u.id: u for u in built.units if u.id not in stored}
        holders = p.store.find_hashes([u.content_hash for u in raced.values()]) if raced else {}
        for unit in raced.values():
            count(counts, f"{unit.modality.value}_stored", -1.0)
            count(counts, f"{unit.modality.value}_duplicate")
        vectors = [v for u, v in zip(built.units, built.vectors) if u.id in stored]
        return Written(accepted, built, stored_rows, vectors, raced, holders, bool(rows.jobs), rows.propose,
                       p.store.last_write_seq)

    def index(self, written: Sequence[Written]) -> None:
        """Index what :meth:`insert` stored, one call for all of it (the caller holds ``lock``)."""
        if not written:
            return
        rows = [row for w in written for row in w.rows]
        vectors = [v for w in written for v in w.vectors]
        self.state.search.added(rows, vectors, written[-1].write_seq, len(written))

    def finish(self, ingestor: Ingestor, written: Written, results: list[AddResult | None], *,
               propose: bool = True) -> None:
        """After the write: wake the workers, carry the media chain on, fill in results, propose supersession
        (``propose=False``: the caller does, with :meth:`propose`)."""
        if written.jobs:
            self.state.wake()
        ingestor.chained(written.built, written.raced, written.holders)
        for (pos, _, unit_id), unit in zip(written.accepted, written.built.units):
            results[pos] = (AddResult(None, False, "duplicate", 1.0, written.holders.get(unit.content_hash))
                            if unit_id in written.raced else AddResult(unit_id, True, "stored"))
        if written.propose and propose:
            self.propose(written)

    def propose(self, written: Written) -> None:
        """Ask the model which current units the written text units replace (``auto_supersede``)."""
        stored = {u.id for _, u in written.rows}
        texts = [(u, v) for u, v in zip(written.built.units, written.built.vectors)
                 if u.modality is Modality.TEXT and u.id in stored]
        self.propose_supersession([u for u, _ in texts], [v for _, v in texts])

    def add_stats(self, counts: dict[str, float]) -> None:
        """Add to the store's counters (what the write path decided: stored, duplicate, redundant, ...)."""
        if counts:
            with self.state.lock:
                self.deps.store.add_stats(counts)

    def write_version(self, unit: MAU, new_id: str, summary: str, metadata: dict[str, Any],
                      derive: Callable[[MAU], Sequence[RowWriter]], event: AuditEvent) -> MAU:
        """Embed and store a new version of ``unit`` (enrichment's: a new summary or caption) with its derived
        rows (``derive(version)``), superseding ``unit`` in one transaction; index it. The stored version."""
        p, state = self.deps, self.state
        settings = p.settings
        history: dict[Scope, list[str]] = {}
        if settings.embed_context:  # embedded with the same context as an add of it would be
            with state.reading():
                history[unit.scope] = [search_text(sp, su) for sp, su in
                                       p.store.recent_lines(unit.scope, settings.embed_context)]
        texts = embed_texts([EmbedInput(unit.scope, unit.speaker, summary, unit.modality, unit.event_time)],
                            context=settings.embed_context, dates=settings.embed_dates, history=history)
        vectors = state.embedder.embed(texts)
        version = replace(unit, id=new_id, summary=summary, record_time=datetime.now(timezone.utc),
                          links=Links(unit.links.prev_id, None, unit.source_ids), embedding=vectors[0],
                          metadata=metadata, superseded_by=None, superseded_at=None)
        derived = derive(version)
        with state.write_lock, state.lock:
            state.check_open(write=True)
            state.search.sync()
            rows = p.store.insert([version], {}, derived=derived, event=event, supersedes={new_id: [unit.id]})
            state.search.added(rows, vectors, p.store.last_write_seq)
        return rows[0][1]

    def propose_supersession(self, units: list[MAU], vectors: Any) -> None:
        """Ask the model which current units each new one replaces; apply and log its answer."""
        from omnimem.engine.ingest.supersede import propose

        p, state = self.deps, self.state
        assert p.llm is not None
        new_ids = {u.id for u in units}
        for unit, vector in zip(units, vectors):
            same_owner = Scope(unit.user_id, unit.agent_id, None)
            with state.lock:
                near = state.search.within(SearchFilter(same_owner)).dense(vector, 6)
                rows = p.store.get_rows([rid for rid, score in near if score >= 0.5])
            earlier = [u for u in rows.values() if u.id not in new_ids and u.active  # same user and agent only
                       and (u.user_id, u.agent_id) == (unit.user_id, unit.agent_id)
                       and u.record_time <= unit.record_time]  # a queued check never replaces later units
            chosen, why = propose(p.llm, unit, earlier[:5])
            if chosen:
                event = AuditEvent("supersede", f"llm:{p.llm.name}", (unit.id, *chosen), unit.scope,
                                   f"proposed by the model: {why}" if why else "proposed by the model")
                with state.lock:
                    Changes(p, state).supersede({unit.id: chosen}, event)

    # -- changes that read and write as one -------------------------------------------------------------------
    def change(self, body: Callable[[Changes], T]) -> T:
        """Run ``body`` with no other writer in between (deletes, forgets, an import's links and events)."""
        with self.state.write_lock, self.state.lock:
            self.state.check_open(write=True)
            return body(Changes(self.deps, self.state))

    def reembed(self, embedder: Embedder, vectors: Callable[[list[Any]], list[Any]],
                rebuild: Callable[[Embedder], CandidateSearch]) -> int:
        """Replace every stored vector by ``vectors(rows)`` (embedded with ``embedder``); then the engine, its
        search (``rebuild(embedder)``) and its graph use ``embedder``. How many units were re-embedded."""
        p, state = self.deps, self.state
        with state.write_lock, state.lock:
            state.check_open(write=True)
            rows = list(p.store.embed_rows())
            new = vectors(rows)
            p.store.replace_vectors([row[0] for row in rows], new, embedder.name, embedder.dim,
                                    AuditEvent("reembed", p.actor, (), details={"units": len(rows)},
                                               reason=f"{state.embedder.name} -> {embedder.name}"),
                                    role_scheme(embedder))
            state.embedder = with_fast_queries(embedder, p.settings.fast_queries)  # queries by a faster model if any
            state.search = rebuild(embedder)
            state.search.save()
            if p.graph is not None:  # entity resolution compares names with the same model
                p.graph.use_embedder(embedder.embed)
        return len(rows)

    # -- the job queue ------------------------------------------------------------------------------------------
    def claim(self, worker: str, lease_s: float, limit: int, kinds: Sequence[str]) -> list[Job]:
        """Lease up to ``limit`` due jobs of ``kinds`` (none once the engine is closed)."""
        with self.state.lock:
            if self.state.closed:
                return []
            return self.deps.store.claim(worker, lease_s, limit, kinds=kinds)

    def complete(self, job_id: int, worker: str, derived: Sequence[RowWriter], requires: Sequence[str]) -> bool:
        """Finish a job, writing its derived rows if ``requires`` are still current; False if the lease was lost."""
        with self.state.lock:
            return self.deps.store.complete(job_id, worker, derived=derived, requires=requires)

    def fail(self, job_id: int, worker: str, error: str, retry_at: float | None) -> None:
        with self.state.lock:
            self.deps.store.fail(job_id, worker, error, retry_at=retry_at)

    # -- catching up and closing ---------------------------------------------------------------------------------
    def exclusive(self, read: Callable[[], T]) -> T:
        """``read()`` with no write of this process in between (it holds the write lock while it runs)."""
        with self.state.write_lock:
            return read()

    def sync(self) -> None:
        """Index what other processes stored since the last look."""
        with self.state.lock:
            self.state.search.sync()

    def close(self) -> None:
        """Let the write in progress finish, persist the indexes and release the store. Safe to call twice."""
        p, state = self.deps, self.state
        with state.write_lock:
            with state.lock:
                if state.closed:
                    return
                state.closed = True  # no new search or write starts from here
            state.wait_for_reads()  # searches run outside the lock: let those in flight finish first
            with state.lock:
                try:
                    state.search.save()
                finally:
                    p.store.close()

    # -- the group commit's faces (tests make a burst form one group with them) --------------------------------
    def stats(self) -> dict[str, int]:
        """Adds that went through the group commit, the groups they were written in, and the largest group."""
        return self._group.stats()

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Within this block nothing is written (the write lock is held): arriving adds queue up."""
        with self.state.write_lock:
            yield

    def wait_queued(self, count: int, timeout: float) -> bool:
        """Block until ``count`` adds are queued (or ``timeout`` seconds pass); whether they are."""
        return self._group.wait_queued(count, timeout)
