"""``omnimem serve`` and ``omnimem keys`` as a user runs them: real processes, real HTTP."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from omnimem import Memory
from omnimem.cli.commands import app

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_keys_create_list_revoke(tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    with Memory(store, embedder="fake"):  # keys belong to a store: `keys create` makes none
        pass
    runner = CliRunner()
    made = runner.invoke(app, ["keys", "create", "--name", "ann-bot", "--user-id", "ann", "--role", "write",
                               "--store", store, "--json"])
    assert made.exit_code == 0, made.output
    created = json.loads(made.stdout)
    key = created["api_key"]
    assert key.startswith(f"omk_{created['key_id']}_") and created["role"] == "write"
    listed = runner.invoke(app, ["keys", "list", "--store", store, "--json"])
    assert json.loads(listed.stdout) == [{k: v for k, v in created.items() if k != "api_key"}]
    assert key not in listed.stdout
    db = (tmp_path / "store" / "omnimem.db").read_bytes()
    assert key.encode() not in db and key.split("_", 2)[2].encode() not in db  # only a hash is stored
    refused = runner.invoke(app, ["keys", "create", "--name", "everyone", "--role", "read", "--store", store])
    assert refused.exit_code == 2 and "must have role admin" in refused.output
    assert runner.invoke(app, ["keys", "revoke", created["key_id"], "--store", store]).exit_code == 0
    again = runner.invoke(app, ["keys", "revoke", created["key_id"], "--store", store])
    assert again.exit_code == 2 and "no active key" in again.output
    assert json.loads(runner.invoke(app, ["keys", "list", "--store", store, "--json"]).stdout)[0]["revoked_at"]


@pytest.mark.parametrize(("args", "message"), [
    (["--host", "0.0.0.0", "--no-auth"], "loopback"),
    (["--max-upload", "-1"], "positive"),
    (["--max-body", "0"], "positive"),
    (["--workers", "0"], "--workers"),
    (["--rate-limit", "-5"], "--rate-limit"),
    (["--port", "70000"], "--port"),
    (["--no-auth", "--allowed-host", "*"], "--allowed-host '*'"),
    (["--allowed-host", "http://x/"], "not a host name"),
    (["--body-timeout", "-1"], "--body-timeout"),
    (["--header-timeout", "-1"], "--header-timeout"),
    (["--search-concurrency", "-1"], "--search-concurrency"),
])
def test_serve_refuses_bad_options_in_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    with Memory(tmp_path / "s", embedder="fake"):  # serve opens only a store that exists
        pass
    result = CliRunner().invoke(app, ["serve", "--store", str(tmp_path / "s"), *args])
    assert result.exit_code == 2 and message in result.output and result.output.count("error:") == 1


@pytest.fixture
def two_workers(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """``omnimem serve --workers 2`` on a fresh store, as a separate process."""
    store, port = tmp_path / "store", _free_port()
    with Memory(store, embedder="fake"):  # the store records its embedder; the workers reopen it
        pass
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "omnimem.cli", "serve", "--store", str(store), "--port", str(port), "--workers", "2",
         "--no-auth", "--rate-limit", "0"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    try:
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"server did not start: {process.stdout.read() if process.stdout else ''!r}")
            time.sleep(0.2)
        yield url, store
    finally:
        process.send_signal(signal.SIGINT)
        try:
            output, _ = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            output, _ = process.communicate()
        assert b"database is locked" not in output, output.decode(errors="replace")[-2000:]


def test_two_workers_share_one_sqlite_store_without_lock_errors(two_workers: tuple[str, Path]) -> None:
    url, store = two_workers

    def client_run(n: int) -> list[str]:
        ids = []
        with httpx.Client(base_url=url, timeout=60) as client:
            for i in range(12):
                words = " ".join(uuid.uuid4().hex[:8] for _ in range(4))  # distinct: the novelty filter keeps all
                added = client.post("/v1/units", json={"text": f"llamas {words}",
                                                       "user_id": f"user{n % 3}"})
                assert added.status_code == 201, added.text
                ids.append(added.json()["id"])
                found = client.post("/v1/search", json={"query": words, "user_id": f"user{n % 3}"})
                assert found.status_code == 200, found.text
        return ids

    with ThreadPoolExecutor(8) as pool:
        acknowledged = [i for ids in pool.map(client_run, range(8)) for i in ids]
    assert len(set(acknowledged)) == 96
    with httpx.Client(base_url=url, timeout=60) as client:
        for unit_id in acknowledged:  # every acknowledged add is there, whichever worker answers
            assert client.get(f"/v1/units/{unit_id}").status_code == 200
        assert client.get("/v1/units", params={"limit": 1}).json()["total"] == 96
    with Memory(store) as mem:  # and the store is consistent on disk
        assert mem.count_units() == 96
        assert len(mem.search("llamas", top_k=200, budget=100_000).hits) > 0


@contextmanager
def _serving(store: Path, *flags: str) -> Iterator[str]:
    """``omnimem serve --store STORE FLAGS`` as a separate process, until the block ends."""
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    process = subprocess.Popen([sys.executable, "-m", "omnimem.cli", "serve", "--store", str(store), "--port",
                                str(port), "--rate-limit", "0", *flags], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    try:
        while True:
            try:
                if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:  # ready: the embedder is loaded
                    break
            except httpx.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"server did not start: {process.stdout.read() if process.stdout else ''!r}")
            time.sleep(0.2)
        yield url
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()


def _guesses(url: str, n: int) -> list[int]:
    """``n`` requests with a wrong key, each claiming another address in ``X-Forwarded-For``."""
    return [httpx.get(f"{url}/v1/units", headers={"authorization": "Bearer omk_wrong_guess",
                                                  "x-forwarded-for": f"203.0.113.{i}"}).status_code
            for i in range(n)]


def test_serve_trusts_forwarded_for_only_from_named_proxies(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with Memory(store, embedder="fake"):
        pass
    made = CliRunner().invoke(app, ["keys", "create", "--name", "ops", "--role", "admin", "--store", str(store),
                                    "--json"])
    admin_key = json.loads(made.stdout)["api_key"]
    with _serving(store) as url:  # the defaults: no proxy is trusted, /metrics needs an admin key
        assert httpx.get(f"{url}/metrics").status_code == 401
        assert httpx.get(f"{url}/healthz", headers={"host": "memory.lan"}).status_code == 403
        assert _guesses(url, 22)[-1] == 429  # one real address, whatever the header claims
    with _serving(store, "--forwarded-allow-ips", "127.0.0.1", "--public-metrics", "--allowed-host",
                  "memory.lan") as url:
        assert set(_guesses(url, 22)) == {401}  # the trusted proxy's header names 22 addresses
        assert httpx.get(f"{url}/metrics").status_code == 200
        assert httpx.get(f"{url}/metrics", headers={"authorization": f"Bearer {admin_key}"}).status_code == 200
        assert httpx.get(f"{url}/healthz", headers={"host": "memory.lan"}).status_code == 200


def _held_for(url: str, sent: bytes) -> tuple[float, bytes]:
    """Open a raw connection, send ``sent`` and nothing more; seconds until the server closes it, and its answer."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(sent)
        started = time.monotonic()
        answer = b""
        while chunk := sock.recv(65536):  # until the server closes the connection
            answer += chunk
        return time.monotonic() - started, answer


def test_a_request_head_that_never_finishes_is_closed_after_the_header_timeout(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with Memory(store, embedder="fake"):
        pass
    with _serving(store, "--no-auth", "--header-timeout", "1") as url:
        waited, answer = _held_for(url, b"GET /v1/units HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: a")  # half a line
        assert answer.startswith(b"HTTP/1.1 408") and b"RequestTimeoutError" in answer and b"head" in answer
        assert 0.9 <= waited < 8  # the bound, give or take a loaded machine
        waited, answer = _held_for(url, b"")  # a connection that never sends a byte is let go too
        assert answer.startswith(b"HTTP/1.1 408") and waited < 8
        with httpx.Client(base_url=url) as client:  # whole heads, also on a kept-alive connection, are served
            assert client.get("/v1/units").status_code == 200
            time.sleep(1.5)  # idle between requests is keep-alive's business (5 s), not the head's
            assert client.get("/v1/units").status_code == 200
