"""Settings: explicit arguments, then ``OMNIMEM_*`` variables, then a TOML file.

The file is ``$OMNIMEM_CONFIG`` if set, else ``~/.config/omnimem/config.toml``
when it exists. Core keys live at the top level of the file; the LLM layer's
keys in its ``[llm]`` table, with ``OMNIMEM_LLM_*`` variables. Both go
through one resolver, :func:`layered`, so the order is the same everywhere.
"""

from __future__ import annotations

import math
import os
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from omnimem.errors import ConfigError
from omnimem.text import check_language

VERSION = "0.1.0"  # omnimem.__version__; what the HTTP and MCP servers report
ENV_PREFIX = "OMNIMEM_"
PLANNERS = (None, "offline", "llm")  # the planner setting's values (None: one search, no planning)


def layered(
    names: Iterable[str], *, arguments: Mapping[str, object], env_prefix: str, file_values: Mapping[str, object],
    environ: Mapping[str, str] | None = None,
) -> dict[str, tuple[object, str]]:
    """Each setting's value and where it came from: arguments > environment > config file.

    ``None`` arguments and empty variables count as "not given"; settings
    given nowhere are left out (their defaults apply).
    """
    env = os.environ if environ is None else environ
    found: dict[str, tuple[object, str]] = {}
    for name in names:
        variable = env_prefix + name.upper()
        if arguments.get(name) is not None:
            found[name] = (arguments[name], "argument")
        elif env.get(variable):
            found[name] = (env[variable], f"${variable}")
        elif name in file_values:
            found[name] = (file_values[name], "config file")
    return found


def config_path(explicit: str | Path | None = None) -> Path | None:
    """Which config file applies, if any."""
    if explicit is not None:
        return Path(explicit)
    env = os.environ.get("OMNIMEM_CONFIG")
    if env:
        return Path(env)
    default = Path.home() / ".config" / "omnimem" / "config.toml"
    return default if default.exists() else None


MAX_CONFIG_BYTES = 1 << 20  # a config file is a few lines; /dev/zero or a disk image is a mistake


def read_config_file(path: str | os.PathLike[str] | None) -> dict[str, Any]:
    """The parsed TOML file (UTF-8, at most ``MAX_CONFIG_BYTES``); any problem is a ConfigError."""
    if path is None:
        return {}
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except (OSError, ValueError) as exc:  # a folder, no permission, a NUL in the name
        raise ConfigError(f"config file {path} cannot be read: {getattr(exc, 'strerror', None) or exc}") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"config file {path} is larger than {MAX_CONFIG_BYTES} bytes")
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"config file {path} is not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from exc


@dataclass(frozen=True, slots=True)
class Settings:
    """Every tunable of the core, grouped by the stage it belongs to (``STAGES``).

    Why each default is what it is, with its figures: benchmarks/results/experiments/.
    """

    # ingest: what is kept of each text, and what is refused as a repeat
    novelty: bool = True  # refuse a text that repeats a recent summary of the same scope
    novelty_threshold: float = 0.8  # the word-set Jaccard similarity above which a text is a repeat
    novelty_window: int = 10  # how many recent summaries of the scope a new text is compared with
    summary_words: int = 100  # text up to this many words is kept whole; longer text is indexed by a summary line
    timezone: str = "UTC"  # the zone of times given without an offset
    redact_pii: bool = False  # personal data is replaced by typed placeholders before anything is stored

    # embedding: the model that turns text into vectors, and what it reads
    embedder: str | None = None  # the embedding model; None: the store's own, or the default for a new store
    fast_queries: bool = True  # search queries use a faster copy of the store's model where one is installed
    embed_dates: bool = False  # embed "[event date] speaker: text" instead of "speaker: text"
    embed_context: int = 0  # embed each text unit after this many text units before it in the same scope
    clip_model: str | None = None  # a local CLIP checkpoint folder: image embeddings and text-to-image search

    # BM25: how text becomes words
    language: str = "en"  # what BM25 tokenises, stems and drops stop words by: "en", "auto" or a language code
    sparse_context: int = 1  # BM25 also indexes the words of this many text units before each unit
    query_stop_words: bool = True  # BM25 matches a query without the words of a full English stop list

    # candidates: what each retriever returns
    dense: bool = True  # search the dense vectors (off: for ablations)
    sparse: bool = True  # search BM25 (off: for ablations)
    depth: int = 0  # candidates per retriever; 0: enough to fill the budget
    sparse_depth: int = 0  # BM25 candidates; 0: the same as depth
    prf_docs: int = 0  # dense searches again, its query moved towards this many of the best candidates (0: off)
    prf_weight: float = 0.5  # how far that feedback moves the query vector

    # ranking signals: each is one more ranked list in the fusion, at its weight (0: off)
    signal_depth: int = 50  # how many of the best fused candidates the signals read and re-order
    signal_margin: float = 0.15  # no signal lifts a unit above one this much more similar and no lower in BM25
    signals: str = ""  # ranking signals of plugins, "name:weight,..." (a dict in Python)
    speaker_weight: float = 0.5  # the units of a speaker the query names
    speaker_field: bool = True  # a named speaker is matched as the speaker field; dense and BM25 search the rest
    dense_without_names: bool = True  # with speaker_field: dense too searches the query without the names
    session_weight: float = 0.5  # units by the summed fused score of their session
    time_weight: float = 1.0  # units inside the time window a relative time in the query names ("last week")
    recency_weight: float = 0.0  # units newest first
    statement_weight: float = 0.0  # units that state something, not only ask
    informative_words: int = 4  # content words outside questions that make a unit a statement
    reply_weight: float = 0.0  # the turn right after a candidate that asks something

    # fusion and ranking: how the lists become one ranking
    fusion: str = "rrf"  # "rrf" (reciprocal rank fusion) or "union" (dense order, BM25-only hits appended)
    rrf_k: int = 60  # reciprocal rank fusion constant: score = sum of weight / (rrf_k + rank)
    sparse_weight: float = 1.0  # the BM25 list's weight in the fusion (dense has 1)
    ranking: str = "learnt"  # "learnt": the packaged model re-orders the first 30; "rules"; or a model file's path
    reranker: str | None = None  # a local sentence-transformers CrossEncoder folder that re-orders the best candidates
    rerank_depth: int = 30  # how many of the best fused candidates the reranker re-orders
    diversity: float = 0.0  # one session does not fill the top: score / (1 + diversity * earlier hits)

    # packing: what the context holds, and how it is written
    budget: int = 6000  # the context's token budget
    top_k: int = 0  # at most this many hits (0: as many as the budget holds)
    max_level: int = 3  # the highest pyramid level to spend budget on: 1 summaries, 2 full text, 3 raw content
    theta: float = 0.4  # level 2 shows the full text of hits at least this similar to the query (a cosine)
    whole_share: float = 0.5  # the best hits are shown whole while the context fills at most this share of the budget
    whole_top: int = 0  # the best this many hits are shown whole whenever they fit the whole budget
    line_words: int = 20  # a long hit not shown whole says at most this many words of its summary (0: all of it)
    neighbours: int = 0  # same-session turns added on each side of the best hits
    expand_top: int = 10  # how many of the best hits get their neighbours
    packing: str = "day"  # "day": a [time] header per session and day; "session": per session and time; "line"
    stamp_gap: int = 30  # day packing: a line shows its time of day when it comes this many minutes after the last
    elide_speakers: bool | str = "auto"  # day packing: omit a repeated "speaker: "; "auto": between timed lines only
    fence_untrusted: bool = True  # text below trusted goes between <untrusted> markers in a rendered context
    max_source_share: float = 1.0  # the share of the budget any one source below trusted may fill (1: no cap)

    # planning: more than one query per search (docs/planner.md)
    planner: str | None = None  # None: one search; "offline": rewritten queries and a second hop; "llm": the model's
    plan_rounds: int = 1  # rounds a planner may add after its first
    plan_calls: int = 3  # the llm planner's model calls per search, at most
    plan_tokens: int = 4000  # the llm planner's prompt and completion tokens per search, at most
    plan_deadline: float = 10.0  # seconds after which a planned search returns the best context so far

    # knowledge graph: entities and relations, and search through them
    graph: bool = False  # build the knowledge graph on ingest and expand queries through it
    graph_extractor: str = "auto"  # "spacy", "llm", or "auto" (the LLM when one is configured)
    graph_hops: int = 2  # how many relation hops from the query's entities the expansion goes
    graph_beta: float = 0.5  # a unit's graph score is beta^distance x confidence
    graph_k: int = 10  # graph-only units appended to the results per query
    graph_weight: float = 0.0  # >0: the graph's units are one more ranked list in the fusion, not appended

    # enrichment: model work on the write path
    enrich: str = "async"  # "async": a worker thread; "sync": inside the add; "off": an external `omnimem worker`
    enrich_workers: int = 1  # worker threads an "async" engine runs
    enrich_lease: float = 300.0  # seconds a claimed job is held before another worker may take it over
    enrich_attempts: int = 5  # attempts before a failing job is parked as failed
    enrich_backoff: float = 2.0  # seconds before the first retry; doubled after each failure, at most 1 hour
    llm_summaries: bool = True  # with an LLM: summarise long text for level 1 (the full text stays at level 2)
    restate_window: int = 40  # turns per restatement window
    restate_overlap: int = 2  # turns that two restatement windows in a row share
    llm_workers: int = 4  # parallel LLM calls during restatement
    auto_supersede: bool = False  # with an LLM: it marks the earlier units a new one replaces (logged)
    vision_captions: bool = False  # caption images that have no caption with the configured vision LLM

    # limits: inputs refused before any work is done
    max_query_chars: int = 20_000  # longer queries are refused
    max_media_pixels: int = 50_000_000  # pixels per image or video frame, checked from headers before decoding
    max_media_seconds: float = 14_400.0  # seconds per audio or video input (4 hours)

    # storage and tracing
    store: str | None = None  # the CLI's default store folder
    url: str | None = None  # a database to open instead of a folder (postgresql://...) when no path is given
    trace_content: bool = False  # OpenTelemetry spans also carry texts, queries, answers and ids

    @classmethod
    def load(cls, *, config_file: str | Path | None = None, **overrides: Any) -> Settings:
        """Resolve settings: ``overrides`` > environment > config file > defaults."""
        known = {f.name: f for f in fields(cls)}
        path = config_path(config_file)
        file_values = read_config_file(path)
        for key, value in file_values.items():
            if key not in known and not isinstance(value, dict):  # tables ([llm], ...) belong to other parts
                raise ConfigError(f"config file {path}: unknown setting {key!r}")
        for key in overrides:
            if key not in known:
                raise ConfigError(f"unknown setting {key!r}")
        found = layered(known, arguments=overrides, env_prefix=ENV_PREFIX, file_values=file_values)
        return cls()._with({key: value for key, (value, _source) in found.items()})

    def _with(self, values: Mapping[str, Any]) -> Settings:
        coerced: dict[str, Any] = {}
        for f in fields(self):
            if f.name not in values:
                continue
            raw = values[f.name]
            default = getattr(self, f.name)
            try:
                if f.name == "elide_speakers":
                    coerced[f.name] = _elide_mode(raw)
                elif f.name == "language":
                    coerced[f.name] = check_language(raw)
                elif f.name == "signals":
                    coerced[f.name] = signals_setting(raw)
                elif isinstance(default, bool):
                    coerced[f.name] = _to_bool(raw)
                elif isinstance(default, int):
                    coerced[f.name] = int(raw)
                elif isinstance(default, float):
                    coerced[f.name] = float(raw)
                    if not math.isfinite(coerced[f.name]):
                        raise ValueError(raw)
                else:
                    coerced[f.name] = None if raw is None else str(raw)
                    if f.name == "planner" and coerced[f.name] in ("none", ""):  # the spelling docs and CLI use
                        coerced[f.name] = None
            except (TypeError, ValueError):
                raise ConfigError(f"setting {f.name}={raw!r} is not a valid {type(default).__name__}") from None
        result = replace(self, **coerced)
        result.validate()
        return result

    def validate(self) -> None:
        check_language(self.language)
        signal_weights(self.signals)
        if not 0.0 <= self.novelty_threshold <= 1.0:
            raise ConfigError("novelty_threshold must be within [0, 1]")
        if self.novelty_window < 1 or self.top_k < 0 or self.budget < 1 or self.summary_words < 1:
            raise ConfigError("novelty_window, budget and summary_words must be positive, top_k >= 0 (0: no bound)")
        if not (self.dense or self.sparse):
            raise ConfigError("at least one of dense and sparse retrieval must be on")
        if not (isinstance(self.elide_speakers, bool) or self.elide_speakers == "auto"):
            raise ConfigError(f"elide_speakers must be True, False or 'auto', not {self.elide_speakers!r}")
        if self.fusion not in ("rrf", "union") or self.packing not in ("session", "line", "day"):
            raise ConfigError("fusion must be rrf or union, packing session, day or line")
        if not 0.0 <= self.whole_share <= 1.0:
            raise ConfigError("whole_share must be within [0, 1] (a share of the budget)")
        if not 0.0 < self.max_source_share <= 1.0:
            raise ConfigError("max_source_share must be within (0, 1] (a share of the budget; 1: no cap)")
        if self.diversity < 0:
            raise ConfigError("diversity must be >= 0")
        if self.rrf_k < 0 or self.sparse_weight < 0 or self.embed_context < 0 or self.sparse_context < 0:
            raise ConfigError("rrf_k, sparse_weight, embed_context and sparse_context must be >= 0")
        if self.rerank_depth < 1 or self.signal_depth < 1:
            raise ConfigError("rerank_depth and signal_depth must be positive")
        if self.ranking not in ("rules", "learnt") and not (self.ranking.endswith(".json")
                                                            and Path(self.ranking).is_file()):
            raise ConfigError(f"ranking must be 'rules', 'learnt' or a ranker .json file's path, not {self.ranking!r}")
        if self.signal_margin < 0:
            raise ConfigError("signal_margin must be >= 0 (a cosine similarity's difference; 0: off)")
        if min(self.speaker_weight, self.session_weight, self.time_weight, self.recency_weight, self.prf_docs,
               self.prf_weight, self.statement_weight, self.informative_words, self.reply_weight) < 0:
            raise ConfigError("speaker_weight, session_weight, time_weight, recency_weight, statement_weight, "
                              "informative_words, reply_weight, prf_docs and prf_weight must be >= 0")
        if self.stamp_gap < 1:
            raise ConfigError("stamp_gap must be >= 1 (minutes after the line before at which a line shows its time)")
        if self.whole_top < 0:
            raise ConfigError("whole_top must be >= 0 (how many of the best hits may use the whole budget)")
        if self.line_words < 0:
            raise ConfigError("line_words must be >= 0 (0: a long text's whole summary line)")
        if self.depth < 0 or self.sparse_depth < 0 or self.neighbours < 0 or self.expand_top < 0:
            raise ConfigError("depth, sparse_depth, neighbours and expand_top must be >= 0")
        if self.graph_extractor not in ("auto", "spacy", "llm"):
            raise ConfigError("graph_extractor must be auto, spacy or llm")
        if self.graph_hops < 0 or self.graph_k < 0 or self.graph_weight < 0 or not 0.0 < self.graph_beta <= 1.0:
            raise ConfigError("graph_hops, graph_k and graph_weight must be >= 0 and graph_beta within (0, 1]")
        if self.max_query_chars < 1 or self.max_media_pixels < 1 or not self.max_media_seconds > 0:
            raise ConfigError("max_query_chars, max_media_pixels and max_media_seconds must be positive")
        if self.enrich not in ("async", "sync", "off"):
            raise ConfigError("enrich must be async, sync or off")
        if self.enrich_workers < 1 or self.enrich_attempts < 1 or not self.enrich_lease > 0 or self.enrich_backoff < 0:
            raise ConfigError("enrich_workers, enrich_attempts and enrich_lease must be positive, enrich_backoff >= 0")
        if self.planner not in PLANNERS:
            raise ConfigError(f"planner must be one of none, offline, llm (got {self.planner!r})")
        if self.plan_rounds < 0 or self.plan_calls < 1 or self.plan_tokens < 1 or not self.plan_deadline > 0:
            raise ConfigError("plan_rounds must be >= 0; plan_calls, plan_tokens and plan_deadline positive")
        if self.max_level not in (1, 2, 3):
            raise ConfigError("max_level must be 1, 2 or 3")
        if not -1.0 <= self.theta <= 1.0:
            raise ConfigError("theta must be within [-1, 1] (a cosine similarity)")


# The stage each setting belongs to, in the order of Settings' fields; docs/configuration.md has a section for each.
STAGES: dict[str, tuple[str, ...]] = {
    "Ingest": ("novelty", "novelty_threshold", "novelty_window", "summary_words", "timezone", "redact_pii"),
    "Embedding": ("embedder", "fast_queries", "embed_dates", "embed_context", "clip_model"),
    "BM25": ("language", "sparse_context", "query_stop_words"),
    "Candidates": ("dense", "sparse", "depth", "sparse_depth", "prf_docs", "prf_weight"),
    "Ranking signals": ("signal_depth", "signal_margin", "signals", "speaker_weight", "speaker_field",
                        "dense_without_names", "session_weight", "time_weight", "recency_weight", "statement_weight",
                        "informative_words", "reply_weight"),
    "Fusion and ranking": ("fusion", "rrf_k", "sparse_weight", "ranking", "reranker", "rerank_depth", "diversity"),
    "Packing": ("budget", "top_k", "max_level", "theta", "whole_share", "whole_top", "line_words", "neighbours",
                "expand_top", "packing", "stamp_gap", "elide_speakers", "fence_untrusted", "max_source_share"),
    "Planning": ("planner", "plan_rounds", "plan_calls", "plan_tokens", "plan_deadline"),
    "Knowledge graph": ("graph", "graph_extractor", "graph_hops", "graph_beta", "graph_k", "graph_weight"),
    "Enrichment": ("enrich", "enrich_workers", "enrich_lease", "enrich_attempts", "enrich_backoff", "llm_summaries",
                   "restate_window", "restate_overlap", "llm_workers", "auto_supersede", "vision_captions"),
    "Limits": ("max_query_chars", "max_media_pixels", "max_media_seconds"),
    "Storage and tracing": ("store", "url", "trace_content"),
}

def signals_setting(raw: object) -> str:
    """The ``signals`` setting as ``"name:weight,..."``, from that text or a ``{name: weight}`` mapping."""
    if isinstance(raw, Mapping):
        raw = ",".join(f"{name}:{weight}" for name, weight in raw.items())
    if not isinstance(raw, str):
        raise ConfigError(f"signals must be 'name:weight,...' or a mapping of names to weights, not {raw!r}")
    return ",".join(f"{name}:{weight!r}" for name, weight in signal_weights(raw))


def signal_weights(spec: str) -> tuple[tuple[str, float], ...]:
    """The (name, weight) pairs of a ``signals`` setting; a ConfigError names what is wrong."""
    pairs: list[tuple[str, float]] = []
    for item in (part.strip() for part in spec.split(",")):
        if not item:
            continue
        name, colon, weight = (x.strip() for x in item.rpartition(":"))
        try:
            value = float(weight) if colon and name else math.nan
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and value > 0):
            raise ConfigError(f"signals: {item!r} is not name:weight with a positive weight")
        if name in (n for n, _ in pairs):
            raise ConfigError(f"signals: {name!r} is named twice")
        pairs.append((name, value))
    return tuple(pairs)


def _elide_mode(raw: Any) -> bool | str:
    """``elide_speakers`` from any layer: ``auto`` or a boolean spelling, else a ConfigError that says so."""
    if str(raw).strip().lower() == "auto":
        return "auto"
    try:
        return _to_bool(raw)
    except ValueError:
        raise ConfigError(f"elide_speakers must be true, false or auto, not {raw!r}") from None


def _to_bool(raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in {"1", "true", "yes", "on"}:
        return True
    if text in {"0", "false", "no", "off"}:
        return False
    raise ValueError(raw)
