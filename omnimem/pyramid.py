"""Pyramid retrieval: how much of each hit goes into the context.

Level 1 is the summary line of each candidate, level 2 swaps in the full text
for candidates at least ``theta`` similar to the query, level 3 attaches raw
content. Every step spends from one token budget, so the rendered context never
exceeds it. Pure functions: the loaders for cold-tier content are passed in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from omnimem.mau import MAU
from omnimem.timeparse import format_time
from omnimem.tokens import count_tokens


@dataclass(frozen=True, slots=True)
class RawContent:
    """Raw content attached at level 3: a textual stand-in plus the payload.

    ``text`` is what goes into a text prompt (and what is counted); ``data``
    and ``mime`` let a multimodal prompt include the real bytes.
    """

    text: str
    mime: str
    data: bytes | None = None
    tokens: int | None = None  # explicit cost when the payload is not text

    def cost(self) -> int:
        return self.tokens if self.tokens is not None else count_tokens(self.text)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A retrieved unit before packing: rank order is the list order."""

    unit: MAU
    score: float
    sources: frozenset[str]


@dataclass(frozen=True, slots=True)
class Hit:
    """One unit in the context, with the pyramid level it reached."""

    unit: MAU
    score: float
    level: int
    rank: int
    sources: frozenset[str]
    text: str
    tokens: int
    raw: RawContent | None = None

    def render(self) -> str:
        return self.text if self.raw is None else f"{self.text}\n{self.raw.text}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "score": round(self.score, 6),
            "level": self.level,
            "sources": sorted(self.sources),
            "tokens": self.tokens,
            "unit": self.unit.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class Context:
    """What a search returns: ranked hits, their levels and the tokens used."""

    query: str
    hits: tuple[Hit, ...]
    tokens: int
    budget: int
    candidates: int = 0
    dropped: tuple[str, ...] = field(default=())
    graph: dict[str, Any] | None = None  # what graph expansion did, when it ran
    packing: str = "line"

    def render(self) -> str:
        """Prompt-ready text; ``count_tokens(render()) == tokens``.

        ``line`` packing: one ``[time] speaker: text`` line per hit, in rank
        order. ``session`` packing: hits grouped by session and time under one
        ``[time]`` header, groups in chronological order, so a conversation
        reads as one and its date is paid once.
        """
        if self.packing == "line":
            return "\n".join(hit.render() for hit in self.hits)
        groups: dict[tuple[Any, ...], list[Hit]] = {}
        for hit in sorted(self.hits, key=lambda h: _chronological(h.unit)):
            groups.setdefault(group_key(hit.unit), []).append(hit)
        lines: list[str] = []
        for members in groups.values():
            lines.append(group_header(members[0].unit))
            lines.extend(hit.render() for hit in members)
        return "\n".join(lines)

    def levels(self) -> dict[int, int]:
        counts = {1: 0, 2: 0, 3: 0}
        for hit in self.hits:
            counts[hit.level] += 1
        return counts

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "tokens": self.tokens,
            "budget": self.budget,
            "candidates": self.candidates,
            "dropped": list(self.dropped),
            "packing": self.packing,
            "graph": self.graph,
            "hits": [hit.to_dict() for hit in self.hits],
        }


def unit_line(unit: MAU, body: str) -> str:
    """One rendered memory: when, who, what."""
    return f"[{format_time(unit.event_time)}] {session_line(unit, body)}"


def session_line(unit: MAU, body: str) -> str:
    """A memory under its group header: who and what."""
    who = f"{unit.speaker}: " if unit.speaker else ""
    kind = "" if unit.modality.value == "text" else f"({unit.modality.value}) "
    return f"{kind}{who}{body}"


def group_key(unit: MAU) -> tuple[Any, ...]:
    """Hits of one session at one time share a header."""
    return (unit.scope.user_id, unit.scope.agent_id, unit.scope.session_id, unit.event_time)


def group_header(unit: MAU) -> str:
    return f"[{format_time(unit.event_time)}]"


def _chronological(unit: MAU) -> tuple[Any, ...]:
    return (unit.event_time is None, unit.event_time or unit.record_time, unit.record_time)


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
) -> Context:
    """Pack ``candidates`` into a context of at most ``budget`` tokens.

    Level 1 goes in rank order and skips a line that does not fit (a later,
    shorter one may). Levels 2 and 3 are then spent greedily by similarity per
    extra token, so the budget goes where it buys the most relevance. With
    ``session`` packing a group header is charged when its first hit enters.
    """
    if packing not in ("line", "session"):
        raise ValueError(f"unknown packing {packing!r}")
    line = unit_line if packing == "line" else session_line
    hits: list[Hit] = []
    dropped: list[str] = []
    groups: set[tuple[Any, ...]] = set()
    used = 0
    for rank, cand in enumerate(candidates, start=1):
        text = line(cand.unit, cand.unit.summary)
        cost = count_tokens(text)
        key = group_key(cand.unit)
        header = 0 if packing == "line" or key in groups else count_tokens(group_header(cand.unit))
        if used + cost + header > budget:
            dropped.append(cand.unit.id)
            continue
        used += cost + header
        if packing == "session":
            groups.add(key)
        hits.append(Hit(cand.unit, cand.score, 1, rank, cand.sources, text, cost))

    if max_level >= 2:
        used = _upgrade(hits, used, budget, lambda h: _level2(h, theta, full_text, line))
    if max_level >= 3:
        used = _upgrade(hits, used, budget, lambda h: _level3(h, raw_content))
    return Context(query, tuple(hits), used, budget, len(candidates), tuple(dropped), packing=packing)


def _level2(
    hit: Hit, theta: float, full_text: Callable[[MAU], str | None], line: Callable[[MAU, str], str]
) -> Hit | None:
    if hit.score < theta:
        return None
    full = full_text(hit.unit)
    if full is None:
        return None
    if full == hit.unit.summary:  # nothing more to show, but the hit earned level 2
        return replace(hit, level=2)
    text = line(hit.unit, full)
    return replace(hit, level=2, text=text, tokens=count_tokens(text))


def _level3(hit: Hit, raw_content: Callable[[MAU], RawContent | None]) -> Hit | None:
    raw = raw_content(hit.unit)
    if raw is None:
        return None
    return replace(hit, level=3, raw=raw, tokens=hit.tokens + raw.cost())


def _upgrade(hits: list[Hit], used: int, budget: int, propose: Callable[[Hit], Hit | None]) -> int:
    """Apply upgrades greedily by score per extra token while they fit."""
    offers: list[tuple[float, int, Hit]] = []
    for i, hit in enumerate(hits):
        better = propose(hit)
        if better is not None:
            extra = better.tokens - hit.tokens
            offers.append((hit.score / max(extra, 1), i, better))
    offers.sort(key=lambda o: (-o[0], o[1]))
    for _, i, better in offers:
        extra = better.tokens - hits[i].tokens
        if used + extra <= budget:
            hits[i] = better
            used += extra
    return used
