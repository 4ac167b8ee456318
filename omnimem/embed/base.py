"""The embedder contract and the registry every embedder goes through."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from omnimem.errors import ConfigError

Vectors = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Maps texts to L2-normalised float32 vectors of a fixed dimension.

    ``name`` is recorded in a store's meta table: two embedders with the same
    name must produce interchangeable vectors.
    """

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> Vectors: ...


_REGISTRY: dict[str, Callable[[], Embedder]] = {}
_ALIASES: dict[str, str] = {}


def register_embedder(name: str, factory: Callable[[], Embedder], *, aliases: Sequence[str] = ()) -> None:
    """Make an embedder available by ``name`` (built-ins register the same way)."""
    _REGISTRY[name] = factory
    for alias in aliases:
        _ALIASES[alias] = name


def canonical_name(name: str) -> str:
    return _ALIASES.get(name, name)


def create_embedder(name: str) -> Embedder:
    """Instantiate a registered embedder; unknown names are a ConfigError."""
    key = canonical_name(name)
    try:
        factory = _REGISTRY[key]
    except KeyError:
        known = ", ".join(sorted([*_REGISTRY, *_ALIASES]))
        raise ConfigError(f"unknown embedder {name!r}; known: {known}") from None
    return factory()


def available_embedders() -> list[str]:
    return sorted(_REGISTRY)


def normalise(vectors: npt.ArrayLike) -> Vectors:
    """Row-wise L2 normalisation; zero rows stay zero."""
    arr = np.asarray(vectors, dtype=np.float32)
    if arr.ndim == 1:
        arr = arr[None, :]
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(arr / norms, dtype=np.float32)
