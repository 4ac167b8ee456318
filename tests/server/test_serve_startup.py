"""``omnimem serve``'s first minutes as a user sees them: a real process on a free loopback port, its output read
line by line: where it listens, where the console is, how keys work and how to stop it; no probe lines."""

from __future__ import annotations

import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from typer.testing import CliRunner

from omnimem import Memory
from omnimem.cli.commands import app

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Served:
    """A running ``omnimem serve``: its URL and every line it has printed (stdout and stderr)."""

    def __init__(self, process: subprocess.Popen[str], url: str) -> None:
        self.process, self.url = process, url
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))

    def first_lines(self, n: int) -> list[str]:
        while len(self.seen) < n:
            self.seen.append(self.lines.get(timeout=120))
        return self.seen[:n]

    def ready(self) -> None:
        """Poll /readyz as the README's loop does, until it answers 200."""
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{self.url}/readyz", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            assert self.process.poll() is None and time.monotonic() < deadline, self.first_lines(1)
            time.sleep(0.05)

    def stop(self) -> list[str]:
        """Ctrl-C, as the startup line says; every line it printed."""
        self.process.send_signal(signal.SIGINT)
        self.process.wait(timeout=60)
        time.sleep(0.2)  # the reader thread drains the pipe
        while not self.lines.empty():
            self.seen.append(self.lines.get())
        return self.seen


@contextmanager
def serving(*args: str) -> Iterator[Served]:
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen([sys.executable, "-m", "omnimem.cli", "serve", "--port", str(port), *args], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        yield Served(process, f"http://127.0.0.1:{port}")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_a_store_without_keys_says_where_it_listens_how_to_create_a_key_and_how_to_stop(tmp_path: Path) -> None:
    store = tmp_path / "mem"
    with Memory(store, embedder="fake"):
        pass
    with serving("--store", str(store)) as served:
        url = served.url
        head = served.first_lines(4)
        assert head[0] == f"omnimem serves {store} on {url}"
        assert head[1] == f"  web console: {url}/   API docs: {url}/docs   MCP: {url}/mcp/"
        assert head[2] == ("  API keys: none yet, so every API call is refused (401) until you create one, with no "
                           f"restart: omnimem keys create --name me --role admin --store {store} (roles: read, write, "
                           "admin; --user-id binds a key to one user)")
        assert head[3] == (f"  ready when {url}/readyz answers 200 (the embedding model loads first); Ctrl-C stops "
                           "the server")
        served.ready()
        assert httpx.get(f"{url}/v1/stats").status_code == 401
        made = CliRunner().invoke(app, ["keys", "create", "--name", "me", "--role", "admin", "--store", str(store)])
        key = made.stdout.strip()
        assert httpx.get(f"{url}/v1/stats", headers={"Authorization": f"Bearer {key}"}).status_code == 200
        printed = served.stop()
    assert served.process.returncode == 0
    access = [line for line in printed if '"GET ' in line]
    assert [line.split('"')[1] for line in access] == ["GET /v1/stats HTTP/1.1", "GET /v1/stats HTTP/1.1"]


def test_keys_and_no_auth_are_named_and_log_probes_keeps_the_polls(tmp_path: Path) -> None:
    store = tmp_path / "mem"
    with Memory(store, embedder="fake"):
        pass
    CliRunner().invoke(app, ["keys", "create", "--name", "me", "--role", "admin", "--store", str(store)])
    with serving("--store", str(store)) as served:
        assert served.first_lines(3)[2].startswith("  API keys: 1 active; send one as 'Authorization: Bearer KEY', "
                                                   "or paste it into the console's sign-in page; more: omnimem keys "
                                                   "create")
        served.stop()
    with serving("--store", str(store), "--no-auth", "--log-probes") as served:
        assert served.first_lines(3)[2] == ("  API keys: none needed (--no-auth): every request acts as a "
                                            "store-wide admin")
        served.ready()
        printed = served.stop()
    assert any('"GET /readyz HTTP/1.1" 200' in line for line in printed)
