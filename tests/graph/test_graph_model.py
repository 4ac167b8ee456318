from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from omnimem.errors import InvalidInputError
from omnimem.results.entities import (
    Entity,
    EntityType,
    ExtractedEntity,
    ExtractedRelation,
    InvalidExtractionError,
    Relation,
    Scope,
    name_key,
    normalize_name,
)


def test_invalid_extraction_is_an_invalid_input_error() -> None:
    assert issubclass(InvalidExtractionError, InvalidInputError)
    assert InvalidExtractionError("x").status == 400


@pytest.mark.parametrize("text", ["person", "PERSON", " Person "])
def test_entity_type_parses_case_insensitively(text: str) -> None:
    assert EntityType.parse(text) is EntityType.PERSON


def test_unknown_entity_type_is_rejected() -> None:
    with pytest.raises(InvalidExtractionError, match="unknown entity type"):
        EntityType.parse("Planet")


@pytest.mark.parametrize(
    ("name", "confidence", "message"),
    [("", 0.5, "empty"), ("   ", 0.5, "empty"), ("x" * 201, 0.5, "longer than 200"), ("ok", 1.5, "confidence"),
     ("ok", float("nan"), "confidence")],
)
def test_extracted_entity_validates(name: str, confidence: float, message: str) -> None:
    with pytest.raises(InvalidExtractionError, match=message):
        ExtractedEntity(name, EntityType.CONCEPT, confidence)


def test_extracted_relation_rejects_self_loops_case_insensitively() -> None:
    with pytest.raises(InvalidExtractionError, match="self-loop"):
        ExtractedRelation("Caroline", "caroline ", "knows", 0.9)


def test_relation_rejects_self_loops() -> None:
    with pytest.raises(InvalidExtractionError, match="self-loop"):
        Relation("e1", "e1", "knows", 0.9)


def test_entity_str_shows_name_and_aliases() -> None:
    melanie = Entity("e1", "Melanie", ("Mel", "Mel B."), EntityType.PERSON, 0.9, Scope(user_id="u"))
    assert str(melanie) == "Melanie (Person; aka Mel, Mel B.)"
    assert melanie.names == ("Melanie", "Mel", "Mel B.")
    assert str(Entity("e2", "Paris", (), EntityType.LOCATION, 0.8)) == "Paris (Location)"


def test_name_normalisation() -> None:
    assert normalize_name("  New \n York ") == "New York"
    assert name_key("New  YORK") == "new york"


def test_without_rapidfuzz_the_error_names_the_extra_and_the_store_still_imports() -> None:
    # A fresh interpreter, so hiding the module cannot leak into other tests.
    script = """
import sys
sys.modules["rapidfuzz"] = None
import omnimem.store.sqlite.graph
from omnimem.errors import MissingDependencyError
try:
    from omnimem.graph import EntityResolver
except MissingDependencyError as exc:
    print(exc)
"""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True)
    assert "pip install 'omnimem[graph]'" in out.stdout
