"""A real omnimem server for tests: uvicorn in a thread on a free loopback port."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn

from omnimem import Memory
from omnimem.server import create_app


class LiveServer:
    """``create_app(memory, **options)`` served on 127.0.0.1:<free port> until :meth:`stop`."""

    def __init__(self, memory: Memory, **options: Any) -> None:
        self.memory = memory
        self.app = create_app(memory, **options)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        config = uvicorn.Config(self.app, log_level="warning", lifespan="on", timeout_graceful_shutdown=2)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the test server did not start")
            time.sleep(0.01)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()


class ServedMemory(Memory):
    """A remote Memory over its own live server and backing store; closing it stops both."""

    def __init__(self, backend: Memory, **options: Any) -> None:
        self.backend = backend
        self.live = LiveServer(backend, **{"auth": False, "rate_limit": None, **options})
        super().__init__(url=self.live.url, retries=0)

    def close(self) -> None:
        if getattr(self, "_closed", False):
            return
        super().close()
        self.live.stop()
        self.backend.close()


def in_process(mem: Memory) -> Memory:
    """The Memory whose internals (store, indexes) a test may inspect: for "http", the server's own."""
    return mem.backend if isinstance(mem, ServedMemory) else mem
