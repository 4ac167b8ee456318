"""Ranking signals read from the best fused candidates: extra ranked lists for reciprocal rank fusion.

Dense and BM25 see each unit alone. Some evidence only shows across units
or in their fields, so after the first fusion the rows of its head (the
first ``signal_depth`` candidates) are read, and each signal that is on
turns them into one more ranked list, fused with the other two at its
weight (a unit absent from a list gets nothing from it):

- ``speaker``: the query names a speaker of one of these units (a word of
  the query equals the speaker's name, compared case-folded, as a field,
  not a name list): that speaker's units, in fused order. "What did Alex
  paint?" is about Alex's turns, not Sam's answers to them.
- ``session``: units by the evidence of their session (the sum of the fused
  scores of its units in the head), then in fused order: the turns of the
  sessions that hold most of the evidence (LongMemEval's authors rank
  sessions, then turns within the best ones).
- ``time``: a relative time in the query ("last week", "two months ago",
  "in March", read against the search's ``now``,
  :func:`omnimem.timeparse.query_window`) selects the units whose event time
  falls in that window, in fused order.
- ``recency``: the head's units newest first by event time, so that of two
  statements of a changed fact the latest ranks higher.
- ``statement``: the head's units that state something (at least
  ``informative_words`` content words outside their questions), in fused
  order. A turn that only asks ("Cool! What do you play?") shares a
  question's form and words, not its answer.
- ``reply``: the unit right after each of the head's units that asks
  something (a ``?`` in its text), when that reply is in the head too, in
  the order of the asking units. A turn that asks ("What did you paint?")
  shares the query's words; the turn after it holds the answer.

Every list holds only candidates of the first fusion, so nothing is added:
the signals re-order. Pseudo-relevance feedback (``prf_docs``) is not a list:
it moves the query vector towards the head's vectors and searches dense again
(Rocchio), done by the retriever before the fusion.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from omnimem.config import Settings
from omnimem.fusion import clear_wins_kept
from omnimem.mau import MAU, Scope
from omnimem.text import query_stop
from omnimem.timeparse import query_window

_WORD = re.compile(r"\w+")
LIMIT = 500_000  # rows whose facts are remembered
# the signals of what the query names and the retrievers do not score (a speaker it names is stripped from
# what they search): a unit they hold may pass one the retrievers clearly prefer (``signal_margin``)
FIELDS = ("speaker", "time")


@dataclass(frozen=True, slots=True)
class RowFacts:
    """What the signals read of a unit: fields no operation rewrites for its row id (an update is a new row)."""

    speaker: str | None
    event_time: datetime | None
    scope: Scope
    stated: int = 0  # content words outside the unit's questions (:func:`stated_words`)
    unit_id: str = ""
    prev_id: str | None = None  # the unit before it in its session, as first read (what the reply signal follows;
    #                              a delete that relinks the turns around it is not seen here: the signal only re-orders)
    asks: bool = False  # its text asks something (a "?" in it)


class FactCache:
    """Row facts per row id, fetched once (a search's head is mostly rows seen before); bounded, thread-safe
    (single dict operations), like the line facts of packing (:mod:`omnimem.engine.retrieval.line_costs`)."""

    def __init__(self, limit: int = LIMIT, *, statements: bool = False, replies: bool = False) -> None:
        self.limit = limit
        self.statements = statements  # count each row's stated words (the statement signal is on)
        self.replies = replies  # keep each row's id, the id before it and whether it asks (the reply signal is on)
        self._facts: dict[int, RowFacts] = {}

    def get(self, rids: Sequence[int], fetch: Callable[[list[int]], Mapping[int, MAU]]) -> dict[int, RowFacts]:
        """The facts of ``rids`` (rows gone from the store are left out)."""
        known = {rid: f for rid in rids if (f := self._facts.get(rid)) is not None}
        missing = [rid for rid in rids if rid not in known]
        if missing:
            if len(self._facts) + len(missing) > self.limit:
                self._facts = {}
            for rid, unit in fetch(missing).items():
                stated = stated_words(unit.summary) if self.statements else 0
                known[rid] = self._facts[rid] = RowFacts(
                    unit.speaker, unit.event_time, unit.scope, stated, unit.id, unit.links.prev_id,
                    "?" in unit.summary) if self.replies else RowFacts(unit.speaker, unit.event_time, unit.scope, stated)
        return known


class SpeakerMemo:
    """The speakers seen in the fused heads of each search scope (bounded, thread-safe by single dict
    operations). A query naming one of them is searched without the name from the first pass; the head of
    that pass is read anyway, and when its speakers say otherwise (a speaker since forgotten, a name that is
    no speaker here) the retriever searches again, so the memo only saves work, it decides nothing."""

    def __init__(self, limit: int = 10_000) -> None:
        self.limit = limit
        self._seen: dict[Scope, frozenset[str]] = {}

    def get(self, scope: Scope) -> frozenset[str]:
        return self._seen.get(scope, frozenset())

    def learn(self, scope: Scope, speakers: Sequence[str | None]) -> None:
        known = self._seen.get(scope, frozenset())
        new = {s for s in speakers if s and s not in known}
        if new:
            if scope not in self._seen and len(self._seen) >= self.limit:
                self._seen = {}
            self._seen[scope] = known | new


@dataclass(frozen=True, slots=True)
class Signal:
    """One extra ranked list of row ids and its weight in the fusion."""

    name: str
    rids: list[int]
    weight: float


def wanted(settings: Settings) -> bool:
    """Whether any signal is on (the head's rows are then read; ``speaker_field`` needs ``speaker_weight``)."""
    return any(w > 0 for w in (settings.speaker_weight, settings.session_weight, settings.time_weight,
                               settings.recency_weight, settings.statement_weight, settings.reply_weight))


def named_speakers(query: str, speakers: Iterable[str | None]) -> set[str]:
    """The speakers among ``speakers`` whose name is in ``query`` (every word of it, case-folded)."""
    words = {w.casefold() for w in _WORD.findall(query)}
    named: set[str] = set()
    for speaker in set(speakers):
        if not speaker:
            continue
        parts = [w.casefold() for w in _WORD.findall(speaker)]
        if parts and all(p in words for p in parts):
            named.add(speaker)
    return named


def without_names(query: str, names: set[str]) -> str:
    """``query`` without the words of these speakers' names (the query unchanged if nothing else is left)."""
    drop = {w.casefold() for name in names for w in _WORD.findall(name)}
    if not drop:
        return query
    rest = " ".join(_WORD.sub(lambda m: "" if m.group(0).casefold() in drop else m.group(0), query).split())
    return rest if _WORD.search(rest) else query


def signals(query: str, head: Sequence[int], rows: Mapping[int, RowFacts], fused: Mapping[int, float],
            settings: Settings, now: datetime, named: set[str]) -> list[Signal]:
    """The extra ranked lists the settings ask for, over the head's rows (in fused order).

    ``named``: the speakers the query names (:func:`named_speakers`).
    """
    present = [rid for rid in head if rid in rows]
    out: list[Signal] = []
    if settings.speaker_weight > 0:
        if named:
            out.append(Signal("speaker", [r for r in present if rows[r].speaker in named], settings.speaker_weight))
    if settings.session_weight > 0:
        mass: dict[object, float] = {}
        for r in present:
            key = rows[r].scope
            mass[key] = mass.get(key, 0.0) + fused.get(r, 0.0)
        position = {r: i for i, r in enumerate(present)}
        by_session = sorted(present, key=lambda r: (-mass[rows[r].scope], position[r]))
        out.append(Signal("session", by_session, settings.session_weight))
    if settings.time_weight > 0:
        window = query_window(query, now)
        if window is not None:
            start, end = window
            inside = [r for r in present if (t := rows[r].event_time) is not None and start <= t < end]
            if inside:
                out.append(Signal("time", inside, settings.time_weight))
    if settings.recency_weight > 0:
        dated = [r for r in present if rows[r].event_time is not None]
        position = {r: i for i, r in enumerate(dated)}
        newest = sorted(dated, key=lambda r: (-_stamp(rows[r].event_time), position[r]))
        out.append(Signal("recency", newest, settings.recency_weight))
    if settings.statement_weight > 0:
        stating = [r for r in present if rows[r].stated >= settings.informative_words]
        if stating:
            out.append(Signal("statement", stating, settings.statement_weight))
    if settings.reply_weight > 0:
        after = {f.prev_id: r for r in present if (f := rows[r]).prev_id is not None}
        replies = [v for r in present if rows[r].asks and (v := after.get(rows[r].unit_id)) is not None]
        if replies:
            out.append(Signal("reply", list(dict.fromkeys(replies)), settings.reply_weight))
    return out


def bounded(order: list[int], plain: Sequence[int], dense: Sequence[tuple[int, float]],
            sparse: Sequence[tuple[int, float]], extra: Sequence[Signal], settings: Settings) -> list[int]:
    """``order`` (fused with the ``extra`` lists) with no unit lifted above one that dense and BM25 clearly
    prefer (:func:`omnimem.fusion.clear_wins_kept`, ``signal_margin``; 0: ``order`` as it is); ``plain`` is
    the fusion of the two alone. A unit the speaker or time list holds is not clearly worse than one it
    does not hold (:data:`FIELDS`)."""
    if settings.signal_margin <= 0:
        return order
    return clear_wins_kept(order, plain, dense, sparse, (r for x in extra for r in x.rids),
                           margin=settings.signal_margin, fields=[set(x.rids) for x in extra if x.name in FIELDS])


_SENTENCE = re.compile(r"[^.!?]+[.!?]*")


def stated_words(text: str) -> int:
    """How many content words (no stop words) ``text`` has outside its questions (sentences ending in ``?``)."""
    stop = query_stop()
    return sum(1 for sentence in _SENTENCE.findall(text) if not sentence.rstrip().endswith("?")
               for w in _WORD.findall(sentence) if w.lower() not in stop)


def _stamp(when: datetime | None) -> float:
    return when.timestamp() if when is not None else float("-inf")


def feedback_vector(qvec: np.ndarray, vectors: Sequence[np.ndarray], weight: float) -> np.ndarray:
    """Rocchio: the query vector moved towards the mean of the feedback vectors, normalised again."""
    if not vectors:
        return qvec
    moved = qvec.astype(np.float32) + weight * np.mean(np.stack(vectors), axis=0).astype(np.float32)
    norm = float(np.linalg.norm(moved))
    return moved / norm if norm > 0 else qvec
