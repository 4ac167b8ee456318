"""Which text a unit is indexed by, and how text is tokenised: shared by ingest, re-embedding and both backends.

:func:`embed_texts` says what each unit is embedded by; :func:`tokenize` is the BM25 tokeniser of
the embedded index and of PostgreSQL's postings alike.

A turn of a conversation often means little alone ("A sunset, last weekend!"
answers a question asked the turn before). With ``context=N`` each text unit
is written after the ``N`` text units before it in the same scope (user,
agent and session), so what it is found by carries what it answers. BM25
uses it with ``sparse_context=1`` by default (the largest single gain in
LoCoMo development recall, benchmarks/results/README.md); the dense vectors
with ``embed_context`` (off by default: little more recall for 2.6 times the
encoder time per turn).
"""

from __future__ import annotations

import functools
import re
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from omnimem.mau import Modality, Scope, embed_text, search_text


@dataclass(frozen=True, slots=True)
class EmbedInput:
    """One unit to embed, in insertion order."""

    scope: Scope
    speaker: str | None
    text: str  # the unit's hot-tier summary (its whole text up to summary_words; a caption, a transcript)
    modality: Modality
    when: datetime | None = None


def embed_texts(
    items: Sequence[EmbedInput], *, context: int = 0, dates: bool = False,
    history: Mapping[Scope, Sequence[str]] | None = None,
) -> list[str]:
    """The text to embed for each item; ``history`` holds each scope's earlier lines, oldest first."""
    before: dict[Scope, deque[str]] = {}
    out: list[str] = []
    for item in items:
        own = embed_text(item.speaker, item.text, item.when if dates else None)
        if context <= 0:
            out.append(own)
            continue
        lines = before.get(item.scope)
        if lines is None:
            lines = before[item.scope] = deque((history or {}).get(item.scope, ())[-context:], maxlen=context)
        out.append("\n".join([*lines, own]))
        if item.modality is Modality.TEXT:
            lines.append(search_text(item.speaker, item.text))
    return out


def tokenize(texts: list[str]) -> list[list[str]]:
    """Lower-case, drop English stop words, stem: ``bm25s.tokenize(texts, stopwords="en", stemmer=...)``'s
    rules (its token pattern, its English stop list, PyStemmer's English stems), token for token.

    Written out here because bm25s's function makes three progress bars per call, disabled or not: half
    its time on a one-text call, and the index tokenises each add and each search alone.
    The tests compare the two on random text.
    """
    stop = _index_stop()
    words = [[w for w in _TOKEN.findall(text.lower()) if w not in stop] for text in texts]
    if len(words) == 1:
        return [_stemmer().stemWords(words[0])]
    distinct = list(dict.fromkeys(w for doc in words for w in doc))  # each word stemmed once per call, as bm25s does
    stems = dict(zip(distinct, _stemmer().stemWords(distinct)))
    return [[stems[w] for w in doc] for doc in words]


_TOKEN = re.compile(r"(?u)\b\w\w+\b")  # bm25s's (and scikit-learn's) token pattern


@functools.cache
def _stemmer() -> Any:
    import Stemmer

    return Stemmer.Stemmer("english")


@functools.cache
def _index_stop() -> frozenset[str]:
    """bm25s's English stop list (the short one documents are indexed without)."""
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


def content_words(query: str) -> str:
    """``query`` without the words of a full English stop list (what a BM25 search should match on).

    Documents are indexed with bm25s's short stop list (33 words), but a
    question is mostly frame: "What did you make first?" would match every turn
    with "what", "did" and "you" in it. The retriever strips the frame words
    from the query only (``query_stop_words`` setting), so indexes stay valid
    (no rebuild, no migration) and every document is scored on the words that
    carry the question's meaning. A query of nothing but stop words is kept
    whole: better the frame words than no BM25 at all.
    """
    stop = query_stop()
    kept = [w for w in _WORD.findall(query) if w.lower() not in stop]
    return " ".join(kept) if kept else query


_WORD = re.compile(r"\w+")
# modal and request words a question is framed with, beyond NLTK's English list (which bm25s ships);
# not "may" (a month)
_FRAME_WORDS = ("could", "would", "might", "must", "shall", "please", "ever")


@functools.cache
def query_stop() -> frozenset[str]:
    """The full English stop list (NLTK's, which bm25s ships, and the frame words above), lower case."""
    from bm25s.stopwords import STOPWORDS_EN, STOPWORDS_EN_PLUS

    return frozenset(w.lower() for w in (*STOPWORDS_EN, *STOPWORDS_EN_PLUS, *_FRAME_WORDS))
