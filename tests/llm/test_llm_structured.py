"""Finding the JSON in what models actually send back."""

from __future__ import annotations

import pytest

from omnimem.llm import extract_json
from omnimem.llm.structured import ReplyFormatProblem


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ("  [1, 2]\n", [1, 2]),
        ('```json\n{"a": 1}\n```', {"a": 1}),
        ('```\n{"a": 1}\n```', {"a": 1}),
        ('Here you go:\n```JSON\n{"a": 1}\n```\nAnything else?', {"a": 1}),
        ('The answer is {"a": {"b": [1, 2]}}. Done.', {"a": {"b": [1, 2]}}),
        ('{"text": "a } in a string", "n": 2} trailing', {"text": "a } in a string", "n": 2}),
        ('{"quote": "she said \\"}\\"", "n": 1}', {"quote": 'she said "}"', "n": 1}),
        ('Not JSON {like this} but then {"a": 1}', {"a": 1}),
        ('<think>Maybe {x}? Use {"a": 0}.</think>\n{"a": 1}', {"a": 1}),
        ('items: [{"a": 1}, {"a": 2}]', [{"a": 1}, {"a": 2}]),
    ],
    ids=[
        "bare-object",
        "bare-array",
        "json-fence",
        "plain-fence",
        "fence-in-prose",
        "object-in-prose",
        "brace-in-string",
        "escaped-quote",
        "skips-non-json-braces",
        "drops-think-block",
        "array-in-prose",
    ],
)
def test_extract_json_tolerates_common_wrapping(reply: str, expected: object) -> None:
    assert extract_json(reply) == expected


@pytest.mark.parametrize("reply", ["", "   ", "no json here", '{"a": 1', "{'single': 'quotes'}"])
def test_extract_json_refuses_to_guess(reply: str) -> None:
    with pytest.raises(ReplyFormatProblem):
        extract_json(reply)
