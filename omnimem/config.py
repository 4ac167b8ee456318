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
    """Every tunable of the core, with the paper's defaults."""

    embedder: str | None = None  # None: the store's own, or the default for a new store
    fast_queries: bool = True  # embed search queries with the store model's faster equivalent where one is
    #                           installed (omnimem.embed.query: all-MiniLM-L6-v2's int8 ONNX copy); never stored
    language: str = "en"  # what BM25 tokenises, stems and drops stop words by: "en", "auto" (detected per unit and
    #                       query) or a language code (omnimem.text.LANGUAGES); recorded by a new store, and a store
    #                       opens only with its own (docs/retrieval.md, "Languages")
    novelty: bool = True
    novelty_threshold: float = 0.8
    novelty_window: int = 10
    top_k: int = 0  # at most this many hits, the best of the fused ranking (0: as many as the budget holds)
    theta: float = 0.4
    budget: int = 6000
    dense: bool = True  # retrievers to use; switching one off is for ablations
    sparse: bool = True
    max_level: int = 3  # highest pyramid level to spend budget on (1, 2 or 3)
    fusion: str = "rrf"  # "rrf" (reciprocal rank fusion) or "union" (the paper: dense order, BM25-only appended)
    depth: int = 0  # candidates per retriever; 0 = enough to fill the budget (max(top_k, budget // 20), deeper
    #                 where every candidate fit with room left and the scope holds more); union: top_k
    #                 or 20
    sparse_depth: int = 0  # BM25 candidates (0: the same as depth; 50 changed nothing on every LongMemEval dev
    #                        question, benchmarks/results/longmemeval-retrieval-dev-all-x)
    neighbours: int = 0  # same-session turns added on each side of the best hits (off: on LoCoMo it cost
    #                     9 points of recall within 1,000 tokens for 0.3 within 6,000)
    expand_top: int = 10  # how many of the best hits get their neighbours
    packing: str = "day"  # "day" (one [time] header per session and day, the time of day before a line where the
    #                       conversation resumes), "session" (one [time] header per session and time) or "line"
    #                       ([time] per hit)
    stamp_gap: int = 30  # day packing: a line shows its time of day when it is at least this many minutes after
    #                      the line before it (1: wherever the minute changes, the rendering before; short-message
    #                      chats, benchmarks/results/packing-cost.md)
    elide_speakers: bool | str = "auto"  # day packing: a text line that goes on, without a time stamp, from a line
    #                               of the same speaker omits "speaker: " (True), only where the two lines carry
    #                               times of their own, as chat messages do ("auto": transcripts whose turns share
    #                               their session's time keep every name, where leaving them out measured no
    #                               better), or never (False); short-message chats: benchmarks/results/packing-cost.md
    fence_untrusted: bool = True  # a rendered context puts text below trusted (tool output, documents, imports)
    #                               between <untrusted> and </untrusted>, under a line saying it is data, not
    #                               instructions; charged in the budget like every line (docs/security.md)
    max_source_share: float = 1.0  # the share of a context's budget the lines of any one source below trusted
    #                                (its source kind and actor) may fill; 1: no cap (docs/security.md)
    summary_words: int = 100  # text up to this many words is kept whole; longer text gets a summary line, what
    #                           dense and BM25 index of it (100 rather than 150: LongMemEval dev, 36 questions,
    #                           0.787 -> 0.825 within 1k and 0.947 -> 0.972 within 6k; on all 91 dev questions
    #                           0.783 / 0.958 -> 0.800 / 0.974; LoCoMo dev unchanged)
    whole_share: float = 0.5  # the best hits are shown whole (full text, not their summary line), in rank order,
    #                           while the context stays within this share of the budget (0: summaries first)
    whole_top: int = 0  # the best this many hits are shown whole whenever they fit the whole budget (off: on
    #                     every LongMemEval dev question 1 cost 0.02 within 1k tokens, a long best hit crowds out
    #                     others)
    line_words: int = 20  # a hit not shown whole whose summary stands for a longer text says at most this many
    #                       words (0: its whole summary line); indexing is unchanged (LongMemEval dev, every
    #                       question: 0.800 / 0.974 -> 0.871 / 0.997 within 1k / 6k; LoCoMo dev unchanged; 10
    #                       words 0.891 / 0.997, 20 kept so that the line still says what its turn is about;
    #                       benchmarks/results/longmemeval-retrieval-dev-all-lines)
    rrf_k: int = 60  # reciprocal rank fusion constant: score = sum of weight / (rrf_k + rank)
    reranker: str | None = None  # local sentence-transformers CrossEncoder folder: re-orders the best candidates
    rerank_depth: int = 30  # how many of the fused ranking's best candidates the reranker re-orders
    query_stop_words: bool = True  # BM25 matches a query without the words of a full English stop list
    sparse_weight: float = 1.0  # weight of the BM25 ranking in the fusion (dense has 1)
    # ranking signals over the best fused candidates (omnimem.engine.retrieval.signals): each is one more
    # ranked list in the fusion, at this weight (0: off)
    signal_depth: int = 50  # how many of the fused ranking's best candidates the signals read and re-order
    signals: str = ""  # ranking signals of plugins (docs/plugins.md), "name:weight,...": each re-orders the
    #                    ranking's best candidates as one more ranked list at its weight (a dict in Python)
    ranking: str = "learnt"  # "rules": the signals' lists at their weights; "learnt": the packaged model re-orders
    #                         the first 30 fused candidates (omnimem.engine.retrieval.learnt; it won on every dev
    #                         split within 1k tokens, final/default-50); or a model file's path
    signal_margin: float = 0.15  # the signals never put a unit above one whose dense similarity is this much higher
    #                             and whose BM25 score is no lower (omnimem.fusion.clear_wins_kept; 0: off)
    speaker_weight: float = 0.5  # the units of a speaker the query names (with speaker_field: LoCoMo dev recall
    #                              within 1k tokens 0.831 -> 0.854; LongMemEval dev, whose questions name no speaker,
    #                              unchanged; benchmarks/results/locomo-retrieval-dev-ranking)
    speaker_field: bool = True  # with speaker_weight: a named speaker is matched as the field only; dense and BM25
    #                             search the rest of the query (one more query embedding for such queries)
    dense_without_names: bool = True  # with speaker_field: dense too searches the query without the names (False:
    #                                   dense searches the query as asked, BM25 the rest); hits are scored against
    #                                   the query as asked either way
    planner: str | None = None  # retrieval planning (omnimem.engine.retrieval.planner): None one search, "offline"
    #                             rewritten queries and a second hop from the question's form and the store, "llm"
    #                             the configured model's analysis, expansion and adequacy check (docs/planner.md)
    plan_rounds: int = 1  # rounds a planner may add after its first (the adequacy check's "search again")
    plan_calls: int = 3  # model calls per search, at most (the llm planner)
    plan_tokens: int = 4000  # prompt + completion tokens per search, at most (the llm planner)
    plan_deadline: float = 10.0  # seconds after which a planned search returns the best context so far
    session_weight: float = 0.5  # units by the summed fused score of their session (with line_words=20, within 1k:
    #                              LongMemEval dev 0.871 -> 0.885, LoCoMo dev 0.856 -> 0.858, Mem-Gallery dev
    #                              0.891 -> 0.899, 6k unchanged; before line_words it cost LongMemEval dev 0.042;
    #                              benchmarks/results/*-dev-*session)
    time_weight: float = 1.0  # units inside the time window a relative time in the query names ("last week"),
    #                           read against the search's ``now`` (LoCoMo dev +0.005 within 1k; LongMemEval dev same)
    recency_weight: float = 0.0  # units newest first
    statement_weight: float = 0.0  # units that state something (informative_words content words outside
    #                                questions), in fused order: a turn that only asks ("What did you paint?")
    #                                matches a question's form, not its answer
    informative_words: int = 4  # content words outside questions that make a unit a statement (statement_weight)
    reply_weight: float = 0.0  # the turn right after a head unit that asks something (its reply), in the order of
    #                           the asking units: a question turn matches a query's words, its answer follows it
    prf_docs: int = 0  # pseudo-relevance feedback: dense searched again with the query moved towards this many
    #                    of the best candidates' vectors (Rocchio; 0: off)
    prf_weight: float = 0.5  # how far the query vector moves (the mean of the feedback vectors, times this)
    embed_dates: bool = False  # embed "[event date] speaker: text" instead of "speaker: text"
    embed_context: int = 0  # embed each text unit after this many text units before it in the same scope (2: +0.008
    #                         LoCoMo dev recall within 1k tokens for 2.6x the encoder time per turn; off)
    sparse_context: int = 1  # BM25 also indexes the words of this many text units before each unit
    diversity: float = 0.0  # re-rank so one session does not fill the top: score / (1 + diversity * earlier hits)
    restate_window: int = 40  # turns per restatement window (SimpleMem: 40 with 2 of overlap)
    restate_overlap: int = 2
    llm_workers: int = 4  # parallel LLM calls during restatement
    llm_summaries: bool = True  # with an LLM: summarise long text for level 1 (full text stays at level 2)
    auto_supersede: bool = False  # with an LLM: let it mark earlier units a new one replaces (logged)
    clip_model: str | None = None  # local CLIP checkpoint folder: image embeddings and text-to-image search
    vision_captions: bool = False  # caption images without a caption with the configured (vision) LLM
    graph: bool = False  # build the knowledge graph on ingest and expand queries through it
    graph_extractor: str = "auto"  # "spacy", "llm", or "auto" (the LLM when one is configured)
    graph_hops: int = 2
    graph_beta: float = 0.5
    graph_k: int = 10  # graph-only units merged into the results per query
    graph_weight: float = 0.0  # >0: the graph's units (the query's entities and their h-hop neighbourhood, by
    #                            beta^distance x confidence) are one more ranked list in the fusion at this weight,
    #                            instead of graph_k units appended after the fused ones
    enrich: str = "async"  # model work on the write path (LLM summaries, restatement, captions, graph, supersession):
    #                        "async" queued for a worker thread, "sync" inline (blocks the add), "off" queued for
    #                        an external `omnimem worker`
    enrich_workers: int = 1  # worker threads an "async" engine runs
    enrich_lease: float = 300.0  # seconds a claimed job is held before another worker may take it over
    enrich_attempts: int = 5  # attempts before a failing job is parked as failed (the dead letter)
    enrich_backoff: float = 2.0  # seconds before the first retry; doubled after each failure (at most 1 hour)
    timezone: str = "UTC"
    store: str | None = None  # default store folder for the CLI
    url: str | None = None  # a database to open instead of a folder (postgresql://...), when no path is given
    max_query_chars: int = 20_000  # longer queries are refused (a 20 MB query took 22 s and 3.3 GB)
    max_media_pixels: int = 50_000_000  # per image or video frame, checked from headers before decoding
    max_media_seconds: float = 14_400.0  # per audio or video input (4 hours)
    trace_content: bool = False  # OpenTelemetry spans also carry texts, queries, answers and ids (omnimem.otel)
    redact_pii: bool = False  # personal data (emails, phones, cards, accounts, addresses, names) is replaced by
    #                           typed placeholders before anything is stored (omnimem.engine.ingest.redact)

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
