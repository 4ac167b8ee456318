"""The embedder contract; embedders register through :mod:`omnimem.providers`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from omnimem.providers import providers

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


def register_embedder(name: str, factory: Callable[[], Embedder], *, aliases: Sequence[str] = (),
                      replace: bool = False) -> None:
    """Make an embedder available by ``name`` (see :mod:`omnimem.providers`: one rule for every kind)."""
    providers.register("embedder", name, factory, aliases=aliases, replace=replace)


def canonical_name(name: str) -> str:
    return providers.canonical("embedder", name)


def create_embedder(name: str) -> Embedder:
    """Instantiate a registered embedder; unknown names are a ConfigError."""
    instance: Embedder = providers.create("embedder", name)
    return instance


def available_embedders() -> list[str]:
    return providers.names("embedder")


def normalise(vectors: npt.ArrayLike) -> Vectors:
    """Row-wise L2 normalisation; zero rows stay zero."""
    arr = np.asarray(vectors, dtype=np.float32)
    if arr.ndim == 1:
        arr = arr[None, :]
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(arr / norms, dtype=np.float32)
