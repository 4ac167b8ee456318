from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import pytest
from pydantic import BaseModel

from omnimem.graph.extract import Extractor, LLMExtractor, LLMGraphBatch
from omnimem.results.entities import EntityType, ExtractedRelation, Extraction, InvalidExtractionError
from omnimem.llm.errors import LLMResponseFormatError

ModelT = TypeVar("ModelT", bound=BaseModel)


class ScriptedLLM:
    """Answers each ``complete_json`` call with the next canned payload, validated by the schema."""

    def __init__(self, *payloads: Any) -> None:
        self.payloads = list(payloads)
        self.calls: list[Sequence[Mapping[str, Any]]] = []

    def complete_json(self, messages: Sequence[Mapping[str, Any]], schema: type[ModelT]) -> ModelT:
        self.calls.append(messages)
        payload = self.payloads.pop(0)
        if isinstance(payload, Exception):
            raise payload
        if isinstance(payload, BaseModel):
            return payload  # type: ignore[return-value]
        return schema.model_validate(payload)


def _entity(name: str, type_: str, confidence: float = 0.9) -> dict[str, Any]:
    return {"name": name, "type": type_, "confidence": confidence}


def _relation(source: str, target: str, label: str, confidence: float = 0.9) -> dict[str, Any]:
    return {"source": source, "target": target, "label": label, "confidence": confidence}


def test_is_an_extractor() -> None:
    assert isinstance(LLMExtractor(ScriptedLLM()), Extractor)


def test_typed_entities_and_directed_relations() -> None:
    llm = ScriptedLLM(
        {"items": [{"index": 0, "entities": [_entity("Caroline", "Person"), _entity("Boston", "location")],
                    "relations": [_relation("caroline", "Boston", "lives in")]}]}
    )
    (extraction,) = LLMExtractor(llm).extract(["Caroline: I live in Boston."])
    assert [(e.name, e.type) for e in extraction.entities] == [
        ("Caroline", EntityType.PERSON),
        ("Boston", EntityType.LOCATION),
    ]
    assert extraction.relations == (ExtractedRelation("Caroline", "Boston", "lives_in", 0.9),)


def test_one_call_per_batch_and_results_follow_text_order() -> None:
    llm = ScriptedLLM(
        {"items": [{"index": 1, "entities": [_entity("Jon", "Person")]},
                   {"index": 0, "entities": [_entity("Paris", "Location")]}]},
        {"items": [{"index": 0, "entities": [_entity("Gina", "Person")]}]},
    )
    out = LLMExtractor(llm, batch_size=2).extract(["a", "b", "c"])
    assert len(llm.calls) == 2
    assert [[e.name for e in x.entities] for x in out] == [["Paris"], ["Jon"], ["Gina"]]
    assert '"index": 1, "text": "b"' in llm.calls[0][1]["content"]


def test_invalid_items_are_skipped_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    llm = ScriptedLLM(
        {"items": [
            {"index": 0,
             "entities": [
                 _entity("Caroline", "Person"),
                 _entity("Mars", "Planet"),  # unknown type
                 _entity("  ", "Concept"),  # empty name
                 _entity("x" * 201, "Concept"),  # too long
                 _entity("guitar", "Object", confidence=1.7),  # confidence out of range
                 _entity("June 2023", "date"),  # a synonym we accept
             ],
             "relations": [
                 _relation("Caroline", "Caroline", "likes"),  # self-loop
                 _relation("Caroline", "Melanie", "knows"),  # Melanie was never listed
                 _relation("Caroline", "June 2023", "moved_on"),
             ]},
            {"index": 7, "entities": [_entity("Ghost", "Person")]},  # no such text
        ]}
    )
    with caplog.at_level(logging.WARNING, logger="omnimem.graph.extract"):
        (extraction,) = LLMExtractor(llm).extract(["one text"])
    assert [(e.name, e.type) for e in extraction.entities] == [
        ("Caroline", EntityType.PERSON),
        ("June 2023", EntityType.TIME),
    ]
    assert [(r.source, r.target) for r in extraction.relations] == [("Caroline", "June 2023")]
    reasons = caplog.text
    for expected in ("unknown entity type", "empty", "longer than 200", "confidence", "self-loop",
                     "not one of the extracted entities", "unknown text index 7"):
        assert expected in reasons


def test_unparseable_reply_yields_empty_extractions(caplog: pytest.LogCaptureFixture) -> None:
    llm = ScriptedLLM(LLMResponseFormatError("not JSON"))
    with caplog.at_level(logging.WARNING, logger="omnimem.graph.extract"):
        assert LLMExtractor(llm).extract(["a", "b"]) == [Extraction(), Extraction()]
    assert "unusable LLM reply" in caplog.text


def test_wrong_reply_type_is_an_invalid_extraction_error() -> None:
    class Other(BaseModel):
        x: int = 1

    with pytest.raises(InvalidExtractionError, match="expected LLMGraphBatch"):
        LLMExtractor(ScriptedLLM(Other())).extract(["a"])


def test_empty_input_makes_no_call() -> None:
    llm = ScriptedLLM()
    assert LLMExtractor(llm).extract([]) == []
    assert llm.calls == []


def test_prompt_names_every_type_and_the_schema_is_lenient_on_type() -> None:
    messages = LLMExtractor(ScriptedLLM()).messages(["hello"])
    assert messages[0]["role"] == "system"
    for type_ in EntityType:
        assert f"- {type_.value}:" in messages[0]["content"]
    # Types are free text in the schema, so one bad type cannot fail a whole batch.
    LLMGraphBatch.model_validate({"items": [{"index": 0, "entities": [_entity("a", "Planet")]}]})
