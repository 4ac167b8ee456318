"""LoCoMo and Mem-Gallery scoring, each rule checked on a hand-computed case."""

from __future__ import annotations

import math
from dataclasses import astuple

import pytest

from benchmarks.harness.scoring import (
    LOCOMO_CATEGORIES,
    MemGalleryScore,
    aggregate_locomo,
    aggregate_memgallery,
    bleu,
    locomo_f1,
    normalise,
    normalise_memgallery,
    score_locomo,
    score_memgallery,
    token_f1,
)
from omnimem.errors import InvalidInputError

# --- LoCoMo normalisation and token F1 --------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The Cat, and a dog!", "cat dog"),
        ("  Hello,   World.  ", "hello world"),
        ("D1:3", "d13"),  # punctuation is deleted, not replaced by a space
        ("Another band", "another band"),  # only whole words a/an/the/and go
        ("1,000 people", "1000 people"),
    ],
)
def test_normalise(text: str, expected: str) -> None:
    assert normalise(text) == expected


def test_token_f1_counts_multisets() -> None:
    # "the cat cat" -> [cat, cat] vs [cat]: overlap 1, P = 1/2, R = 1, F1 = 2/3
    assert locomo_f1("the cat cat", "cat") == pytest.approx(2 / 3)
    assert token_f1(["a", "a", "b"], ["a", "a"]) == pytest.approx(0.8)  # P 2/3, R 1


def test_stemming_matches_word_forms() -> None:
    assert locomo_f1("painting", "painted") == pytest.approx(1.0)  # both stem to "paint"


def test_partial_overlap() -> None:
    # [she, went, to, pari] vs [pari]: P = 1/4, R = 1, F1 = 0.5 / 1.25 = 0.4
    assert locomo_f1("She went to Paris", "Paris") == pytest.approx(0.4)


@pytest.mark.parametrize(("prediction", "gold"), [("", "cat"), ("cat", ""), ("the", "cat")])
def test_empty_side_scores_zero(prediction: str, gold: str) -> None:
    assert locomo_f1(prediction, gold) == 0.0


# --- LoCoMo categories ------------------------------------------------------


def test_category_names() -> None:
    assert LOCOMO_CATEGORIES == {
        1: "multi-hop",
        2: "temporal",
        3: "open-domain",
        4: "single-hop",
        5: "adversarial",
    }


def test_multi_hop_splits_on_commas() -> None:
    # gold parts Rome -> 1, Paris -> 1, Berlin -> 0: mean 2/3
    assert score_locomo("Paris, Rome", "Rome, Paris, Berlin", 1) == pytest.approx(2 / 3)
    # gold part Paris: F1([went, to, pari], [pari]) = 0.5; Rome -> 0: mean 0.25
    assert score_locomo("went to Paris", "Paris, Rome", 1) == pytest.approx(0.25)


def test_single_hop_just_drops_commas() -> None:
    assert score_locomo("Paris Rome", "Paris, Rome", 4) == pytest.approx(1.0)
    # [blue, green] vs [green]: 2/3
    assert score_locomo("blue and green", "green", 4) == pytest.approx(2 / 3)


def test_temporal_accepts_int_gold() -> None:
    # [it, wa, 2022] vs [2022]: P = 1/3, R = 1, F1 = 0.5
    assert score_locomo("It was 2022", 2022, 2) == pytest.approx(0.5)
    assert score_locomo("2022", 2022, 2) == pytest.approx(1.0)


def test_open_domain_cuts_gold_at_first_semicolon() -> None:
    gold = "Likely yes; she mentions it often"
    assert score_locomo("likely yes", gold, 3) == pytest.approx(1.0)
    assert score_locomo("she mentions it often", gold, 3) == 0.0


@pytest.mark.parametrize(
    ("prediction", "expected"),
    [
        ("No information available.", 1.0),
        ("That was NOT MENTIONED in the chat", 1.0),
        ("Yes, Oscar is her pet", 0.0),
        ("", 0.0),
    ],
)
def test_adversarial_rewards_refusals_only(prediction: str, expected: float) -> None:
    assert score_locomo(prediction, None, 5) == expected
    assert score_locomo(prediction, "Yes", 5) == expected  # the gold is never used


def test_bad_category_or_missing_gold_is_an_error() -> None:
    with pytest.raises(InvalidInputError, match="unknown LoCoMo category 6"):
        score_locomo("x", "x", 6)
    with pytest.raises(InvalidInputError, match="needs a gold answer"):
        score_locomo("x", None, 2)


def test_aggregate_locomo() -> None:
    report = aggregate_locomo([(1, 1.0), (1, 0.0), (2, 1.0), (4, 0.5), (5, 1.0), (5, 1.0)])
    assert report.count == 6
    assert report.categories[1].name == "multi-hop"
    assert (report.categories[1].count, report.categories[1].mean) == (2, pytest.approx(0.5))
    assert (report.categories[3].count, report.categories[3].mean) == (0, 0.0)
    assert report.categories[5].mean == pytest.approx(1.0)
    assert report.overall == pytest.approx(4.5 / 6)  # weighted by question count
    assert report.overall_without_adversarial == pytest.approx(2.5 / 4)


def test_aggregate_locomo_of_nothing() -> None:
    report = aggregate_locomo([])
    assert (report.count, report.overall, report.overall_without_adversarial) == (0, 0.0, 0.0)
    with pytest.raises(InvalidInputError):
        aggregate_locomo([(0, 1.0)])


# --- Mem-Gallery --------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("IMG_001", "img_001"),
        ("D1:IMG_002, D1:IMG_003.", "d1 img_002 d1 img_003"),
        ("It weighs 3.5 kg.", "it weighs 3.5 kg"),
        ("Version 2.", "version 2"),
        ("Julian's Mercedes-Benz", "julians mercedes benz"),
        ("The answer", "the answer"),  # articles stay
    ],
)
def test_normalise_memgallery(text: str, expected: str) -> None:
    assert normalise_memgallery(text) == expected


def test_memgallery_image_id_and_decimal_match_exactly() -> None:
    assert score_memgallery("d1:img_002", "D1:IMG_002") == MemGalleryScore(1.0, 1.0, 1.0, 1.0)
    assert score_memgallery("3.5", "3.5").exact_match == 1.0
    assert score_memgallery("3", "3.5").f1 == 0.0  # "3.5" stays one token
    assert score_memgallery("IMG 001", "IMG_001").f1 == 0.0


def test_memgallery_f1_is_stemmed_but_exact_match_and_bleu_are_not() -> None:
    score = score_memgallery("painted walls", "painting wall")
    assert score == MemGalleryScore(f1=1.0, exact_match=0.0, bleu1=0.0, bleu2=0.0)


def test_memgallery_int_gold_and_empty_prediction() -> None:
    assert score_memgallery("2", 2).exact_match == 1.0
    assert score_memgallery("", "2") == MemGalleryScore(0.0, 0.0, 0.0, 0.0)


def test_bleu_by_hand() -> None:
    prediction = "the cat sat on the mat".split()
    gold = "the cat is on the mat".split()
    # unigrams: the x2, cat, on, mat match -> p1 = 5/6; equal lengths -> BP = 1
    assert bleu(prediction, gold, 1) == pytest.approx(5 / 6)
    # bigrams: (the cat), (on the), (the mat) of 5 -> p2 = 3/5; sqrt(5/6 * 3/5)
    assert bleu(prediction, gold, 2) == pytest.approx(math.sqrt(0.5))


def test_bleu_brevity_penalty_and_smoothing() -> None:
    # all n-grams match, but c = 2 < r = 4: BP = exp(1 - 4/2) = e^-1
    assert bleu(["cat", "sat"], ["the", "cat", "sat", "down"], 2) == pytest.approx(math.exp(-1))
    # one token: no bigrams, p2 smoothed to 0.1/1; BP = exp(1 - 2/1)
    assert bleu(["cat"], ["cat", "sat"], 2) == pytest.approx(math.exp(-1) * math.sqrt(0.1))
    assert bleu(["dog"], ["cat"], 2) == 0.0  # no unigram match at all


@pytest.mark.parametrize(
    ("prediction", "gold"),
    [
        ("the cat sat on the mat", "the cat is on the mat"),
        ("cat dog cat", "cat"),
        ("a b a b a", "a b"),
        ("cat", "cat sat"),
        ("tesla audi mercedes benz google", "tesla audi mercedes benz google and apple"),
    ],
)
def test_bleu_agrees_with_nltk_method1(prediction: str, gold: str) -> None:
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    smoothing = SmoothingFunction().method1
    p, g = prediction.split(), gold.split()
    assert bleu(p, g, 1) == pytest.approx(sentence_bleu([g], p, (1.0,), smoothing))
    assert bleu(p, g, 2) == pytest.approx(sentence_bleu([g], p, (0.5, 0.5), smoothing))


def test_aggregate_memgallery() -> None:
    means = aggregate_memgallery(
        [
            ("VS", MemGalleryScore(1.0, 1.0, 1.0, 1.0)),
            ("VS", MemGalleryScore(0.5, 0.0, 0.5, 0.0)),
            ("AR", MemGalleryScore(0.0, 0.0, 0.0, 0.0)),
        ]
    )
    assert means["VS"] == MemGalleryScore(0.75, 0.5, 0.75, 0.5)
    assert astuple(means["all"]) == pytest.approx((0.5, 1 / 3, 0.5, 1 / 3))
