"""Operations: health, Prometheus metrics per route, the OpenAPI document and the docs page."""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families

from omnimem import Memory
from tests.server.conftest import Served
from tests.serving import LiveServer


def test_healthz_needs_no_key(served: Served) -> None:
    assert httpx.get(f"{served.url}/healthz").json() == {"status": "ok", "read_only": False}


def test_metrics_count_requests_per_route_template_and_status(served: Served) -> None:
    alice = served.client("alice")
    unit_id = alice.post("/v1/units", json={"text": "metrics are counted"}).json()["id"]
    alice.get(f"/v1/units/{unit_id}")
    alice.get("/v1/units/missing")
    served.client(None).get("/v1/units")
    assert httpx.get(f"{served.url}/metrics").status_code == 401  # behind an admin key (--public-metrics: not)
    assert alice.get("/metrics").status_code == 403
    families = {f.name: f for f in text_string_to_metric_families(served.client("root").get("/metrics").text)}
    counts = {(s.labels["method"], s.labels["route"], s.labels["status"]): s.value
              for s in families["omnimem_http_requests"].samples if s.name.endswith("_total")}
    assert counts[("POST", "/v1/units", "201")] == 1
    assert counts[("GET", "/v1/units/{unit_id}", "200")] == 1  # the template, not the id: bounded labels
    assert counts[("GET", "/v1/units/{unit_id}", "404")] == 1
    assert counts[("GET", "/v1/units", "401")] == 1
    latency = {s.labels["route"] for s in families["omnimem_http_request_seconds"].samples}
    assert "/v1/units/{unit_id}" in latency


def test_two_apps_keep_separate_metrics() -> None:
    with Memory(embedder="fake") as one, Memory(embedder="fake") as two:
        first, second = LiveServer(one, auth=False), LiveServer(two, auth=False)
        try:
            httpx.get(f"{first.url}/v1/units")
            assert 'route="/v1/units"' in httpx.get(f"{first.url}/metrics").text
            assert 'route="/v1/units"' not in httpx.get(f"{second.url}/metrics").text
        finally:
            first.stop()
            second.stop()


def test_openapi_and_docs_are_served(served: Served) -> None:
    schema = httpx.get(f"{served.url}/openapi.json").json()
    paths = set(schema["paths"])
    assert {"/v1/units", "/v1/units/{unit_id}", "/v1/units/{unit_id}/raw", "/v1/search", "/v1/ask", "/v1/forget",
            "/v1/export", "/v1/import", "/v1/entities", "/v1/stats", "/v1/session", "/v1/images", "/v1/audio",
            "/v1/videos", "/v1/dialogues", "/v1/log", "/healthz", "/metrics"} <= paths
    assert "ErrorBody" in schema["components"]["schemas"]
    assert httpx.get(f"{served.url}/docs").status_code == 200
