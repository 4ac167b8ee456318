"""The embedder contract; embedders register through :mod:`omnimem.contract.providers`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from omnimem.errors import EmbedderMismatchError
from omnimem.contract.providers import providers

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


NO_ROLES = "none"
"""The role scheme of a model that embeds queries and stored texts alike (what a store without one records)."""


@runtime_checkable
class RoleEmbedder(Embedder, Protocol):
    """An embedder whose queries are embedded differently from what it stores (e5's ``query: `` and
    ``passage: `` prefixes).

    ``embed`` gives the vectors a store holds (passages), ``embed_query`` those searched with; ``roles``
    names the scheme and is recorded in the store's meta beside ``name``, so a store is never searched with
    vectors of another scheme. An embedder without these members has no roles: its ``embed`` serves both.
    """

    roles: str

    def embed_query(self, texts: Sequence[str]) -> Vectors: ...


def role_scheme(embedder: Embedder) -> str:
    """The role scheme ``embedder`` records: its ``roles``, or :data:`NO_ROLES` when it has none."""
    roles = getattr(embedder, "roles", None)
    return roles if isinstance(roles, str) and roles else NO_ROLES


def check_roles(recorded: str, embedder: Embedder, where: object) -> None:
    """An EmbedderMismatchError unless ``embedder`` has the role scheme a store recorded (``none`` for stores
    made before role schemes were recorded)."""
    if role_scheme(embedder) != recorded:
        raise EmbedderMismatchError(
            f"store {where} holds vectors of {embedder.name} with role scheme {recorded!r}, but this "
            f"{embedder.name} embedder has {role_scheme(embedder)!r}: its query vectors would not match them")


def embed_queries(embedder: Embedder, texts: Sequence[str]) -> Vectors:
    """Vectors of search queries: ``embed_query`` where the embedder has roles or a query model of its own (a
    faster model measured equivalent for queries, :class:`omnimem.embed.query.FastQueries`), else ``embed``."""
    query = getattr(embedder, "embed_query", None)
    routed = getattr(embedder, "query_model", None) is not None
    if (routed or role_scheme(embedder) != NO_ROLES) and callable(query):
        vectors: Vectors = query(texts)
        return vectors
    return embedder.embed(texts)


def register_embedder(name: str, factory: Callable[[], Embedder], *, aliases: Sequence[str] = (),
                      replace: bool = False) -> None:
    """Make an embedder available by ``name`` (see :mod:`omnimem.contract.providers`: one rule for every kind)."""
    providers.register("embedder", name, factory, aliases=aliases, replace=replace)


def canonical_name(name: str) -> str:
    return providers.canonical("embedder", name)


def create_embedder(name: str) -> Embedder:
    """Instantiate a registered embedder; unknown names are a ConfigError."""
    instance: Embedder = providers.create("embedder", name)
    return instance


def available_embedders() -> list[str]:
    return providers.names("embedder")


def embed_by_length(
    texts: Sequence[str], dim: int, batch_size: int, tokenizer: Any,
    hidden: Callable[[npt.NDArray[np.int64], npt.NDArray[np.int64]], npt.NDArray[np.float32]],
) -> Vectors:
    """Sentence vectors of a BERT-style model: texts of similar length batched together (a batch pads
    little, as sentence-transformers does), ``hidden(ids, mask)`` the last hidden state of a padded
    batch, mean-pooled over the attention mask, then L2-normalised."""
    out = np.zeros((len(texts), dim), dtype=np.float32)
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        encodings = tokenizer.encode_batch([texts[i] for i in rows])
        ids = np.asarray([e.ids for e in encodings], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in encodings], dtype=np.int64)
        weights = mask[:, :, None].astype(np.float32)
        summed = (hidden(ids, mask) * weights).sum(axis=1)
        out[rows] = (summed / np.clip(weights.sum(axis=1), 1e-9, None)).astype(np.float32)
    return normalise(out)


def normalise(vectors: npt.ArrayLike) -> Vectors:
    """Row-wise L2 normalisation; zero rows stay zero."""
    arr = np.asarray(vectors, dtype=np.float32)
    if arr.ndim == 1:
        arr = arr[None, :]
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(arr / norms, dtype=np.float32)
