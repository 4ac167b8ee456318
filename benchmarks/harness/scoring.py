"""Answer scoring for LoCoMo and Mem-Gallery, as pure functions.

LoCoMo follows the rules of the official QA evaluation: normalise, Porter-stem,
token F1 over multisets, with per-category twists (see :func:`score_locomo`).
Mem-Gallery uses stemmed token F1, exact match and BLEU-1/2 on a lighter
normalisation that keeps image ids (``IMG_001``) and decimals (``3.5``) whole.

nltk is imported lazily (it pulls in scipy and takes over a second), so
importing this module stays cheap.
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from omnimem.errors import InvalidInputError, missing_extra

LOCOMO_CATEGORIES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
ADVERSARIAL_MARKERS = ("no information available", "not mentioned")

_PUNCTUATION = frozenset(string.punctuation)
_LOCOMO_DROPPED_WORDS = re.compile(r"\b(a|an|the|and)\b")
# Mem-Gallery: a '.' between digits and every '_' survive; other punctuation
# becomes a space, except apostrophes, which join ("Julian's" -> "julians").
_DECIMAL_POINT = re.compile(r"(?<=\d)\.(?=\d)")
_MEMGALLERY_PUNCTUATION = re.compile("[" + re.escape(string.punctuation.replace("_", "")) + "]")
_DECIMAL_PLACEHOLDER = "\x00"


@lru_cache(maxsize=1)
def _stemmer() -> Callable[[str], str]:
    try:
        from nltk.stem.porter import PorterStemmer
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise missing_extra("nltk", "bench") from exc
    stemmer: Callable[[str], str] = PorterStemmer().stem
    return stemmer


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Porter-stem one word (nltk's default mode, as the LoCoMo scorer does)."""
    return _stemmer()(word)


def normalise(text: str) -> str:
    """LoCoMo normalisation: drop commas and punctuation, lowercase, drop a/an/the/and."""
    text = text.replace(",", "").lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    return " ".join(_LOCOMO_DROPPED_WORDS.sub(" ", text).split())


def normalise_memgallery(text: str) -> str:
    """Mem-Gallery normalisation: lowercase, strip punctuation but keep '_' and decimals."""
    text = _DECIMAL_POINT.sub(_DECIMAL_PLACEHOLDER, text.lower()).replace("'", "")
    text = _MEMGALLERY_PUNCTUATION.sub(" ", text).replace(_DECIMAL_PLACEHOLDER, ".")
    return " ".join(text.split())


def token_f1(prediction: Sequence[str], gold: Sequence[str]) -> float:
    """F1 of two token multisets; 0.0 if either is empty."""
    if not prediction or not gold:
        return 0.0
    overlap = sum((Counter(prediction) & Counter(gold)).values())
    if overlap == 0:
        return 0.0
    precision = overlap / len(prediction)
    recall = overlap / len(gold)
    return 2 * precision * recall / (precision + recall)


def locomo_f1(prediction: str, gold: str) -> float:
    """Token F1 on normalised, Porter-stemmed words (the LoCoMo base metric)."""
    return token_f1(
        [stem(w) for w in normalise(prediction).split()],
        [stem(w) for w in normalise(gold).split()],
    )


def multi_hop_f1(prediction: str, gold: str) -> float:
    """Category 1: mean over comma-separated gold parts of the best F1 over prediction parts."""
    predictions = [p.strip() for p in prediction.split(",")]
    golds = [g.strip() for g in gold.split(",")]
    return sum(max(locomo_f1(p, g) for p in predictions) for g in golds) / len(golds)


def is_refusal(prediction: str) -> bool:
    """Category 5: does the prediction say the information is not there?"""
    lowered = prediction.lower()
    return any(marker in lowered for marker in ADVERSARIAL_MARKERS)


def score_locomo(prediction: str, gold: str | int | None, category: int) -> float:
    """Score one LoCoMo answer with the rule for its category (1-5).

    Category 5 ignores ``gold``; for the others an int gold (``2022``) is
    compared as its string.
    """
    if category == 5:
        return 1.0 if is_refusal(prediction) else 0.0
    if category not in LOCOMO_CATEGORIES:
        raise InvalidInputError(f"unknown LoCoMo category {category!r}; expected 1-5")
    if gold is None:
        raise InvalidInputError(f"category {category} needs a gold answer")
    gold_text = str(gold)
    if category == 1:
        return multi_hop_f1(prediction, gold_text)
    if category == 3:
        gold_text = gold_text.split(";")[0].strip()
    return locomo_f1(prediction, gold_text)


@dataclass(frozen=True)
class CategoryScore:
    """Mean score and question count for one LoCoMo category."""

    category: int
    name: str
    count: int
    mean: float


@dataclass(frozen=True)
class LocomoReport:
    """Per-category means, the overall mean (1-5) and the mean over 1-4."""

    categories: dict[int, CategoryScore]
    overall: float
    overall_without_adversarial: float
    count: int


def _weighted_mean(parts: Iterable[CategoryScore]) -> float:
    chosen = [p for p in parts if p.count]
    total = sum(p.count for p in chosen)
    return sum(p.mean * p.count for p in chosen) / total if total else 0.0


def aggregate_locomo(scores: Iterable[tuple[int, float]]) -> LocomoReport:
    """Aggregate ``(category, score)`` pairs; empty groups have mean 0.0 and count 0."""
    groups: dict[int, list[float]] = {c: [] for c in LOCOMO_CATEGORIES}
    for category, score in scores:
        if category not in groups:
            raise InvalidInputError(f"unknown LoCoMo category {category!r}; expected 1-5")
        groups[category].append(score)
    categories = {
        c: CategoryScore(c, LOCOMO_CATEGORIES[c], len(v), sum(v) / len(v) if v else 0.0)
        for c, v in groups.items()
    }
    return LocomoReport(
        categories=categories,
        overall=_weighted_mean(categories.values()),
        overall_without_adversarial=_weighted_mean(categories[c] for c in (1, 2, 3, 4)),
        count=sum(len(v) for v in groups.values()),
    )


def _ngrams(tokens: Sequence[str], n: int) -> Counter[tuple[str, ...]]:
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def bleu(prediction: Sequence[str], gold: Sequence[str], max_n: int, epsilon: float = 0.1) -> float:
    """Sentence BLEU-``max_n`` with uniform weights, clipped precision and brevity penalty.

    A zero n-gram precision is smoothed to ``epsilon / candidate n-grams`` (the
    "method1" of Chen & Cherry 2014, as in nltk); with no unigram match at all
    the score is 0.0.  This matches ``nltk.translate.bleu_score.sentence_bleu``
    with ``SmoothingFunction().method1``.
    """
    if not prediction or not gold:
        return 0.0
    log_sum = 0.0
    for n in range(1, max_n + 1):
        candidate = _ngrams(prediction, n)
        matches = sum((candidate & _ngrams(gold, n)).values())
        if n == 1 and matches == 0:
            return 0.0
        total = max(1, sum(candidate.values()))
        log_sum += math.log((matches if matches else epsilon) / total)
    brevity = 1.0 if len(prediction) > len(gold) else math.exp(1 - len(gold) / len(prediction))
    return brevity * math.exp(log_sum / max_n)


@dataclass(frozen=True)
class MemGalleryScore:
    """All Mem-Gallery metrics for one answer."""

    f1: float
    exact_match: float
    bleu1: float
    bleu2: float


def score_memgallery(prediction: str, gold: str | int) -> MemGalleryScore:
    """Stemmed token F1, exact match and BLEU-1/2 (unstemmed) on normalised text."""
    pred_tokens = normalise_memgallery(prediction).split()
    gold_tokens = normalise_memgallery(str(gold)).split()
    return MemGalleryScore(
        f1=token_f1([stem(t) for t in pred_tokens], [stem(t) for t in gold_tokens]),
        exact_match=1.0 if pred_tokens and pred_tokens == gold_tokens else 0.0,
        bleu1=bleu(pred_tokens, gold_tokens, 1),
        bleu2=bleu(pred_tokens, gold_tokens, 2),
    )


def aggregate_memgallery(scores: Iterable[tuple[str, MemGalleryScore]]) -> dict[str, MemGalleryScore]:
    """Mean of each metric per QA type, plus ``"all"`` over every answer."""
    groups: dict[str, list[MemGalleryScore]] = {}
    for qa_type, score in scores:
        groups.setdefault(qa_type, []).append(score)
        groups.setdefault("all", []).append(score)
    return {
        qa_type: MemGalleryScore(
            f1=sum(s.f1 for s in group) / len(group),
            exact_match=sum(s.exact_match for s in group) / len(group),
            bleu1=sum(s.bleu1 for s in group) / len(group),
            bleu2=sum(s.bleu2 for s in group) / len(group),
        )
        for qa_type, group in groups.items()
    }
