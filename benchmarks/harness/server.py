"""``omnimem serve`` and ``omnimem keys create`` as an operator runs them, for the benchmarks that talk HTTP.

The benchmarks stand outside the library (tests/bench/test_public_api): a key
is made by the CLI in a child process, a server is the CLI's ``serve`` on a
free loopback port, waited for on ``/readyz``.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from benchmarks.harness.paths import ROOT


def cli_env() -> dict[str, str]:
    """The environment a child ``omnimem`` runs in: this checkout importable, no model hub, and none of the
    caller's ``OMNIMEM_*`` settings or config file (the benchmark says what it runs with)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMNIMEM_")}
    return {**env, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1",
            "OMNIMEM_CONFIG": os.devnull}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def create_key(target: list[str], *, name: str, role: str, user_id: str | None = None,
               agent_id: str | None = None) -> str:
    """A key made with ``omnimem keys create`` in ``target`` (``["--store", DIR]`` or ``["--url", URL]``)."""
    command = [sys.executable, "-m", "omnimem.cli", "keys", "create", "--name", name, "--role", role, *target,
               "--json"]
    if user_id is not None:
        command += ["--user-id", user_id]
    if agent_id is not None:
        command += ["--agent-id", agent_id]
    made = subprocess.run(command, env=cli_env(), capture_output=True, text=True)
    if made.returncode != 0:
        raise RuntimeError(f"omnimem keys create failed: {made.stderr.strip()[-500:]}")
    return str(json.loads(made.stdout)["api_key"])


@contextmanager
def serving(target: list[str], *options: str, wait_s: float = 180,
            env: dict[str, str] | None = None, pid: list[int] | None = None) -> Iterator[int]:
    """``omnimem serve`` on ``target`` with ``options`` (and ``env`` on top of :func:`cli_env`) on a free
    loopback port, ready; yields the port."""
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "omnimem.cli", "serve", *target, "--port", str(port),
                                *options], env={**cli_env(), **(env or {})}, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    if pid is not None:  # for a profiler to attach to
        pid.append(process.pid)
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"omnimem serve did not start: {process.stderr.read().decode()[-2000:]}"
                                   if process.stderr and process.poll() is not None
                                   else "omnimem serve did not start in time")
            time.sleep(0.2)
        yield port
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:  # a connection it still holds open keeps it from stopping
            process.kill()
            process.wait()
