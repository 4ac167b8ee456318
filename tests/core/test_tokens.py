import os
import subprocess
import sys

import pytest

from omnimem.errors import ConfigError
from omnimem.tokens import count_many, count_tokens, resolve_counter, truncate_tokens


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("hello", 1),
        ("hello world", 2),
        ("I painted a sunset last weekend.", 7),
        ("2023-05-08", 6),  # 202 3 -05 - 08: digits go in runs of at most three
    ],
)
def test_counts_are_cl100k_tokens(text, expected):
    assert count_tokens(text) == expected


@pytest.mark.parametrize(
    ("text", "at_least"),
    [
        ("我们上周末在杭州西湖边画了一幅日落的油画", 15),  # roughly a token per character, not one "word"
        ("Мы с сестрой ездили на дачу и собирали грибы", 14),
        ("Straßenbahnhaltestellen werden renoviert", 7),
        ("🎨🌅🖌️🎉", 6),
    ],
)
def test_non_english_text_is_not_undercounted(text, at_least):
    assert count_tokens(text) >= at_least


def test_batch_counts_match_single_counts():
    texts = ["one", "two words", "中文文本", ""]
    assert count_many(texts) == [count_tokens(t) for t in texts]


@pytest.mark.parametrize("text", ["word " * 500, "汉" * 2000, "https://example.org/" + "x" * 900])
def test_truncate_cuts_by_tokens_even_without_spaces(text):
    cut = truncate_tokens(text, 100)
    assert text.startswith(cut)
    assert 90 <= count_tokens(cut) <= 100


def test_truncate_with_a_user_counter():
    assert truncate_tokens("abcdefghij", 4, counter=len) == "abcd"


def test_resolve_counter():
    assert resolve_counter(None) is count_tokens
    assert resolve_counter("cl100k") is count_tokens
    assert resolve_counter(len) is len
    with pytest.raises(ConfigError):
        resolve_counter("gpt2")


def test_encoding_loads_with_the_network_off():
    code = (
        "import socket\n"
        "def refuse(*a, **k):\n    raise OSError('network is off')\n"
        "socket.socket.connect = refuse\nsocket.create_connection = refuse\n"
        "from omnimem.tokens import count_tokens\nprint(count_tokens('hello world'))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TIKTOKEN_CACHE_DIR"}
    env["TIKTOKEN_CACHE_DIR"] = "/nonexistent-cache-dir"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "2"
