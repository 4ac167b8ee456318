"""Parse evidence ids ("D<session>:<turn>") from benchmark QA records.

LoCoMo's ``evidence`` lists and Mem-Gallery's ``clue`` lists name the dialogue
turns that support an answer.  Almost all entries are clean ``"D1:3"`` ids, but
the published LoCoMo file holds a few odd ones.  The rules, applied per entry:

* Several ids in one string (``"D8:6; D9:17"``, ``"D9:1 D4:4 D4:6"``) are
  split on ``;``, ``,`` and whitespace, and each piece is parsed on its own.
* A stray colon between ``D`` and the session number (``"D:11:26"``) is
  dropped: ``D<s>:<t>`` is the only form with two numbers, so the intent is
  clear.  The result is ``"D11:26"``.
* Leading zeros are dropped (``"D30:05"`` -> ``"D30:5"``) because turn ids in
  the dialogues never have them.
* Anything else (``"D"``, ``""``, non-strings) is skipped with a reason, and
  a repeated id is kept once.

Every rewrite is recorded as a :class:`RepairedEvidence` and every dropped
entry as a :class:`SkippedEvidence`, so nothing changes silently.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

_ID = re.compile(r"D(?P<colon>:?)(?P<session>\d+):(?P<turn>\d+)")
_SEPARATORS = re.compile(r"[;,\s]+")

SPLIT = "several ids in one string"
STRAY_COLON = "stray colon after D"
LEADING_ZERO = "leading zeros"
NOT_A_STRING = "not a string"
EMPTY = "empty string"
UNPARSEABLE = "not a D<session>:<turn> id"
DUPLICATE = "duplicate id"


@dataclass(frozen=True)
class SkippedEvidence:
    """One raw entry (or one piece of it) that yielded no id."""

    raw: str
    reason: str


@dataclass(frozen=True)
class RepairedEvidence:
    """One raw entry that was rewritten into the listed ids."""

    raw: str
    ids: tuple[str, ...]
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class EvidenceParse:
    """The ids found in one evidence list, plus what was repaired or skipped."""

    ids: tuple[str, ...]
    repaired: tuple[RepairedEvidence, ...] = ()
    skipped: tuple[SkippedEvidence, ...] = ()


@dataclass(frozen=True)
class EvidenceSummary:
    """Counts over many evidence lists (a whole data set)."""

    lists: int
    empty_lists: int
    ids: int
    repaired: dict[str, int]
    skipped: dict[str, int]
    odd_forms: dict[str, int]


def split_evidence_id(evidence_id: str) -> tuple[int, int]:
    """Return ``(session, turn)`` for a normalised id such as ``"D1:3"``."""
    match = _ID.fullmatch(evidence_id)
    if match is None or match["colon"]:
        raise ValueError(f"not a normalised evidence id: {evidence_id!r}")
    return int(match["session"]), int(match["turn"])


def _parse_piece(piece: str) -> tuple[str | None, list[str]]:
    """Parse one whitespace-free piece; return its id (or None) and repair reasons."""
    match = _ID.fullmatch(piece)
    if match is None:
        return None, []
    session, turn = match["session"], match["turn"]
    normalised = f"D{int(session)}:{int(turn)}"
    reasons: list[str] = []
    if match["colon"]:
        reasons.append(STRAY_COLON)
    if normalised[1:] != f"{session}:{turn}":
        reasons.append(LEADING_ZERO)
    return normalised, reasons


def _parse_entry(entry: object) -> tuple[list[str], list[str], list[SkippedEvidence]]:
    """Parse one raw list entry into ids, repair reasons and skipped pieces."""
    if not isinstance(entry, str):
        return [], [], [SkippedEvidence(repr(entry), NOT_A_STRING)]
    pieces = [p for p in _SEPARATORS.split(entry.strip()) if p]
    if not pieces:
        return [], [], [SkippedEvidence(entry, EMPTY)]
    ids: list[str] = []
    reasons: list[str] = [SPLIT] if len(pieces) > 1 else []
    skipped: list[SkippedEvidence] = []
    for piece in pieces:
        parsed, piece_reasons = _parse_piece(piece)
        if parsed is None:
            skipped.append(SkippedEvidence(piece if len(pieces) > 1 else entry, UNPARSEABLE))
            continue
        ids.append(parsed)
        reasons.extend(r for r in piece_reasons if r not in reasons)
    return ids, reasons, skipped


def parse_evidence(raw: Sequence[object] | str) -> EvidenceParse:
    """Parse one evidence (or clue) list into normalised ``"D<s>:<t>"`` ids.

    A bare string is treated as a one-entry list.  Order is kept; repeats are
    dropped (and recorded as skipped).
    """
    entries: Sequence[object] = [raw] if isinstance(raw, str) else raw
    ids: list[str] = []
    repaired: list[RepairedEvidence] = []
    skipped: list[SkippedEvidence] = []
    for entry in entries:
        entry_ids, reasons, entry_skipped = _parse_entry(entry)
        skipped.extend(entry_skipped)
        if reasons and entry_ids:
            repaired.append(RepairedEvidence(str(entry), tuple(entry_ids), tuple(reasons)))
        for evidence_id in entry_ids:
            if evidence_id in ids:
                skipped.append(SkippedEvidence(evidence_id, DUPLICATE))
            else:
                ids.append(evidence_id)
    return EvidenceParse(tuple(ids), tuple(repaired), tuple(skipped))


def summarise_evidence(parses: Iterable[EvidenceParse]) -> EvidenceSummary:
    """Count ids, repairs (by reason), skips (by reason) and odd raw forms."""
    lists = empty = n_ids = 0
    repaired: Counter[str] = Counter()
    skipped: Counter[str] = Counter()
    odd: Counter[str] = Counter()
    for parse in parses:
        lists += 1
        n_ids += len(parse.ids)
        if not parse.ids and not parse.skipped:
            empty += 1
        for fix in parse.repaired:
            repaired.update(fix.reasons)
            odd[fix.raw] += 1
        for skip in parse.skipped:
            skipped[skip.reason] += 1
            odd[skip.raw] += 1
    return EvidenceSummary(lists, empty, n_ids, dict(repaired), dict(skipped), dict(odd))
