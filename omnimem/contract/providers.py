"""One registry for every provider: embedders, LLMs, image captioners,
transcribers, voice-activity detectors, graph extractors, CLIP encoders and
ranking signals.

Each kind is a small Protocol with a ``name``. Built-ins register exactly as
third parties do: by ``(kind, name, factory)``, where a factory is a
callable or a lazy ``"module:attribute"`` reference (so nothing heavy is
imported until a provider is built). Plugins add entry points in the group
``omnimem.providers``; each names a function that receives the registry and
registers what it brings. One duplicate rule for every kind: a name (or
alias) already taken is a ConfigError unless ``replace=True``.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Sequence
from importlib.metadata import entry_points
from typing import Any, Literal, Protocol, runtime_checkable

from omnimem.errors import ConfigError

Kind = Literal["embedder", "llm", "captioner", "transcriber", "vad", "graph_extractor", "clip", "signal"]
KINDS: tuple[Kind, ...] = ("embedder", "llm", "captioner", "transcriber", "vad", "graph_extractor", "clip", "signal")
ENTRY_POINT_GROUP = "omnimem.providers"
_LABELS = {"llm": "LLM", "vad": "voice-activity", "graph_extractor": "graph extractor", "clip": "CLIP",
           "signal": "ranking signal"}
Factory = Callable[..., Any] | str  # a callable, or "module:attribute" imported when first used


@runtime_checkable
class Provider(Protocol):
    """What every provider has: the name it is registered (and recorded) under."""

    name: str


class Captioner(Provider, Protocol):
    def caption(self, data: bytes, mime: str) -> str: ...


class Transcriber(Provider, Protocol):
    def transcribe(self, samples: Any) -> str:
        """Text of 16 kHz mono float32 samples ("" when nothing was recognised)."""
        ...


class SpeechDetector(Provider, Protocol):
    def spans(self, samples: Any) -> list[tuple[int, int]]:
        """(start, end) sample offsets of speech in 16 kHz mono float32 samples."""
        ...


class RankingSignal(Provider, Protocol):
    def rank(self, query: str, units: Sequence[Any]) -> Sequence[str]:
        """The ids of the units (:class:`omnimem.mau.MAU`, the search's best candidates in its order) this
        signal prefers for ``query``, best first; units it leaves out get nothing from it."""
        ...


# kind, name, factory, aliases: the built-ins, registered like any plugin
BUILTINS: tuple[tuple[Kind, str, str, tuple[str, ...]], ...] = (
    ("embedder", "all-MiniLM-L6-v2", "omnimem.embed.minilm:MiniLMEmbedder", ("minilm", "default")),
    ("embedder", "all-MiniLM-L6-v2-int8", "omnimem.embed.onnx:OnnxMiniLMEmbedder", ("minilm-onnx", "onnx")),
    ("embedder", "multilingual-e5-small", "omnimem.embed.e5:E5Embedder", ("e5", "multilingual")),
    ("embedder", "fake", "omnimem.embed.fake:FakeEmbedder", ()),
    ("embedder", "fake-exact", "omnimem.embed.fake:ExactFakeEmbedder", ()),
    ("llm", "openai", "omnimem.llm.registry:openai_from_settings", ()),
    ("llm", "fake", "omnimem.llm.fake:FakeLLM", ()),
    ("captioner", "vision-llm", "omnimem.engine.ingest.media:VisionCaptioner", ()),
    ("transcriber", "whisper", "omnimem.media.audio:WhisperTranscriber", ()),
    ("vad", "silero", "omnimem.media.audio:SileroSpeechDetector", ()),
    ("graph_extractor", "spacy", "omnimem.graph.extract:SpacyExtractor", ()),
    ("graph_extractor", "llm", "omnimem.graph.extract:LLMExtractor", ()),
    ("clip", "clip", "omnimem.media.clip:CLIPImageEmbedder", ()),
)


class Registry:
    """Name -> factory, per kind; built-ins and entry-point plugins are loaded on first use."""

    def __init__(self, *, builtins: bool = True, plugins: bool = True) -> None:
        self._factories: dict[tuple[str, str], Factory] = {}
        self._aliases: dict[tuple[str, str], str] = {}
        self._pending = [self._register_builtins] if builtins else []
        if plugins:
            self._pending.append(self.load_plugins)
        self._lock = threading.RLock()

    def _ready(self) -> None:
        with self._lock:
            while self._pending:
                self._pending.pop(0)()

    def _register_builtins(self) -> None:
        for kind, name, factory, aliases in BUILTINS:
            self.register(kind, name, factory, aliases=aliases)

    def load_plugins(self) -> None:
        """Call every ``omnimem.providers`` entry point with this registry."""
        for point in entry_points(group=ENTRY_POINT_GROUP):
            point.load()(self)

    def register(self, kind: Kind, name: str, factory: Factory, *, aliases: Sequence[str] = (),
                 replace: bool = False) -> None:
        """Make ``create(kind, name)`` build ``factory(...)``; a taken name is an error unless ``replace``."""
        if kind not in KINDS:
            raise ConfigError(f"unknown provider kind {kind!r}; kinds: {', '.join(KINDS)}")
        with self._lock:
            self._ready()
            for key in (name, *aliases):
                taken = (kind, key) in self._factories or (kind, key) in self._aliases
                if taken and not replace:
                    raise ConfigError(f"a {_LABELS.get(kind, kind)} provider named {key!r} is already registered "
                                      "(pass replace=True to replace it)")
            self._aliases.pop((kind, name), None)
            self._factories[(kind, name)] = factory
            for alias in aliases:
                self._aliases[(kind, alias)] = name

    def canonical(self, kind: Kind, name: str) -> str:
        """The registered name behind an alias (or ``name`` itself)."""
        self._ready()
        return self._aliases.get((kind, name), name)

    def create(self, kind: Kind, name: str, **kwargs: Any) -> Any:
        """Build the provider registered as ``name``; an unknown name lists the known ones."""
        self._ready()
        key = self.canonical(kind, name)
        factory = self._factories.get((kind, key))
        if factory is None:
            known = ", ".join(sorted({*self.names(kind), *(a for k, a in self._aliases if k == kind)}))
            raise ConfigError(f"unknown {_LABELS.get(kind, kind)} provider {name!r}; registered: {known or 'none'}")
        if isinstance(factory, str):
            module, _, attribute = factory.partition(":")
            factory = getattr(importlib.import_module(module), attribute)
        return factory(**kwargs)

    def names(self, kind: Kind) -> list[str]:
        """Registered names of one kind, sorted (aliases not included)."""
        self._ready()
        return sorted(name for k, name in self._factories if k == kind)


providers = Registry()  # the process's registry: built-ins, plugins, and what callers register


def register_provider(kind: Kind, name: str, factory: Factory, *, aliases: Sequence[str] = (),
                      replace: bool = False) -> None:
    providers.register(kind, name, factory, aliases=aliases, replace=replace)


def create_provider(kind: Kind, name: str, **kwargs: Any) -> Any:
    return providers.create(kind, name, **kwargs)
