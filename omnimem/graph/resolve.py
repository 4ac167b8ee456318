"""Entity resolution: does an incoming mention name an entity we already know?

Decision order, per incoming entity, among candidates of the same scope and a
compatible type:

1. **Exact**: the name equals a candidate's name or alias, ignoring case and a
   leading article ("The Louvre" = "louvre"); for Concept and Object also a
   plural "s" ("paintings" = "painting"). Time entities merge only this way:
   "May 7, 2023" and "May 8, 2023" are close strings but different days.
2. **Person rules** (both Person): names are parsed into title + tokens, and
   the rules either decide (merge or veto) or abstain:
   - "Mel" / "Melanie": a first-name prefix of at least 3 letters merges;
   - "J. Smith" / "John Smith": an initial plus the same surname merges;
   - "Dr. Smith" / "John Smith": title + surname merges with the bearer of that surname;
   - "John Smith" / "Jane Smith": two full names must agree on first and last name, else veto.
   A rule match beats any hybrid score; two candidates matched by rules is
   ambiguous and resolves to nothing (a duplicate node is cheaper than a wrong merge).
3. **Hybrid similarity** ``w * cosine(name embeddings) + (1 - w) * Jaro-Winkler``
   (lowercased), maximised over the candidate's name and aliases, must reach
   ``threshold``. Names whose Jaro-Winkler alone cannot reach the threshold
   are never embedded.

Names whose digits differ ("Route 66" / "Route 67") never merge by similarity.
Ties go to the smallest entity id, so the result does not depend on order.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from omnimem.errors import missing_extra
from omnimem.mau import Scope
from omnimem.results import (
    PERSON_TITLES,
    Entity,
    EntityType,
    ExtractedEntity,
    name_key,
    normalize_name,
)

try:
    from rapidfuzz import process
    from rapidfuzz.distance import JaroWinkler
except ImportError as exc:
    raise missing_extra("rapidfuzz", "graph") from exc

EmbedFn = Callable[[list[str]], npt.ArrayLike]
"""Names -> one vector per name (any dimension; normalised here)."""

COMPATIBLE_TYPES: frozenset[frozenset[EntityType]] = frozenset(
    {
        # Small NER models and LLMs both hesitate between these pairs.
        frozenset({EntityType.CONCEPT, EntityType.OBJECT}),  # "guitar", "painting"
        frozenset({EntityType.LOCATION, EntityType.ORGANIZATION}),  # "Google HQ", "the hospital"
    }
)
"""Type pairs that may merge besides identical types. Person and Time are
compatible with nothing else, so "Paris" the city never merges with "Paris" the person."""

EXACT_ONLY_TYPES = frozenset({EntityType.TIME})
_PLURAL_TYPES = frozenset({EntityType.CONCEPT, EntityType.OBJECT})
_ARTICLE = re.compile(r"^(the|a|an) ")
_DIGITS = re.compile(r"\d+")
_NAME_SUFFIXES = frozenset("jr sr ii iii iv phd md".split())
_TOKEN_TRIM = re.compile(r"^[\W_]+|[\W_]+$")


def types_compatible(a: EntityType, b: EntityType) -> bool:
    return a == b or frozenset({a, b}) in COMPATIBLE_TYPES


@dataclass(frozen=True)
class PersonName:
    """A person's name split into an optional title and lowercase tokens."""

    title: str | None
    tokens: tuple[str, ...]

    @classmethod
    def parse(cls, name: str) -> PersonName:
        words = [_TOKEN_TRIM.sub("", w).lower() for w in normalize_name(name).split(" ")]
        words = [w for w in words if w]
        title = None
        if len(words) > 1 and words[0] in PERSON_TITLES:
            title = words.pop(0)
        while len(words) > 1 and words[-1] in _NAME_SUFFIXES:
            words.pop()
        return cls(title, tuple(words))


def _first_names_compatible(a: str, b: str) -> bool:
    if a == b:
        return True
    short, long_ = sorted((a, b), key=len)
    if len(short) == 1:  # an initial
        return long_.startswith(short)
    return len(short) >= 3 and long_.startswith(short)


def person_rule(a: PersonName, b: PersonName) -> tuple[bool | None, str]:
    """Decide from the names alone: (True: same person, False: different, None: cannot tell), rule."""
    if not a.tokens or not b.tokens:
        return None, ""
    if a.tokens == b.tokens:
        return True, "person:same_name"
    if len(a.tokens) >= 2 and len(b.tokens) >= 2:
        same = a.tokens[-1] == b.tokens[-1] and _first_names_compatible(a.tokens[0], b.tokens[0])
        return same, "person:full_names"
    if len(a.tokens) == 1 and len(b.tokens) == 1:
        if a.title or b.title:  # titles go with surnames, so prefixes say nothing
            return None, ""
        if _first_names_compatible(a.tokens[0], b.tokens[0]) and min(len(a.tokens[0]), len(b.tokens[0])) >= 3:
            return True, "person:first_name_prefix"
        return None, ""
    single, full = (a, b) if len(a.tokens) == 1 else (b, a)
    word = single.tokens[0]
    if single.title:
        return word == full.tokens[-1], "person:title_surname"
    if word == full.tokens[-1]:
        return True, "person:surname"
    if len(word) >= 3 and _first_names_compatible(word, full.tokens[0]):
        return True, "person:first_name"
    return None, ""


@dataclass(frozen=True)
class Resolution:
    """The outcome for one incoming entity.

    ``entity_id`` is the matched entity or ``None``. ``similarity`` is the best
    hybrid similarity seen (1.0 for exact matches); a person-rule match may
    sit below ``threshold``. ``rule`` says what decided: "exact",
    "person:<rule>", "hybrid", "ambiguous" or "" for no match.
    """

    entity_id: str | None
    similarity: float
    rule: str


Incoming = ExtractedEntity | Entity


class EntityResolver:
    """Decides whether incoming entities merge into existing ones.

    Keeps a bounded cache of name embeddings, so it is meant to live as long
    as the store it serves; it is not thread-safe (use one per writer).
    """

    def __init__(
        self,
        embed: EmbedFn,
        *,
        threshold: float = 0.85,
        cosine_weight: float = 0.5,
        cache_size: int = 100_000,
    ) -> None:
        if not 0.0 < threshold <= 1.0:
            raise ValueError("threshold must be in (0, 1]")
        if not 0.0 <= cosine_weight <= 1.0:
            raise ValueError("cosine_weight must be in [0, 1]")
        self.embed = embed
        self.threshold = threshold
        self.cosine_weight = cosine_weight
        self.cache_size = cache_size
        self._vectors: dict[str, npt.NDArray[np.float64]] = {}

    @property
    def jaro_winkler_floor(self) -> float:
        """The Jaro-Winkler below which even a cosine of 1 cannot reach the threshold."""
        w = self.cosine_weight
        return (self.threshold - w) / (1.0 - w) if w < 1.0 else 0.0

    def resolve(
        self, incoming: Incoming, candidates: Iterable[Entity] | CandidateIndex, *, scope: Scope
    ) -> Resolution:
        return self.resolve_many([incoming], candidates, scope=scope)[0]

    def resolve_many(
        self, incoming: Sequence[Incoming], candidates: Iterable[Entity] | CandidateIndex, *, scope: Scope
    ) -> list[Resolution]:
        """Resolve each incoming entity independently against the same candidates.

        Candidates of other scopes are ignored. Names that need an embedding
        are embedded in one call. Incoming entities are not matched against
        each other; to get that, resolve one at a time against a
        :class:`CandidateIndex` and ``add`` each new or merged entity.
        """
        if isinstance(candidates, CandidateIndex):
            if candidates.scope != scope:
                raise ValueError(f"the candidate index is for {candidates.scope}, not {scope}")
            pool = candidates
        else:
            pool = CandidateIndex(candidates, scope=scope)
        plans = [self._plan(item, pool) for item in incoming]
        self._ensure_vectors([name for plan in plans if isinstance(plan, _Hybrid) for name in plan.names_to_embed()])
        return [plan if isinstance(plan, Resolution) else self._finish(plan) for plan in plans]

    def prefetch(self, incoming: Sequence[Incoming], pool: CandidateIndex) -> int:
        """Embed, in one call, every name that resolving ``incoming`` one at a time may compare; returns how many.

        Resolving a batch mention by mention (each new or merged entity added to
        the pool before the next) embeds a few names per mention: one model
        call each, which made graph ingest crawl. The names such a run can
        compare are the mentions' own and the candidates that pass the
        Jaro-Winkler floor, either in ``pool`` as it is now or among the other
        mentions of the batch (a pool only grows by them), so embedding those
        up front leaves the run nothing to embed and changes none of its
        decisions. Mentions that resolve exactly or by a person rule need none,
        nor do those that an earlier mention of the batch makes exact (the run
        adds every mention's name to the pool, under a compatible type).
        """
        if self.cosine_weight == 0.0 or not incoming:
            return 0
        batch = CandidateIndex(scope=pool.scope)  # the batch's own names, as a run may meet them
        for i, item in enumerate(incoming):
            batch.add(Entity(f"incoming-{i}", item.name, (), item.type, item.confidence, pool.scope))
        names: list[str] = []
        earlier: set[tuple[frozenset[EntityType], str]] = set()
        for item in incoming:
            key = _exact_key(item)
            if key in earlier:  # an earlier mention put this name in the pool: it resolves exactly
                continue
            earlier.add(key)
            plan = self._plan(item, pool)
            if isinstance(plan, Resolution):
                continue
            query, digits = name_key(item.name), _DIGITS.findall(name_key(item.name))
            others = [name for index, name, _ in batch.similar(query, self.jaro_winkler_floor)
                      if types_compatible(batch.entities[index].type, item.type)
                      and _DIGITS.findall(name_key(name)) == digits and name_key(name) != query]
            if plan.scored or others:
                names.extend([item.name, *(name for _, name, _ in plan.scored), *others])
        before = len(self._vectors)
        self._ensure_vectors(names)
        return len(self._vectors) - before

    def merge(self, existing: Entity, incoming: Incoming) -> Entity:
        """``existing`` with the incoming name kept: as an alias, or as the new name if it is fuller."""
        name, other = existing.name, normalize_name(incoming.name)
        if existing.type == EntityType.PERSON and _fullness(other) > _fullness(name):
            name, other = other, name
        aliases = [a for a in existing.aliases if name_key(a) != name_key(name)]
        if name_key(other) != name_key(name) and all(name_key(a) != name_key(other) for a in aliases):
            aliases.append(other)
        return replace(
            existing,
            name=name,
            aliases=tuple(aliases),
            confidence=max(existing.confidence, incoming.confidence),
        )

    # ----------------------------------------------------------------- internals

    def _plan(self, item: Incoming, pool: CandidateIndex) -> Resolution | _Hybrid:
        exact = [i for i in pool.exact(item.name, item.type) if types_compatible(pool.entities[i].type, item.type)]
        if exact:
            best = min((pool.entities[i] for i in exact), key=lambda c: (c.type != item.type, c.id))
            return Resolution(best.id, 1.0, "exact")
        if item.type in EXACT_ONLY_TYPES:
            return Resolution(None, 0.0, "")
        vetoed: set[int] = set()
        if item.type == EntityType.PERSON:
            decided, vetoed = _person_rules(item, pool)
            if decided is not None:
                return decided
        query = name_key(item.name)
        digits = _DIGITS.findall(query)
        scored: list[tuple[Entity, str, float]] = []
        for index, name, jw in pool.similar(query, self.jaro_winkler_floor):
            cand = pool.entities[index]
            if index in vetoed or not types_compatible(cand.type, item.type):
                continue
            if _DIGITS.findall(name_key(name)) == digits:
                scored.append((cand, name, jw))
        return _Hybrid(item.name, scored)

    def _finish(self, plan: _Hybrid) -> Resolution:
        w = self.cosine_weight
        query = self._vectors.get(plan.name) if w > 0 else None
        best: tuple[float, str] | None = None
        for cand, name, jw in plan.scored:
            cos = 0.0
            if query is not None:
                cos = float(np.dot(query, self._vectors[name]))
            score = w * cos + (1.0 - w) * jw
            if best is None or score > best[0] or (score == best[0] and cand.id < best[1]):
                best = (score, cand.id)
        if best is None:
            return Resolution(None, 0.0, "")
        score, entity_id = best
        if score >= self.threshold:
            return Resolution(entity_id, score, "hybrid")
        return Resolution(None, score, "")

    def _ensure_vectors(self, names: Iterable[str]) -> None:
        if self.cosine_weight == 0.0:
            return
        missing = sorted({n for n in names if n not in self._vectors})
        if not missing:
            return
        matrix = np.asarray(self.embed(missing), dtype=np.float64)
        if matrix.shape[0] != len(missing):
            raise ValueError(f"embed returned {matrix.shape[0]} vectors for {len(missing)} names")
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        matrix = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
        if len(self._vectors) + len(missing) > self.cache_size:
            self._vectors.clear()  # crude, but bounded; resolution stays correct, only slower
        self._vectors.update(zip(missing, matrix, strict=True))


class CandidateIndex:
    """The entities of one scope, indexed for resolution; build once, ``add`` as you go.

    Passing an index instead of a list to :meth:`EntityResolver.resolve_many`
    saves re-indexing per call, and adding each new or merged entity lets
    later mentions of a batch merge into it.
    """

    def __init__(self, entities: Iterable[Entity] = (), *, scope: Scope) -> None:
        self.scope = scope
        self.entities: list[Entity] = []
        self.persons: list[int] = []
        self._position: dict[str, int] = {}
        self._rows: list[tuple[int, str]] = []  # (entity index, name), aligned with _keys
        self._keys: list[str] = []
        self._exact: dict[str, list[int]] = {}
        self._singular: dict[str, list[int]] = {}
        self._person_names: dict[int, list[PersonName]] = {}
        for entity in entities:
            if entity.scope == scope:
                self.add(entity)

    def __len__(self) -> int:
        return len(self.entities)

    def add(self, entity: Entity) -> None:
        """Index a new entity, or replace one with the same id (its old names stay findable)."""
        if entity.scope != self.scope:
            raise ValueError(f"entity {entity.id!r} is not in scope {self.scope}")
        index = self._position.get(entity.id)
        if index is None:
            index = self._position[entity.id] = len(self.entities)
            self.entities.append(entity)
            if entity.type == EntityType.PERSON:
                self.persons.append(index)
            known: set[str] = set()
        else:
            known = {name_key(n) for n in self.entities[index].names}
            self.entities[index] = entity
            if entity.type == EntityType.PERSON and index not in self.persons:
                self.persons.append(index)
            self._person_names.pop(index, None)
        for name in entity.names:
            key = name_key(name)
            if key in known:
                continue
            known.add(key)
            self._rows.append((index, name))
            self._keys.append(key)
            base = _ARTICLE.sub("", key)
            self._exact.setdefault(base, []).append(index)
            self._singular.setdefault(_singular(base), []).append(index)

    def get(self, entity_id: str) -> Entity:
        """The indexed entity with this id (KeyError if there is none)."""
        return self.entities[self._position[entity_id]]

    def person_names(self, index: int) -> list[PersonName]:
        """The parsed names of a person candidate, parsed once."""
        parsed = self._person_names.get(index)
        if parsed is None:
            parsed = self._person_names[index] = [PersonName.parse(n) for n in self.entities[index].names]
        return parsed

    def exact(self, name: str, type_: EntityType) -> list[int]:
        base = _ARTICLE.sub("", name_key(name))
        if type_ in _PLURAL_TYPES:
            return self._singular.get(_singular(base), [])
        return self._exact.get(base, [])

    def similar(self, query: str, floor: float) -> list[tuple[int, str, float]]:
        """(entity index, name, Jaro-Winkler) for every name scoring at least ``floor``."""
        hits = process.extract(query, self._keys, scorer=JaroWinkler.similarity, score_cutoff=floor, limit=None)
        return [(*self._rows[row], float(score)) for _, score, row in hits]


def _person_rules(item: Incoming, pool: CandidateIndex) -> tuple[Resolution | None, set[int]]:
    """Apply the person rules: a decision (or None) and the candidates they vetoed."""
    parsed = PersonName.parse(item.name)
    matched: list[tuple[Entity, str]] = []
    vetoed: set[int] = set()
    for index in pool.persons:
        cand = pool.entities[index]
        verdicts = [person_rule(parsed, other) for other in pool.person_names(index)]
        hit = next((rule for ok, rule in verdicts if ok is True), None)
        if hit is not None:
            matched.append((cand, hit))
        elif any(ok is False for ok, _ in verdicts):
            vetoed.add(index)
    if len(matched) == 1:
        cand, rule = matched[0]
        jw = max(JaroWinkler.similarity(name_key(item.name), name_key(n)) for n in cand.names)
        return Resolution(cand.id, jw, rule), vetoed
    if len(matched) > 1:
        return Resolution(None, 0.0, "ambiguous"), vetoed
    return None, vetoed


@dataclass(frozen=True)
class _Hybrid:
    """An incoming name and the (candidate, name, Jaro-Winkler) triples still in the running."""

    name: str
    scored: list[tuple[Entity, str, float]]

    def names_to_embed(self) -> list[str]:
        return [self.name, *(name for _, name, _ in self.scored)] if self.scored else []


def _type_class(type_: EntityType) -> frozenset[EntityType]:
    """The types ``type_`` may merge with, itself included (compatibility is an equivalence)."""
    return frozenset({type_, *(t for pair in COMPATIBLE_TYPES if type_ in pair for t in pair)})


def _exact_key(item: Incoming) -> tuple[frozenset[EntityType], str]:
    """What :meth:`CandidateIndex.exact` looks a mention up by: its type class and its article-free
    (for Concept and Object also singular) name key."""
    base = _ARTICLE.sub("", name_key(item.name))
    return _type_class(item.type), _singular(base) if item.type in _PLURAL_TYPES else base


def _singular(key: str) -> str:
    """Drop a plural "s" ("paintings" -> "painting"; "glass" and "gas" stay)."""
    if len(key) > 3 and key.endswith("s") and not key.endswith("ss"):
        return key[:-1]
    return key


def _fullness(name: str) -> tuple[int, int]:
    parsed = PersonName.parse(name)
    return len(parsed.tokens), sum(len(t) for t in parsed.tokens)
