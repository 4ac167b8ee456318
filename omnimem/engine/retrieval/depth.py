"""How deep a search reads each retriever: ``depth=0`` fills the budget, chats of short messages included.

The first read is ``max(top_k, budget // 20)`` candidates per retriever, which fills a budget of
lines of 20 tokens or more. Short messages (5-8 tokens a line) run out of candidates first: where
every candidate fit with room left and a list came back full (the scope holds more), the search
reads again, deeper, with the same query vectors (:meth:`Retriever.search`, and the planner's
question in :meth:`Rounds.context`).
"""

from __future__ import annotations

from omnimem.config import Settings
from omnimem.context import Context

UNION_DEPTH = 20  # candidates per retriever in union fusion when neither depth nor top_k says
DEEPER_ROUNDS = 2  # times a search whose candidates all fit with room left reads deeper, at most


def first_depth(settings: Settings, k: int, limit: int) -> int:
    """Candidates per retriever: enough to fill ``limit`` at 20 tokens a line (union fusion: the paper's)."""
    if settings.fusion == "union":
        return settings.depth or k or UNION_DEPTH
    return max(k, settings.depth or limit // 20)


def deeper(settings: Settings, ctx: Context, depth: int, full: bool, k: int, limit: int) -> int:
    """How deep to read again where the depth, not the budget, bounded ``ctx`` (0: it did not).

    That is so when the depth is the default's (``depth=0``, no ``top_k``, rank fusion), every candidate
    fit (none dropped), the context has room left, and a retriever's list came back ``full`` (as deep as
    ``depth``), so the scope holds more. The new depth is what the context's fill says would fill the
    budget, with a quarter more, at least twice the old one and at most ``limit`` (a line costs a token
    at least). With ``max_source_share`` on, a dropped line may be one its source's cap kept out, not the
    budget, so only the room left counts: other sources' candidates further down may fill it.
    """
    capped = settings.max_source_share < 1
    if settings.depth or k or settings.fusion == "union" or (ctx.dropped and not capped) or not full:
        return 0
    if ctx.tokens >= limit or depth >= limit:
        return 0
    grown = depth * limit // max(ctx.tokens, 1)
    return min(limit, max(2 * depth, grown + grown // 4))
