"""Bad input over HTTP: a 4xx error body, nothing stored, nothing leaked.

Rate limits (429 + Retry-After), body and upload limits (413), malformed
JSON, unknown fields, wrong types and content types, path-like upload names,
and a client that disconnects halfway through an upload.
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from omnimem.errors import RateLimitError
from omnimem.server import RateLimit
from tests.server.conftest import Served, png, start, stop


def _error(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.json()["error"] == code


def _uploads_left() -> list[str]:
    return [n for n in os.listdir(tempfile.gettempdir()) if n.startswith("omnimem-upload-")]


@pytest.fixture
def limited(tmp_path: Path) -> Iterator[Served]:
    s = start(tmp_path, rate_limit=RateLimit(rate=0.5, burst=3), max_body=2_000, max_upload=20_000)
    yield s
    stop(s)


def test_a_key_over_its_rate_gets_429_with_retry_after(limited: Served) -> None:
    bob = limited.client("bob")
    assert [bob.get("/v1/units").status_code for _ in range(3)] == [200, 200, 200]
    refused = bob.get("/v1/units")
    _error(refused, 429, "RateLimitError")
    assert int(refused.headers["retry-after"]) >= 1
    assert limited.client("alice").get("/v1/units").status_code == 200  # buckets are per key
    with limited.remote("bob") as remote, pytest.raises(RateLimitError) as raised:
        remote.units()
    assert raised.value.retry_after >= 1


def test_an_oversize_body_is_413_and_stores_nothing(limited: Served) -> None:
    alice = limited.client("alice")
    _error(alice.post("/v1/units", json={"text": "x" * 5_000}), 413, "PayloadTooLargeError")

    def chunks() -> Iterator[bytes]:  # no Content-Length: the server counts as it reads
        yield b'{"text": "'
        for _ in range(10):
            yield b"y" * 500
        yield b'"}'

    chunked = alice.post("/v1/units", content=chunks(), headers={"content-type": "application/json"})
    _error(chunked, 413, "PayloadTooLargeError")
    assert limited.memory.count_units() == 0


def test_an_oversize_upload_is_413_and_stores_nothing(limited: Served) -> None:
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.frombytes("RGB", (100, 100), os.urandom(30_000)).save(buffer, format="PNG")  # noise: incompressible
    big = buffer.getvalue()
    assert len(big) > 20_000
    response = limited.client("alice").post("/v1/images", files={"file": ("big.png", big)})
    _error(response, 413, "PayloadTooLargeError")
    assert limited.memory.count_units() == 0 and not _uploads_left()


@pytest.mark.parametrize(("body", "what"), [
    (b'{"text": "unterminated', "the body is not valid JSON: Unterminated string starting at line 1 column 10"),
    (b'{"text": "ok", "colour": "blue"}', "colour: Extra inputs are not permitted"),
    (b'{"text": 42}', "text: Input should be a valid string"),
    (b'{"text": "ok", "allow_forgotten": "yes"}', "allow_forgotten"),
    (b'["not", "an", "object"]', "valid dictionary"),
    (b"", "Field required"),
])
def test_malformed_bodies_are_422_invalid_input(served: Served, body: bytes, what: str) -> None:
    response = served.client("alice").post("/v1/units", content=body, headers={"content-type": "application/json"})
    _error(response, 422, "InvalidInputError")
    assert what in response.json()["message"]
    assert served.memory.count_units() == 0


def test_wrong_content_types_are_refused(served: Served) -> None:
    alice = served.client("alice")
    _error(alice.post("/v1/units", content=b"text=hello", headers={"content-type": "text/plain"}), 422,
           "InvalidInputError")
    _error(alice.post("/v1/import", content=b"{}", headers={"content-type": "application/json"}), 415,
           "UnsupportedMediaError")
    _error(alice.post("/v1/images", json={"file": "not multipart"}), 422, "InvalidInputError")
    _error(alice.post("/v1/images", files={"file": ("notes.png", b"this is text, not a picture")}), 415,
           "UnsupportedMediaError")
    _error(alice.post("/v1/import", content=b"{not json\n", headers={"content-type": "application/x-ndjson"}),
           400, "MalformedDataError")
    assert served.memory.count_units() == 0 and not _uploads_left()


def test_path_like_upload_names_are_only_labels(served: Served, tmp_path: Path) -> None:
    target = tmp_path / "escaped.png"
    name = f"../../../../../../..{target}"
    result = served.client("alice").post("/v1/images", files={"file": (name, png(4))}).json()
    unit = served.memory.get(result["id"])
    assert unit.metadata["filename"] == "escaped.png"
    assert not target.exists() and not _uploads_left()
    windows = served.client("alice").post("/v1/images", files={"file": ("..\\..\\C:\\windows.png", png(5))})
    assert served.memory.get(windows.json()["id"]).metadata["filename"] == "windows.png"


@pytest.mark.parametrize(("given", "kept"), [
    ("../../etc/passwd", "passwd"), ("..\\..\\boot.ini", "boot.ini"), ("a\x00b\x1fc\x7f.png", "abc.png"),
    ("..", "upload"), ("", "upload"), (None, "upload"), (".hidden", "hidden"), ("x" * 500, "x" * 200),
])
def test_safe_names(given: str | None, kept: str) -> None:
    from omnimem.server.uploads import safe_name

    assert safe_name(given) == kept


def test_a_client_that_disconnects_mid_upload_leaves_nothing(served: Served) -> None:
    host, port = served.url.removeprefix("http://").split(":")
    boundary = "omnimemboundary"
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"half.png\"\r\n"
            "Content-Type: image/png\r\n\r\n").encode()
    data = png(6)
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall((f"POST /v1/images HTTP/1.1\r\nHost: {host}\r\n"
                      f"Authorization: Bearer {served.keys['alice']}\r\n"
                      f"Content-Type: multipart/form-data; boundary={boundary}\r\n"
                      f"Content-Length: {len(head) + len(data) * 10}\r\n\r\n").encode() + head + data[: len(data) // 2])
        time.sleep(0.3)
    time.sleep(0.5)  # let the server notice
    assert served.memory.count_units() == 0 and not _uploads_left()
    ok = served.client("alice").post("/v1/images", files={"file": ("whole.png", data)})
    assert ok.status_code == 201 and served.memory.count_units() == 1  # and the server still serves


def test_no_auth_is_loopback_only() -> None:
    from omnimem.errors import ConfigError
    from omnimem.server.serve import ServeOptions

    with pytest.raises(ConfigError, match="loopback"):
        ServeOptions(store="x", host="0.0.0.0", auth=False).check()
    ServeOptions(store="x", host="127.0.0.1", auth=False).check()


def test_json_numbers_that_python_cannot_store_are_refused(served: Served) -> None:
    body = json.dumps({"query": "tea", "top_k": 10**30})
    response = served.client("alice").post("/v1/search", content=body, headers={"content-type": "application/json"})
    _error(response, 400, "InvalidInputError")  # the facade's own range check answered, not a 500
    assert "top_k" in response.json()["message"]


def test_token_buckets_refill_at_the_rate_and_forget_full_ones() -> None:
    from omnimem.server.limits import RateLimiter

    now = [0.0]
    limiter = RateLimiter(RateLimit(rate=2.0, burst=2), clock=lambda: now[0], max_keys=3)
    limiter.take("a")
    limiter.take("a")
    with pytest.raises(RateLimitError) as refused:
        limiter.take("a")
    assert refused.value.retry_after == pytest.approx(0.5)
    now[0] = 0.5  # one token back
    limiter.take("a")
    with pytest.raises(RateLimitError):
        limiter.take("a")
    for key in ("b", "c", "d"):
        limiter.take(key)
    now[0] = 100.0
    limiter.take("e")  # over max_keys: the buckets that refilled are dropped
    assert len(limiter) == 1  # only "e", which just spent a token
