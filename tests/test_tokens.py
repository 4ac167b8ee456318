import pytest

from omnimem.tokens import count_tokens


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("   \n\t", 0),
        ("hello", 1),  # 5 letters -> 1
        ("painting", 2),  # 8 letters -> ceil(8/6)
        ("2023", 2),  # 4 digits -> ceil(4/3)
        ("I, too!", 4),  # I , too !
        ("IMG_001", 3),  # IMG, _, 001
    ],
)
def test_estimate(text, expected):
    assert count_tokens(text) == expected


def test_count_is_additive_over_whitespace_joins():
    a, b = "[2023-05-08 13:56] Melanie: I painted a sunset.", "Caroline: wow, 12345!"
    assert count_tokens(a + "\n" + b) == count_tokens(a) + count_tokens(b)
    assert count_tokens(a + "  " + b) == count_tokens(a) + count_tokens(b)


def test_estimate_is_in_the_range_of_real_bpe_for_english():
    # ~75 words of plain English is ~95-100 GPT tokens; the estimate must not undercount wildly
    text = " ".join(["The quick brown fox jumps over the lazy dog while everyone watches."] * 6)
    assert 70 <= count_tokens(text) <= 130
