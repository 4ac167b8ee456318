"""Token counting for context budgets, offline and deterministic.

We cannot use tiktoken (it downloads its encodings at first use), and the
embedder's WordPiece tokenizer is not what answering models see. So we use an
estimate calibrated to over-count GPT-style BPE on English: every run of
letters costs ``ceil(len / 6)`` tokens, every run of digits ``ceil(len / 3)``,
every other non-space character one token. Whitespace is free, which makes the
count additive over whitespace-joined pieces: ``count(a + "\\n" + b) ==
count(a) + count(b)``. The pyramid relies on that to keep ``Context.tokens``
exactly equal to ``count_tokens(Context.render())``.
"""

from __future__ import annotations

import re

_PIECES = re.compile(r"[^\W\d_]+|\d+|[^\w\s]|_")


def count_tokens(text: str) -> int:
    """Estimated number of LLM tokens in ``text``."""
    total = 0
    for match in _PIECES.finditer(text):
        piece = match.group()
        if piece[0].isdigit():
            total += -(-len(piece) // 3)
        elif piece[0].isalpha():
            total += -(-len(piece) // 6)
        else:
            total += 1
    return total
