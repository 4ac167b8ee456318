"""The per-source cap on a context's share (the setting ``max_source_share``).

A source is a unit's source kind and the actor that wrote it (``unit.source``, ``unit.actor``). With the cap
on, the lines of any one source below trusted may take at most that share of a context's budget, counted
in the tokens packing charges for them (each line with its line break, a group header or a time stamp its
line brings, the fence rule where its line is the first fenced one, and the tokens a level-2 or level-3
upgrade adds). Trusted units are never capped. The packer (:func:`omnimem.engine.retrieval.fitting.pack_fitting`)
and the reference it is tested against (:func:`omnimem.engine.retrieval.pyramid.build_context`) charge the same
tokens, so they give the same context.
"""

from __future__ import annotations

from collections.abc import Hashable

from omnimem.mau import TRUSTED

OFF = 1.0  # max_source_share's default: any one source may fill the whole budget (no cap)

SourceKey = tuple[str, str | None] | None  # (source kind, actor) of a capped unit; None: not capped (trusted)


def source_key(source: str, actor: str | None, trust: str) -> SourceKey:
    """The source a unit's lines are counted against, or None where its trust puts it outside the cap."""
    return None if trust == TRUSTED else (source, actor)


class Shares:
    """The tokens each capped source has taken of one context, against a cap (made per context)."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.spent: dict[Hashable, int] = {}

    def fits(self, key: SourceKey, tokens: int) -> bool:
        """Whether ``tokens`` more of source ``key`` stay within the cap (an uncapped key always fits)."""
        return key is None or self.spent.get(key, 0) + tokens <= self.cap

    def take(self, key: SourceKey, tokens: int) -> None:
        """Source ``key`` took ``tokens`` more."""
        if key is not None:
            self.spent[key] = self.spent.get(key, 0) + tokens


def shares_for(budget: int, share: float) -> Shares | None:
    """A fresh tally for a context of ``budget`` tokens, each source capped at ``share`` of it (None: off)."""
    return None if share >= OFF else Shares(int(budget * share))
