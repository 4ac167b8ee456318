"""Schemathesis against the app's own OpenAPI schema: no 5xx, and every answer matches the schema.

Bounded (a few examples per operation, a few hundred cases in all) so it runs
in CI in well under a minute. The app is served in-process (ASGI) over a
fresh in-memory store, with a store-wide admin key so every route is reached.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from omnimem import Memory
from omnimem.store.apikeys import create_key
from omnimem.server import create_app

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance,
          response_headers_conformance]


@schemathesis.serializer("application/x-ndjson")
def _ndjson(_: Any, value: Any) -> bytes:
    """Import bodies are text (JSON Lines): send the generated string as it is."""
    return value.encode("utf-8", "surrogatepass") if isinstance(value, str) else repr(value).encode("utf-8")


MEMORY = Memory(embedder="fake")  # in memory, fake embedder: cheap to build while collecting
KEY, _ = create_key(MEMORY.store, name="fuzzer", role="admin")
MEMORY.add("a seed memory about green tea", user_id="u")
schema = schemathesis.openapi.from_asgi("/openapi.json", create_app(MEMORY, rate_limit=None, max_upload=2_000_000,
                                                                      allowed_hosts=("testserver",)))  # its client's Host


@pytest.fixture(scope="module", autouse=True)
def _close_memory() -> Iterator[None]:
    yield
    MEMORY.close()


@schema.parametrize()
@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True,
          database=None)
def test_api_holds_its_schema_under_fuzzing(case: Any) -> None:
    case.call_and_validate(headers={"Authorization": f"Bearer {KEY}"}, checks=CHECKS)
