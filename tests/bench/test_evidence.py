"""Evidence ids, including every odd form found in the published LoCoMo file."""

from __future__ import annotations

import pytest

from benchmarks.harness.evidence import (
    DUPLICATE,
    EMPTY,
    LEADING_ZERO,
    NOT_A_STRING,
    SPLIT,
    STRAY_COLON,
    UNPARSEABLE,
    EvidenceParse,
    RepairedEvidence,
    SkippedEvidence,
    parse_evidence,
    split_evidence_id,
    summarise_evidence,
)


def test_clean_ids_pass_through_in_order() -> None:
    assert parse_evidence(["D2:10", "D1:3"]) == EvidenceParse(ids=("D2:10", "D1:3"))


def test_empty_list_has_no_ids_and_no_notes() -> None:
    assert parse_evidence([]) == EvidenceParse(ids=())


def test_bare_string_is_one_entry() -> None:
    assert parse_evidence("D1:3").ids == ("D1:3",)


@pytest.mark.parametrize(
    ("raw", "ids"),
    [
        ("D8:6; D9:17", ("D8:6", "D9:17")),  # conv-26
        ("D9:1 D4:4 D4:6", ("D9:1", "D4:4", "D4:6")),  # conv-49
        ("D22:1 D22:2 D9:10 D9:11", ("D22:1", "D22:2", "D9:10", "D9:11")),  # conv-49
        ("D21:18 D21:22 D11:15 D11:19", ("D21:18", "D21:22", "D11:15", "D11:19")),  # conv-49
        ("D1:2,D1:4", ("D1:2", "D1:4")),
    ],
)
def test_several_ids_in_one_string_are_split(raw: str, ids: tuple[str, ...]) -> None:
    parse = parse_evidence(["D1:1", raw])
    assert parse.ids == ("D1:1", *ids)
    assert parse.repaired == (RepairedEvidence(raw, ids, (SPLIT,)),)
    assert parse.skipped == ()


def test_stray_colon_after_d_is_dropped() -> None:  # conv-43
    parse = parse_evidence(["D1:14", "D:11:26"])
    assert parse.ids == ("D1:14", "D11:26")
    assert parse.repaired == (RepairedEvidence("D:11:26", ("D11:26",), (STRAY_COLON,)),)


def test_leading_zeros_are_dropped() -> None:  # conv-50: the turn is "D30:5"
    parse = parse_evidence(["D30:05"])
    assert parse.ids == ("D30:5",)
    assert parse.repaired == (RepairedEvidence("D30:05", ("D30:5",), (LEADING_ZERO,)),)


def test_bare_d_is_skipped_and_the_rest_kept() -> None:  # conv-42
    parse = parse_evidence(["D1:18", "D1:20", "D"])
    assert parse.ids == ("D1:18", "D1:20")
    assert parse.skipped == (SkippedEvidence("D", UNPARSEABLE),)


def test_repeated_id_is_kept_once() -> None:  # conv-50
    parse = parse_evidence(["D4:5", "D4:5", "D5:5"])
    assert parse.ids == ("D4:5", "D5:5")
    assert parse.skipped == (SkippedEvidence("D4:5", DUPLICATE),)


def test_unparseable_piece_of_a_split_string_is_skipped_alone() -> None:
    parse = parse_evidence(["D2:1; see above"])
    assert parse.ids == ("D2:1",)
    assert parse.skipped == (
        SkippedEvidence("see", UNPARSEABLE),
        SkippedEvidence("above", UNPARSEABLE),
    )


def test_non_strings_and_blank_strings_are_skipped() -> None:
    parse = parse_evidence([3, "  ", None])
    assert parse.ids == ()
    assert parse.skipped == (
        SkippedEvidence("3", NOT_A_STRING),
        SkippedEvidence("  ", EMPTY),
        SkippedEvidence("None", NOT_A_STRING),
    )


def test_split_evidence_id() -> None:
    assert split_evidence_id("D11:26") == (11, 26)
    with pytest.raises(ValueError, match="not a normalised evidence id"):
        split_evidence_id("D:11:26")


def test_summary_counts_the_real_locomo_oddities() -> None:
    # The eight odd entries of locomo10.json, each in a list like the one it came from.
    lists: list[list[object]] = [
        ["D8:6; D9:17"],
        ["D1:18", "D1:20", "D"],
        ["D1:14", "D:11:26"],
        ["D9:1 D4:4 D4:6"],
        ["D22:1 D22:2 D9:10 D9:11"],
        ["D21:18 D21:22 D11:15 D11:19"],
        ["D4:5", "D4:5", "D5:5"],
        ["D30:05"],
        [],
        ["D1:3"],
    ]
    summary = summarise_evidence(parse_evidence(raw) for raw in lists)
    assert summary.lists == 10
    assert summary.empty_lists == 1
    assert summary.ids == 2 + 2 + 2 + 3 + 4 + 4 + 2 + 1 + 0 + 1
    assert summary.repaired == {SPLIT: 4, STRAY_COLON: 1, LEADING_ZERO: 1}
    assert summary.skipped == {UNPARSEABLE: 1, DUPLICATE: 1}
    assert set(summary.odd_forms) == {
        "D8:6; D9:17",
        "D",
        "D:11:26",
        "D9:1 D4:4 D4:6",
        "D22:1 D22:2 D9:10 D9:11",
        "D21:18 D21:22 D11:15 D11:19",
        "D4:5",
        "D30:05",
    }
