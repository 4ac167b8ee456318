"""API keys for the HTTP server: :mod:`omnimem.store.apikeys` (which needs no FastAPI, so ``omnimem keys
create`` works without the ``server`` extra), under the name the server and its tests import."""

from omnimem.store.apikeys import PREFIX, check_key, create_key, digest

__all__ = ["PREFIX", "check_key", "create_key", "digest"]
