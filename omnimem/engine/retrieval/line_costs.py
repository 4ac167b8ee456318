"""What packing needs to know about a candidate's line, remembered per row id.

Packing a 6,000-token context weighs 300-600 candidates, and counting each
line's BPE tokens and fetching each candidate's row were most of a search's
time. A unit's line never changes for its row id: it is made of the unit's
speaker, summary, modality, metadata and time, which no operation rewrites in
place (an update is a new unit with a new row id, and row ids are never
reused). So the first time a row is a candidate its line is counted and its
facts (id, scope, session group, header) kept; later searches decide which
candidates fit the budget from these facts alone and fetch only the rows that
do. The results are the same as fetching and counting everything
(``tests/engine/retrieval/test_retrieval_identical.py``).

Short texts (the ``[time]`` headers of session packing) are remembered by
their text: calling the object counts a text. The caches are bounded
(cleared when full) and safe to share between threads (single dict
operations only).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from omnimem.mau import MAU, Modality, Scope
from omnimem.engine.retrieval.pyramid import brief, line_of, talk_facts
from omnimem.results import grouping, minute_of_day, time_stamp
from omnimem.engine.retrieval.shares import SourceKey, source_key
from omnimem.tokens import TokenCounter, count_many, count_tokens

LIMIT = 500_000  # rows remembered (a few hundred bytes each)
SHORT = 64  # texts up to this many characters are remembered by text
TEXTS = 20_000  # lines remembered by text (by_text: day-packed lines written without their speaker's name)
TEXT_CHARS = 1_000  # ... of up to this many characters

@dataclass(frozen=True, slots=True)
class LineFacts:
    """One unit's level-1 line as packing sees it."""

    unit_id: str
    scope: Scope
    cost: int  # tokens of its line (without the line break)
    key: tuple[Any, ...]  # its group (pyramid.grouping: session and time, or session and day)
    header: str  # its group's header text (grouped packings)
    header_cost: int  # tokens of that header (without the line break)
    stamp: str | None = None  # its time of day (day packing), written where the conversation resumes after a pause
    stamp_cost: int = 0  # tokens of that stamp
    minute: int | None = None  # the minute of the day its time shows (day packing: what decides the stamp)
    speaker: str | None = None  # with elide_speakers (day packing): the speaker its line starts with
    save: int = 0  # with elide_speakers: the tokens its line saves without that ``speaker: ``
    order: tuple[int, int, bool, int] | None = None  # with elide_speakers: its place in its group (talk_order)
    when: int | None = None  # with elide_speakers: its time in microseconds ("auto" compares the line above's)
    short: bool = False  # a text unit without cold-tier content: its full text is its summary (never whole)
    trust: str = "trusted"  # its unit's trust when its line was made (fenced below trusted, with fence on)
    source: str = "user"  # its unit's source kind and actor: the source max_source_share counts its line against
    actor: str | None = None

    @property
    def fenced(self) -> bool:
        return self.trust != "trusted"

    @property
    def capped(self) -> SourceKey:
        """The source its line counts against under ``max_source_share`` (None: trusted, never capped)."""
        return source_key(self.source, self.actor, self.trust)


class LineCosts:
    """Line facts per (row id, packing), and a counter that remembers short texts."""

    def __init__(self, count: TokenCounter, *, limit: int = LIMIT, words: int = 0, elide: bool = False,
                 fence: bool = False) -> None:
        self.count = count
        self.fence = fence  # the engine's fence_untrusted: the lines of units below trusted are fenced
        self.elide = elide  # the engine's elide_speakers: day packing also learns each line's speaker facts
        self.limit = limit
        self.words = words  # the engine's line_words (a summary of a longer text says at most this many words)
        # per packing, by row id (a lookup per candidate: an int key, no tuple made and hashed)
        self._facts: dict[str, dict[int, LineFacts]] = {}
        self._breaks: dict[str, dict[int, int]] = {}  # tokens of a row's line followed by a line break
        self._short = _TextCounts(count, SHORT, limit)  # the group headers packing charges again and again
        # the lines a context writes without the speaker's name, which no row's remembered line is: they recur
        self.by_text = _TextCounts(count, TEXT_CHARS, TEXTS)
        self._lines: dict[str, dict[int, str]] = {}  # each row's level-1 line
        self.hits = 0
        self.misses = 0

    def __call__(self, text: str) -> int:
        """``count(text)``, remembered for short texts."""
        return self._short(text)

    def known(self, rids: Sequence[int], packing: str) -> dict[int, LineFacts]:
        """The remembered facts of those of ``rids`` seen before."""
        table = self._facts.get(packing)
        if table is None:
            return {}
        get = table.get
        out = {rid: facts for rid in rids if (facts := get(rid)) is not None}
        self.hits += len(out)
        return out

    def learn(self, units: Sequence[tuple[int | None, MAU]], packing: str) -> list[LineFacts]:
        """Count the lines of ``units`` and remember them (``None`` row ids are not remembered)."""
        line = line_of(packing, self.fence)
        key, group_header = grouping(packing)
        day = packing == "day"
        texts = [line(unit, brief(unit, self.words)) for _, unit in units]
        costs = count_many(texts, threads=False) if self.count is count_tokens else [self.count(t) for t in texts]
        facts_of = _table(self._facts, packing, len(units), self.limit)
        lines_of = _table(self._lines, packing, len(units), self.limit)
        out = []
        talk = (talk_facts([u for _, u in units], [rid for rid, _ in units], texts, costs, self)
                if day and self.elide else None)
        for n, ((rid, unit), cost, text) in enumerate(zip(units, costs, texts)):
            header = group_header(unit)
            stamp = time_stamp(unit) if day else None
            speaker, save, order, when = ((talk[0][n], talk[1][n], talk[2][n], talk[3][n]) if talk is not None
                                          else (None, 0, None, None))
            facts = LineFacts(unit.id, unit.scope, cost, key(unit), header, self(header), stamp,
                              0 if stamp is None else self(stamp), minute_of_day(unit) if day else None,
                              speaker, save, order, when, unit.modality is Modality.TEXT and unit.raw_ref is None,
                              unit.trust, unit.source, unit.actor)
            if rid is not None:
                facts_of[rid] = facts
                lines_of[rid] = text  # what packing shows of it (:meth:`line`): made once
            out.append(facts)
        self.misses += len(units)
        return out

    def line(self, rid: int, unit: MAU, packing: str) -> str:
        """Row ``rid``'s level-1 line (``unit`` is its unit), remembered per row id like its cost."""
        table = self._lines.get(packing)
        text = None if table is None else table.get(rid)
        if text is None:
            text = _table(self._lines, packing, 1, self.limit)[rid] = line_of(packing, self.fence)(
                unit, brief(unit, self.words))
        return text

    def forget(self, rids: Sequence[int]) -> None:
        """Drop what is remembered of these rows (their trust changed, so their fenced lines did)."""
        for tables in (self._facts, self._breaks, self._lines):
            for table in tables.values():
                for rid in rids:
                    table.pop(rid, None)

    def with_breaks(self, rows: Sequence[tuple[int, str]], packing: str) -> list[int]:
        """``count(line + "\\n")`` of each (row id, its level-1 line), remembered per row id.

        What :func:`omnimem.tokens.count_joined` needs to count a rendered
        context without encoding it again: the rows in a context are mostly the
        same from one search to the next.
        """
        out: list[int] = []
        table = _table(self._breaks, packing, len(rows), self.limit)
        for rid, line in rows:
            cost = table.get(rid)
            if cost is None:
                cost = table[rid] = self.count(line + "\n")
            out.append(cost)
        return out

    def costs(self, units: Sequence[tuple[int | None, MAU]], packing: str) -> list[int]:
        """The cost of each unit's level-1 line."""
        known = self.known([rid for rid, _ in units if rid is not None], packing)
        stale = [rid for rid, unit in units if rid is not None and rid in known and known[rid].trust != unit.trust]
        if stale:  # an admin changed their trust: learnt again
            self.forget(stale)
            known = {rid: facts for rid, facts in known.items() if rid not in stale}
        todo = [(rid, unit) for rid, unit in units if rid is None or rid not in known]
        learnt = iter(self.learn(todo, packing))
        return [known[rid].cost if rid is not None and rid in known else next(learnt).cost for rid, _ in units]


class _TextCounts:
    """``count(text)``, remembered by text for texts up to ``chars`` characters (``limit`` of them at most: the
    table starts again when full)."""

    def __init__(self, count: TokenCounter, chars: int, limit: int) -> None:
        self.count, self.chars, self.limit = count, chars, limit
        self.table: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        if len(text) > self.chars:
            return self.count(text)
        cost = self.table.get(text)
        if cost is None:
            if len(self.table) >= self.limit:
                self.table = {}
            cost = self.table[text] = self.count(text)
        return cost


def _table(tables: dict[str, dict[int, Any]], packing: str, adding: int, limit: int) -> dict[int, Any]:
    """The per-row table of one packing, emptied first when ``adding`` more rows would pass ``limit``."""
    table = tables.get(packing)
    if table is None or len(table) + adding > limit:
        table = tables[packing] = {}
    return table
