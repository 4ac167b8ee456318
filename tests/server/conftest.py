"""A live server with API keys for the server tests: alice (write), alice-reader (read), bob (write),
alice-admin (admin bound to alice) and root (store-wide admin)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from omnimem import Memory
from omnimem.store.apikeys import create_key
from tests.serving import LiveServer


@dataclass
class Served:
    """The server, its store and one httpx client per key."""

    live: LiveServer
    memory: Memory
    keys: dict[str, str] = field(default_factory=dict)
    clients: dict[str, httpx.Client] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return self.live.url

    def client(self, who: str | None) -> httpx.Client:
        """An httpx client sending ``who``'s key (``None``: no key at all)."""
        name = who or "-"
        if name not in self.clients:
            headers = {"Authorization": f"Bearer {self.keys[who]}"} if who else {}
            self.clients[name] = httpx.Client(base_url=self.url, headers=headers, timeout=30)
        return self.clients[name]

    def remote(self, who: str) -> Memory:
        return Memory(url=self.url, api_key=self.keys[who], retries=0)


KEYS: dict[str, dict[str, Any]] = {
    "alice": {"role": "write", "user_id": "alice"},
    "alice-reader": {"role": "read", "user_id": "alice"},
    "alice-admin": {"role": "admin", "user_id": "alice"},
    "alice-bot": {"role": "write", "user_id": "alice", "agent_id": "bot"},
    "bob": {"role": "write", "user_id": "bob"},
    "root": {"role": "admin"},
}


def start(tmp_path: Path, *, graph: bool = False, **options: Any) -> Served:
    memory = Memory(tmp_path / "served-store", embedder="fake", graph=graph)
    served = Served(LiveServer(memory, **{"rate_limit": None, **options}), memory)
    for name, spec in KEYS.items():
        served.keys[name], _ = create_key(memory.store, name=name, **spec)
    return served


def stop(served: Served) -> None:
    for client in served.clients.values():
        client.close()
    served.live.stop()
    served.memory.close()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    s = start(tmp_path)
    yield s
    stop(s)


def png(seed: int = 0, size: tuple[int, int] = (64, 48)) -> bytes:
    """A small real PNG (different seeds give perceptually different images)."""
    import io

    from PIL import Image, ImageDraw

    image = Image.new("RGB", size, (seed * 40 % 255, 90, 200))
    draw = ImageDraw.Draw(image)
    draw.rectangle((seed * 7 % 40, 5, seed * 7 % 40 + 20, 30), fill=(255, 255 - seed * 30 % 255, 0))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()
