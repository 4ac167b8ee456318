"""Pyramid retrieval: how much of each hit goes into the context.

Level 1 is the summary line of each candidate, level 2 swaps in the full text
for candidates at least ``theta`` similar to the query, level 3 attaches raw
content. Every step spends from one token budget, so the rendered context never
exceeds it. Pure functions: the loaders for cold-tier content are passed in.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from typing import Any

from omnimem.context import FENCE_RULE, fence as fence_text, fenced_session_line, fenced_unit_line
from omnimem.engine.ingest.summarise import first_words
from omnimem.engine.retrieval.shares import OFF, Shares, SourceKey, shares_for, source_key
from omnimem.mau import MAU, Modality
from omnimem.results import (
    PACKINGS, STAMP_GAP, Context, Hit, RawContent, grouping, minute_of_day, session_line, speaker_of, time_stamp,
    unit_line,
)
from omnimem.tokens import TokenCounter, count_many, count_tokens


@dataclass(frozen=True, slots=True)
class Candidate:
    """A retrieved unit before packing: rank order is the list order."""

    unit: MAU
    score: float
    sources: frozenset[str]
    fused: float | None = None
    ranks: Mapping[str, int] = field(default_factory=dict)
    seq: int | None = None  # the unit's place in the order units were written (the store's row id)


NEWLINE = 1  # what packing charges for the line break before a line (BPE may merge it: an upper bound)
STAMP = 1  # what packing charges beyond a time stamp's own tokens (the space after it, an upper bound)

Line = Callable[[MAU, str], str]


def brief(unit: MAU, words: int) -> str:
    """What a unit's level-1 line says: its summary, held to ``words`` words (0: no limit) when it is the
    summary of a longer text (whose full text is in the cold tier and comes back at level 2).

    A long turn that is not shown whole cannot show its answer either: its line
    only tells the reader it exists and what it is about, so it is kept brief and
    the budget goes to more memories that can be read in full. What dense and
    BM25 index of the unit, and ``unit.summary``, are unchanged.
    """
    if words <= 0 or unit.raw_ref is None or unit.modality is not Modality.TEXT:
        return unit.summary
    return first_words(unit.summary, words)


def line_of(packing: str, fence: bool = False) -> Line:
    """How one hit's line is written: with its time (``line``), or under a group header; with ``fence``, the
    line of a unit below trusted is fenced (:func:`omnimem.context.fence`)."""
    if packing not in PACKINGS:
        raise ValueError(f"unknown packing {packing!r}")
    if fence:
        return fenced_unit_line if packing == "line" else fenced_session_line
    return unit_line if packing == "line" else session_line


def fence_facts(units: Sequence[MAU], fence: bool, count: TokenCounter) -> tuple[list[bool] | None, int]:
    """Which lines are fenced and what the fence rule costs (charged when the first of them enters)."""
    if not fence:
        return None, 0
    fenced = [u.trust != "trusted" for u in units]
    return fenced, count(FENCE_RULE) if any(fenced) else 0


def build_context(
    query: str,
    candidates: Sequence[Candidate],
    *,
    theta: float,
    budget: int,
    full_text: Callable[[MAU], str | None],
    raw_content: Callable[[MAU], RawContent | None],
    max_level: int = 3,
    packing: str = "line",
    count: TokenCounter = count_tokens,
    costs: Sequence[int] | None = None,
    whole_share: float = 0.0,
    whole_top: int = 0,
    line_words: int = 0,
    stamp_gap: int = STAMP_GAP,
    elide_speakers: bool | str = False,
    fence: bool = False,
    max_source_share: float = OFF,
) -> Context:
    """Pack ``candidates`` into a context of at most ``budget`` tokens.

    Level 1 goes in rank order and skips a line that does not fit (a later,
    shorter one may). With ``whole_share`` > 0 the best hits come whole first:
    in rank order, a hit whose full text is longer than its summary line is
    shown whole (level 2) while the context stays within that share of the
    budget, so the hits that matter most are read in full before summaries of
    many others fill the rest; the first ``whole_top`` hits are shown whole
    whenever they fit the budget at all. A hit not shown whole whose summary
    stands for a longer text says at most ``line_words`` words (:func:`brief`).
    Levels 2 and 3 are then spent greedily by
    similarity per extra token, so the budget goes where it buys the most
    relevance. Grouped packings charge a group header when its first hit
    enters (``day`` packing also the time stamps its lines get, ``stamp_gap``:
    :func:`omnimem.results.stamped`; with ``elide_speakers`` the ``speaker: ``
    a line omits where it goes on from the same speaker is not charged).
    Each line is charged its own tokens plus one for its line break; the
    rendered text is then counted exactly, so ``Context.tokens`` is the real
    count of ``Context.render()`` and never exceeds ``budget``. ``costs``, when
    given, are the candidates' level-1 line costs, already counted (see
    :mod:`omnimem.engine.retrieval.line_costs`). With ``fence`` the lines of units below trusted are fenced
    and the fence rule is charged when the first of them enters (:func:`fit_plan`). With
    ``max_source_share`` below 1 the lines of any one source below trusted take at most that share of
    ``budget`` (:mod:`omnimem.engine.retrieval.shares`).
    """
    line = line_of(packing, fence)
    texts = [line(c.unit, brief(c.unit, line_words)) for c in candidates]
    costs = list(costs) if costs is not None else _counts(texts, count)
    if len(costs) != len(texts):
        raise ValueError("one cost per candidate")
    units = [c.unit for c in candidates]
    grouped = grouped_facts(units, packing, count)
    talk = (talk_facts(units, [c.seq for c in candidates], texts, costs, count)
            if elide_speakers and packing == "day" else (None, None, None, None))
    wholes = WholeLines(lambda i: units[i], full_text, line, count)
    fenced, rule_cost = fence_facts(units, fence, count)
    shares = shares_for(budget, max_source_share)
    plan = fit_plan(costs, *grouped, budget=budget, fenced=fenced, rule_cost=rule_cost, shares=shares,
                    sources=None if shares is None else [source_key(u.source, u.actor, u.trust) for u in units],
                    whole=wholes.cost if max_level >= 2 and (whole_share > 0 or whole_top) else None,
                    allowance=int(budget * whole_share), top=whole_top if max_level >= 2 else 0, gap=stamp_gap,
                    speakers=talk[0], saves=talk[1], orders=talk[2],
                    times=talk[3] if elide_speakers == "auto" else None)
    hits: list[Hit] = []
    dropped: list[str] = []
    for i, (cand, text, cost, fits) in enumerate(zip(candidates, texts, costs, plan.enter)):
        if i in plan.whole:
            text, cost = wholes.lines[i]
            hits.append(Hit(cand.unit, cand.score, 2, i + 1, cand.sources, text, cost, None, cand.fused, cand.ranks,
                            cand.seq))
        elif fits:
            hits.append(Hit(cand.unit, cand.score, 1, i + 1, cand.sources, text, cost, None, cand.fused, cand.ranks,
                            cand.seq))
        else:
            dropped.append(cand.unit.id)
    return finish_context(query, hits, plan.used, len(candidates), dropped, theta=theta, budget=budget,
                          full_text=full_text, raw_content=raw_content, max_level=max_level, packing=packing,
                          count=count, stamp_gap=stamp_gap, elide_speakers=elide_speakers, fence=fence,
                          shares=shares)


class WholeLines:
    """Each candidate's whole-text line and its cost, made when packing first asks (the best few only)."""

    def __init__(self, unit: Callable[[int], MAU], full_text: Callable[[MAU], str | None], line: Line,
                 count: TokenCounter) -> None:
        self._unit, self._full, self._line, self._count = unit, full_text, line, count
        self.lines: dict[int, tuple[str, int]] = {}

    def cost(self, i: int) -> int | None:
        """Tokens of candidate ``i``'s line with its full text; None when that is its summary line."""
        unit = self._unit(i)
        full = self._full(unit)
        if full is None or full == unit.summary:
            return None
        text = self._line(unit, full)
        cost = self._count(text)
        self.lines[i] = (text, cost)
        return cost


def grouped_facts(units: Sequence[MAU], packing: str, count: TokenCounter) -> tuple[
        list[tuple[Any, ...]] | None, list[int] | None, list[int | None] | None, list[int] | None]:
    """Each unit's group, its header's cost, its time's minute of day and the cost of its time stamp, as
    :func:`fit_plan` takes them."""
    if packing == "line":
        return None, None, None, None
    key, header = grouping(packing)
    counted: dict[str, int] = {}

    def cost(text: str) -> int:
        if text not in counted:
            counted[text] = count(text)
        return counted[text]

    keys = [key(u) for u in units]
    header_costs = [cost(header(u)) for u in units]
    if packing != "day":
        return keys, header_costs, None, None
    stamps = [time_stamp(u) for u in units]
    return keys, header_costs, [minute_of_day(u) for u in units], [0 if s is None else cost(s) for s in stamps]


def talk_facts(units: Sequence[MAU], seqs: Sequence[int | None], texts: Sequence[str], costs: Sequence[int],
               count: TokenCounter
               ) -> tuple[list[str | None], list[int], list[tuple[int, int, bool, int]], list[int]]:
    """What ``elide_speakers`` needs of each line (:func:`fit_plan`): its speaker, the tokens its line saves
    without ``speaker: `` (its cost less the cost of the rest, never below 0), its place in spoken order
    (:func:`talk_order`) and its time in microseconds (what ``"auto"`` compares)."""
    speakers = [speaker_of(u) for u in units]
    saves = [0 if who is None or not text.startswith(f"{who}: ") else max(cost - count(text[len(who) + 2:]), 0)
             for who, text, cost in zip(speakers, texts, costs)]
    orders = [talk_order(u, seq) for u, seq in zip(units, seqs)]
    return speakers, saves, orders, [order[0] for order in orders]


def talk_order(unit: MAU, seq: int | None) -> tuple[int, int, bool, int]:
    """:func:`omnimem.results.spoken_order` in integers, which compare faster: the same order for the lines of
    a day-packed group, which all have a time (its microsecond, then the record time's, then the row id)."""
    return _micros(unit.event_time or unit.record_time), _micros(unit.record_time), seq is None, seq or 0


_EPOCH, _NAIVE_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc), datetime(1970, 1, 1)
_MICRO = timedelta(microseconds=1)


def _micros(when: datetime) -> int:
    """Microseconds since 1970, exactly: an aware time's instant, a naive time's wall clock (as they compare)."""
    return (when - (_EPOCH if when.tzinfo is not None else _NAIVE_EPOCH)) // _MICRO


def finish_context(
    query: str, hits: list[Hit], used: int, total: int, dropped: Sequence[str], *, theta: float, budget: int,
    full_text: Callable[[MAU], str | None], raw_content: Callable[[MAU], RawContent | None], max_level: int,
    packing: str, count: TokenCounter, measure: Callable[[Context], int] | None = None, stamp_gap: int = STAMP_GAP,
    elide_speakers: bool | str = False, fence: bool = False, shares: Shares | None = None,
) -> Context:
    """Levels 2 and 3 on top of the level-1 ``hits`` (rank order, ``used`` tokens), then the exact count.

    ``total`` is how many candidates were weighed, ``dropped`` the ids that did
    not fit at level 1. ``measure`` counts a context's rendered text (default:
    ``count(ctx.render())``); a caller that knows its lines' counts passes a
    faster one that gives the same number (:func:`omnimem.tokens.count_joined`). ``shares``: what each
    capped source took at level 1 (:func:`fit_plan`); an upgrade stays within its source's cap too.
    """
    line = line_of(packing, fence)
    if max_level >= 2:
        used = _upgrade(hits, used, budget, lambda h: _level2(h, theta, full_text, line, count), shares)
    if max_level >= 3:
        used = _upgrade(hits, used, budget, lambda h: _level3(h, raw_content, count, fence), shares)
    ctx = Context(query, tuple(hits), used, budget, total, tuple(dropped), packing=packing, stamp_gap=stamp_gap,
                  elide_speakers=elide_speakers, fence=fence)
    return _measured(ctx, measure or (lambda c: count(c.render())))


@dataclass(frozen=True, slots=True)
class FitPlan:
    """What enters at level 1 (``enter``), which of those come whole (``whole``), and the tokens used."""

    enter: list[bool]
    whole: set[int]
    used: int


def fit_plan(
    costs: Sequence[int], keys: Sequence[object] | None = None, header_costs: Sequence[int] | None = None,
    stamps: Sequence[int | None] | None = None, stamp_costs: Sequence[int] | None = None, *, budget: int,
    whole: Callable[[int], int | None] | None = None, allowance: int = 0, top: int = 0, gap: int = STAMP_GAP,
    speakers: Sequence[str | None] | None = None, saves: Sequence[int] | None = None,
    orders: Sequence[Any] | None = None, times: Sequence[Any] | None = None,
    fenced: Sequence[bool] | None = None, rule_cost: int = 0,
    shares: Shares | None = None, sources: Sequence[SourceKey] | None = None,
) -> FitPlan:
    """Which lines enter, in rank order, and the tokens they use: a tight loop over integers.

    A line that does not fit is skipped (a later, shorter one may fit). With a
    grouped packing (``keys``: each line's group) a group's header
    (``header_costs[i]``: the cost of line ``i``'s group header) is charged when
    its first line enters. With ``stamps`` (``day`` packing: each line's minute
    of day, :func:`omnimem.results.minute_of_day`) a group's lines are kept in
    time order: its header is its earliest line's, and a line is charged its
    time stamp (``stamp_costs[i]``) where it resumes at least ``gap`` minutes
    after the line before it (:func:`omnimem.results.stamped`), which only its
    neighbours decide, so adding a line changes at most its own stamp, the next
    line's and the header, and each is charged exactly (:class:`_Day`).
    ``whole(i)``, while the context is below ``allowance`` tokens, offers line
    ``i`` whole at that cost (None: no more than its line); it enters whole when
    that stays within ``allowance``; the first ``top`` lines are offered whole
    against the whole ``budget`` instead. With ``speakers`` (``day`` packing with
    ``elide_speakers``: each text line's speaker, :func:`talk_facts`) a line that
    goes on unstamped from a line of its speaker is charged ``saves[i]`` less,
    its group's lines kept in spoken order (``orders[i]``), which :class:`_Talk`
    charges exactly as :class:`_Day` does stamps; with ``times`` (``"auto"``)
    only where the two lines' times differ. With ``fenced`` (each line's: whether it is
    fenced) the fence rule (``rule_cost``) is charged, with its line break, when the
    first fenced line enters. With ``shares`` (and ``sources``: each line's source,
    :func:`omnimem.engine.retrieval.shares.source_key`) a line enters only where what it is charged keeps
    its source within the cap, and what it is charged is counted against its source. Needs only costs and
    groups, so a caller that remembers them can decide what fits before fetching any unit.
    """
    enter: list[bool] = []
    wholes: set[int] = set()
    charged: set[object] = set()
    days: dict[object, _Day] = {}
    day = stamps is not None and stamp_costs is not None and header_costs is not None
    used = 0
    ruled = fenced is None  # the fence rule is charged (or nothing is fenced)
    for i, cost in enumerate(costs):
        extra = NEWLINE
        if not ruled and fenced is not None and fenced[i]:
            extra += rule_cost + NEWLINE
        new: object = None
        timed: _Day | None = None
        if keys is not None and header_costs is not None:
            key = keys[i]
            if day and stamps is not None and stamps[i] is not None:
                timed = days.get(key)
                if timed is None:
                    extra += header_costs[i] + NEWLINE
                else:
                    extra += timed.offer(i)
            elif key not in charged:
                extra += header_costs[i] + NEWLINE
                new = key
        room = budget if i < top else allowance
        entered = False
        source = None if sources is None else sources[i]
        if whole is not None and used < room:
            full = whole(i)
            if full is not None and used + full + extra <= room and (shares is None
                                                                      or shares.fits(source, full + extra)):
                used += full + extra
                wholes.add(i)
                entered = True
                if shares is not None:
                    shares.take(source, full + extra)
        if not entered and used + cost + extra <= budget and (shares is None or shares.fits(source, cost + extra)):
            used += cost + extra
            entered = True
            if shares is not None:
                shares.take(source, cost + extra)
        enter.append(entered)
        if not entered:
            continue
        if not ruled and fenced is not None and fenced[i]:
            ruled = True
        if new is not None:
            charged.add(new)
        elif timed is not None:
            timed.take(i)
        elif day and keys is not None and stamps is not None and stamps[i] is not None:
            days[keys[i]] = (_Day(i, stamps, stamp_costs or (), header_costs or (), gap) if speakers is None else
                             _Talk(i, stamps, stamp_costs or (), header_costs or (), gap, speakers, saves or (),
                                   orders or (), times))
    return FitPlan(enter, wholes, used)


class _Day:
    """The lines of one day-packed group that entered, in time order, and what adding one more costs.

    A line's stamp depends only on the line before it (:func:`omnimem.results.stamped`),
    so a line put between ``a`` and ``b`` changes its own stamp and ``b``'s; put
    first, it changes the header (the group's first line's time) and the old
    first line's stamp.
    """

    def __init__(self, first: int, minutes: Sequence[int | None], stamp_costs: Sequence[int],
                 header_costs: Sequence[int], gap: int) -> None:
        self._minute, self._stamp, self._header, self._gap = minutes, stamp_costs, header_costs, max(gap, 1)
        self.at: list[int] = [self._of(first)]  # the entered lines' minutes, in order
        self.lines: list[int] = [first]

    def _of(self, i: int) -> int:
        minute = self._minute[i]
        assert minute is not None  # lines without a time are grouped apart (their day is None)
        return minute

    def offer(self, i: int) -> int:
        """The tokens adding line ``i`` changes (beyond its own line and break): header and stamps.

        :func:`omnimem.results.stamped`, inlined (this runs for every candidate of a search): a line
        gets its stamp when it is at least ``gap`` (>= 1) minutes after the line before it.
        """
        minute, at, gap, stamp = self._of(i), self.at, self._gap, self._stamp
        pos = bisect_right(at, minute)
        if pos == 0:  # the new first line: its header instead of the old first's, which may now get a stamp
            old = self.lines[0]
            return self._header[i] - self._header[old] + (stamp[old] + STAMP if at[0] - minute >= gap else 0)
        before = at[pos - 1]
        change = stamp[i] + STAMP if minute - before >= gap else 0
        if pos < len(at):  # the line after it: stamped after ``before`` until now, after ``minute`` from now
            later = at[pos]
            was, now = later - before >= gap, later - minute >= gap
            if was != now:
                after = stamp[self.lines[pos]] + STAMP
                change += after if now else -after
        return change

    def take(self, i: int) -> None:
        """Line ``i`` entered."""
        minute = self._of(i)
        pos = bisect_right(self.at, minute)
        self.at.insert(pos, minute)
        self.lines.insert(pos, i)


class _Talk(_Day):
    """:class:`_Day` with ``elide_speakers``: a line omits ``speaker: `` where it goes on, unstamped, from a
    line of the same speaker (:meth:`omnimem.results.Context.lines`), so adding a line changes at most its
    own prefix and the next line's, besides the stamps. Lines are kept in spoken order
    (:func:`omnimem.results.spoken_order`), the order they render in, since the speaker above depends on it.
    """

    def __init__(self, first: int, minutes: Sequence[int | None], stamp_costs: Sequence[int],
                 header_costs: Sequence[int], gap: int, speakers: Sequence[str | None], saves: Sequence[int],
                 orders: Sequence[Any], times: Sequence[Any] | None = None) -> None:
        super().__init__(first, minutes, stamp_costs, header_costs, gap)
        self._who, self._save, self._order = speakers, saves, orders
        self._when = times  # with "auto": each line's time; a name goes only under a line of another time
        self.keys: list[Any] = [orders[first]]
        self._placed = (-1, 0)  # (line, its place) of the last offer, for take

    def offer(self, i: int) -> int:
        """The tokens adding line ``i`` changes beyond its own line and break: header, stamps and prefixes.

        A line goes on from the line above it (and omits its name) where both have its speaker and, with
        ``times``, their times differ (:meth:`omnimem.results.Context.lines`)."""
        minute, at, lines, gap, stamp, save = self._of(i), self.at, self.lines, self._gap, self._stamp, self._save
        who, when = self._who, self._when
        pos = bisect_right(self.keys, self._order[i])
        self._placed = (i, pos)
        mine = who[i]
        if pos == 0:  # the new first line (after the header: never elided); the old first may now be either
            old = lines[0]
            change = self._header[i] - self._header[old]
            if at[0] - minute >= gap:
                return change + stamp[old] + STAMP
            on = mine is not None and who[old] == mine and (when is None or when[i] != when[old])
            return change - save[old] if on else change
        above, before = lines[pos - 1], at[pos - 1]
        if minute - before >= gap:
            change = stamp[i] + STAMP
        elif mine is not None and who[above] == mine and (when is None or when[above] != when[i]):
            change = -save[i]
        else:
            change = 0
        if pos < len(at):  # the line after it: its stamp and its prefix went on from ``above``, now from ``i``
            after, later = lines[pos], at[pos]
            was, now = later - before >= gap, later - minute >= gap
            if was != now:
                cost = stamp[after] + STAMP
                change += cost if now else -cost
            theirs = who[after]
            if theirs is not None:
                was_elided = not was and who[above] == theirs and (when is None or when[above] != when[after])
                now_elided = not now and mine == theirs and (when is None or when[i] != when[after])
                if was_elided != now_elided:
                    change += -save[after] if now_elided else save[after]
        return change

    def take(self, i: int) -> None:
        """Line ``i`` entered (just offered: its place is known)."""
        line, pos = self._placed
        if line != i:
            pos = bisect_right(self.keys, self._order[i])
        self.keys.insert(pos, self._order[i])
        self.at.insert(pos, self._of(i))
        self.lines.insert(pos, i)


def fit_lines(
    costs: Sequence[int], keys: Sequence[tuple[Any, ...]] | None, header: Callable[[int], str], *,
    budget: int, count: TokenCounter,
) -> tuple[list[bool], int]:
    """:func:`fit_plan` for lines grouped under headers whose text ``header(i)`` gives (line ``i``'s group)."""
    header_costs = None if keys is None else [count(header(i)) for i in range(len(costs))]
    plan = fit_plan(costs, keys, header_costs, budget=budget)
    return plan.enter, plan.used


def fit_costs(
    costs: Sequence[int], keys: Sequence[object] | None, header_costs: Sequence[int] | None, *, budget: int,
) -> tuple[list[bool], int]:
    """:func:`fit_plan` with each line's group header already counted (``header_costs[i]``: line ``i``'s)."""
    plan = fit_plan(costs, keys, header_costs, budget=budget)
    return plan.enter, plan.used


def reranked(ctx: Context, ranks: Sequence[int], dropped: Sequence[str], total: int) -> Context:
    """A context packed from the fitting candidates only, with the ranks and drops of all of them.

    ``ranks[i]`` is the rank among all candidates of the ``i``-th one packed,
    ``dropped`` the ids that did not fit at level 1, ``total`` how many
    candidates there were: the same context as packing all of them.
    """
    hits = tuple(replace(h, rank=ranks[h.rank - 1]) for h in ctx.hits)
    return replace(ctx, hits=hits, candidates=total, dropped=(*dropped, *ctx.dropped))


def _counts(texts: Sequence[str], count: TokenCounter) -> list[int]:
    return count_many(texts) if count is count_tokens else [count(t) for t in texts]


def _measured(ctx: Context, measure: Callable[[Context], int]) -> Context:
    """Count the rendered context exactly; drop the lowest-ranked hits in the rare case it overflows."""
    hits = list(ctx.hits)
    dropped = list(ctx.dropped)
    while True:
        ctx = replace(ctx, hits=tuple(hits), dropped=tuple(dropped))
        exact = measure(ctx) if hits else 0
        if exact <= ctx.budget or not hits:
            return replace(ctx, tokens=exact)
        last = max(hits, key=lambda h: h.rank)
        hits.remove(last)
        dropped.append(last.unit.id)


def _level2(
    hit: Hit, theta: float, full_text: Callable[[MAU], str | None], line: Callable[[MAU, str], str],
    count: TokenCounter,
) -> Hit | None:
    if hit.score < theta or hit.level >= 2:  # a hit packed whole is at level 2 already
        return None
    full = full_text(hit.unit)
    if full is None:
        return None
    if full == hit.unit.summary:  # nothing more to show, but the hit earned level 2 (built directly:
        return Hit(hit.unit, hit.score, 2, hit.rank, hit.sources, hit.text, hit.tokens, hit.raw,  # most hits)
                   hit.fused, hit.ranks, hit.seq)
    text = line(hit.unit, full)
    return replace(hit, level=2, text=text, tokens=count(text))


def _level3(hit: Hit, raw_content: Callable[[MAU], RawContent | None], count: TokenCounter,
            fence: bool = False) -> Hit | None:
    raw = raw_content(hit.unit)
    if raw is None:
        return None
    if fence and hit.fenced:  # its stand-in text is the unit's too: fenced like its line
        raw = replace(raw, text=fence_text(raw.text))
    return replace(hit, level=3, raw=raw, tokens=hit.tokens + raw.cost(count) + NEWLINE)


def _upgrade(hits: list[Hit], used: int, budget: int, propose: Callable[[Hit], Hit | None],
             shares: Shares | None = None) -> int:
    """Apply upgrades greedily by score per extra token while they fit (the budget, and ``shares``' cap)."""
    offers: list[tuple[float, int, Hit]] = []
    for i, hit in enumerate(hits):
        better = propose(hit)
        if better is not None:
            extra = better.tokens - hit.tokens
            offers.append((hit.score / max(extra, 1), i, better))
    offers.sort(key=lambda o: (-o[0], o[1]))
    for _, i, better in offers:
        extra = better.tokens - hits[i].tokens
        source = None if shares is None else source_key(better.unit.source, better.unit.actor, better.unit.trust)
        if used + extra <= budget and (shares is None or shares.fits(source, extra)):
            hits[i] = better
            used += extra
            if shares is not None:
                shares.take(source, extra)
    return used
