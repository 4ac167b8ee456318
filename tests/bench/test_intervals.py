"""Bootstrap intervals of the retrieval figures: points where nothing varies, wider with fewer questions,
paired differences over the same questions, reproducible, and written by every retrieval run."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.harness.intervals import interval, intervals, paired_difference, sentence


def test_constant_figures_give_a_point():
    assert interval([1.0] * 20) == {"mean": 1.0, "low": 1.0, "high": 1.0}
    assert paired_difference([1.0, 0.5, 0.0], [1.0, 0.5, 0.0]) == {"mean": 0.0, "low": 0.0, "high": 0.0}


def test_a_difference_that_is_the_same_on_every_question_is_certain():
    base = np.linspace(0.0, 0.8, 40)
    got = paired_difference(list(base + 0.1), list(base))
    assert got["mean"] == pytest.approx(0.1) and got["low"] == pytest.approx(0.1) and got["high"] == pytest.approx(0.1)
    # unpaired, the same two lists spread widely: each interval alone is wide
    alone = interval(list(base))
    assert alone["high"] - alone["low"] > 0.1


def test_fewer_questions_give_a_wider_interval_around_the_mean():
    rng = np.random.default_rng(7)
    many = list((rng.random(1000) < 0.8).astype(float))
    few = many[:40]
    wide, narrow = interval(few), interval(many)
    assert wide["low"] <= wide["mean"] <= wide["high"] and narrow["low"] <= narrow["mean"] <= narrow["high"]
    assert wide["high"] - wide["low"] > 2 * (narrow["high"] - narrow["low"])
    assert 0.75 < narrow["low"] < 0.8 < narrow["high"] < 0.85


def test_intervals_are_reproducible_and_refuse_unpaired_figures():
    values = [1.0, 0.0, 1.0, 1.0, 0.5, 0.0, 1.0]
    assert interval(values) == interval(values)
    with pytest.raises(ValueError, match="same questions"):
        paired_difference([1.0, 0.0], [1.0])
    with pytest.raises(ValueError):
        interval([])


def test_each_system_is_compared_with_naive_dense_and_reported_in_one_line():
    got = intervals({"naive-dense": {"1k": [0.0, 1.0, 0.0, 1.0], "6k": [1.0, 1.0, 0.0, 1.0]},
                     "omnimem": {"1k": [1.0, 1.0, 0.0, 1.0], "6k": [1.0, 1.0, 1.0, 1.0]}}, ["1k", "6k"])
    assert "minus_naive-dense" not in got["naive-dense"]
    assert got["omnimem"]["minus_naive-dense"]["1k"]["mean"] == 0.25
    assert got["omnimem"]["6k"] == {"mean": 1.0, "low": 1.0, "high": 1.0}
    line = sentence({"intervals": got})
    assert line is not None and "`omnimem` 1k 0.750 [" in line and "6k 1.000 [1.000, 1.000]" in line
    assert "minus `naive-dense` (paired) 1k +0.250 [" in line
    assert sentence({}) is None  # files written before the intervals
