"""A face: ``omnimem.apikeys`` (docs/http-api.md) keeps working; the keys live in :mod:`omnimem.store.apikeys`."""

from omnimem.store.apikeys import PREFIX, check_key, create_key, digest

__all__ = ["PREFIX", "check_key", "create_key", "digest"]
