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

from omnimem.errors import ConfigError, MissingDependencyError
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


# -- languages: what BM25 tokenises, stems and drops per language (the ``language`` setting) ----------------------
# "en" is :func:`tokenize` itself. Another language keeps words of two or more letters, drops that language's stop
# words (bm25s's lists, where it has one) and stems with its Snowball stemmer (PyStemmer); Chinese, Japanese and
# Korean text has no spaces to split at, so each run of their characters is indexed as overlapping character
# pairs (a lone character alone), in every language. "auto" detects each text's language (py3langid, restricted to
# these codes; a text with kana, hangul or mostly Han characters by its script). docs/retrieval.md, "Languages".

ENGLISH = "en"
AUTO = "auto"
SNOWBALL = {
    "ar": "arabic", "ca": "catalan", "cs": "czech", "da": "danish", "de": "german", "el": "greek",
    "en": "english", "eo": "esperanto", "es": "spanish", "et": "estonian", "eu": "basque", "fa": "persian",
    "fi": "finnish", "fr": "french", "ga": "irish", "hi": "hindi", "hu": "hungarian", "hy": "armenian",
    "id": "indonesian", "it": "italian", "lt": "lithuanian", "ne": "nepali", "nl": "dutch", "no": "norwegian",
    "pl": "polish", "pt": "portuguese", "ro": "romanian", "ru": "russian", "sr": "serbian", "sv": "swedish",
    "ta": "tamil", "tr": "turkish", "yi": "yiddish",
}
CJK_LANGUAGES = ("ja", "ko", "zh")
LANGUAGES = frozenset((*SNOWBALL, *CJK_LANGUAGES))
_STOP_LISTS = {"da": "DANISH", "de": "GERMAN", "es": "SPANISH", "fr": "FRENCH", "it": "ITALIAN", "nl": "DUTCH",
               "no": "NORWEGIAN", "pt": "PORTUGUESE", "ru": "RUSSIAN", "sv": "SWEDISH", "tr": "TURKISH"}
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_PIECE = re.compile(f"([{_CJK}]+)|([^\\W{_CJK}]{{2,}})")  # a run of CJK characters, or a word of 2+ letters
_KANA, _HANGUL, _HAN = re.compile("[\u3040-\u30ff]"), re.compile("[\uac00-\ud7af]"), re.compile(f"[{_CJK}]")


def check_language(value: object) -> str:
    """``value`` as a language setting (``en``, ``auto`` or a code of :data:`LANGUAGES`), else a ConfigError."""
    code = str(value).strip().lower()
    if code == AUTO or code in LANGUAGES:
        return code
    raise ConfigError(f"language must be auto or one of {', '.join(sorted(LANGUAGES))}, not {value!r}")


def check_store_language(recorded: str, wanted: str, where: object) -> None:
    """A ConfigError unless a store whose BM25 postings were made for ``recorded`` is opened with ``wanted``."""
    if recorded != wanted:
        raise ConfigError(f"store {where} tokenises text for language {recorded!r}, not {wanted!r}; open it with "
                          f"language={recorded!r} (or OMNIMEM_LANGUAGE={recorded})")


def tokenize_in(texts: list[str], language: str = ENGLISH) -> list[list[str]]:
    """BM25 tokens of ``texts`` in ``language`` (``auto``: each text in the language detected for it)."""
    if language == ENGLISH:
        return tokenize(texts)
    if language != AUTO:
        return _tokenize_as(texts, language)
    found = [detect_language(text) for text in texts]
    out: list[list[str]] = [[] for _ in texts]
    for code in dict.fromkeys(found):
        rows = [i for i, c in enumerate(found) if c == code]
        for row, tokens in zip(rows, tokenize_in([texts[i] for i in rows], code)):
            out[row] = tokens
    return out


def _tokenize_as(texts: list[str], language: str) -> list[list[str]]:
    stop = _stop_words(language)
    pieces = [_PIECE.findall(text.lower()) for text in texts]
    words = list(dict.fromkeys(w for doc in pieces for cjk, w in doc if w and w not in stop))
    name = SNOWBALL.get(language)
    stems = dict(zip(words, _stemmer_for(name).stemWords(words))) if name else {w: w for w in words}
    out: list[list[str]] = []
    for doc in pieces:
        tokens: list[str] = []
        for cjk, word in doc:
            if cjk:
                tokens.extend([cjk] if len(cjk) == 1 else [cjk[i:i + 2] for i in range(len(cjk) - 1)])
            elif word not in stop:
                tokens.append(stems[word])
        out.append(tokens)
    return out


@functools.cache
def _stemmer_for(name: str) -> Any:
    import Stemmer

    return Stemmer.Stemmer(name)


@functools.cache
def _stop_words(language: str) -> frozenset[str]:
    if language not in _STOP_LISTS:
        return frozenset()
    import bm25s.stopwords

    return frozenset(w.lower() for w in getattr(bm25s.stopwords, "STOPWORDS_" + _STOP_LISTS[language]))


def detect_language(text: str) -> str:
    """The language code of :data:`LANGUAGES` ``text`` is most likely in (``en`` for text without letters)."""
    han = len(_HAN.findall(text))
    if han:
        if _KANA.search(text):
            return "ja"
        if _HANGUL.search(text):
            return "ko"
        if 2 * han >= sum(ch.isalpha() for ch in text):
            return "zh"
    if not any(ch.isalpha() for ch in text):
        return ENGLISH
    code: str = _identifier().classify(text)[0]
    return code


@functools.cache
def _identifier() -> Any:
    try:
        from py3langid.langid import MODEL_FILE, LanguageIdentifier
    except ImportError as exc:
        raise MissingDependencyError(
            f"{exc.name} is not installed; language='auto' needs it: pip install 'omnimem[multilingual]'") from exc
    identifier = LanguageIdentifier.from_model_file(MODEL_FILE)
    identifier.set_languages(sorted(LANGUAGES & set(identifier.nb_classes)))
    return identifier
