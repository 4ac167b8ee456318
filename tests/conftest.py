"""Shared fixtures: fast stores on the fake embedder, the real model once per session,
and the benchmark data folder (skipped with a reason when absent, required in CI)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from omnimem import Memory
from omnimem.embed import MiniLMEmbedder
from tests.fast_subset import is_fast
from tests.postgres_server import PostgresServer, pg_url, postgres  # noqa: F401 - fixtures

ROOT = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path:
    """The one setting for benchmark data: $OMNIMEM_DATA_DIR, default ../shared/data."""
    return Path(os.environ.get("OMNIMEM_DATA_DIR", ROOT.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def data_dir() -> Path:
    path = shared_data_dir()
    if not (path / "locomo" / "locomo10.json").exists():
        if os.environ.get("OMNIMEM_REQUIRE_DATA") == "1":
            pytest.fail(f"benchmark data required (OMNIMEM_REQUIRE_DATA=1) but missing under {path}")
        pytest.skip(f"benchmark data not found under {path}; set OMNIMEM_DATA_DIR to run this test")
    return path


@pytest.fixture(scope="session")
def minilm() -> MiniLMEmbedder:
    """The real all-MiniLM-L6-v2, loaded once for the whole run."""
    return MiniLMEmbedder()


ENGINES = ["memory", "path", "postgresql", "http"]  # Memory(), Memory(path=...), Memory(url="postgresql://..."), Memory(url="http://...") on a live server


def open_memory(engine: str, folder: Path, postgres: PostgresServer | None = None, **settings: Any) -> Memory:
    """A fresh Memory on the fake embedder, of the kind ``engine`` names (``postgresql``: a fresh database)."""
    if engine == "memory":
        return Memory(embedder="fake", **settings)
    if engine == "path":
        return Memory(folder / "engine-store", embedder="fake", **settings)
    if engine == "http":  # a live server on a free loopback port over a fresh store, reached over HTTP
        from tests.serving import ServedMemory

        return ServedMemory(Memory(folder / "engine-store", embedder="fake", **settings))
    if engine == "postgresql" and postgres is not None:
        return Memory(url=postgres.fresh(), embedder="fake", **settings)
    raise ValueError(f"unknown engine {engine!r}")


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)



@pytest.fixture
def engine_server(engine: str, request: pytest.FixtureRequest) -> PostgresServer | None:
    """The PostgreSQL server when the engine under test needs one (started on first use)."""
    return request.getfixturevalue("postgres") if engine == "postgresql" else None


@pytest.fixture
def mem(engine: str, tmp_path: Path, engine_server: PostgresServer | None) -> Iterator[Memory]:
    """A Memory for facade tests that hold for every engine (run once per engine)."""
    with open_memory(engine, tmp_path, engine_server) as m:
        yield m
    if engine_server is not None and m.url is not None:
        engine_server.drop(m.url)


@pytest.fixture(scope="module", params=ENGINES)
def shared_engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def shared_seed() -> Callable[[Memory], object]:
    """What ``unchanged_mem`` holds before the module's first test: nothing, unless the module overrides this."""
    return lambda memory: None


@pytest.fixture(scope="module")
def _shared_memory(shared_engine: str, shared_seed: Callable[[Memory], object], request: pytest.FixtureRequest,
                   tmp_path_factory: pytest.TempPathFactory) -> Iterator[Memory]:
    with pytest.MonkeyPatch.context() as patch:
        clear_user_settings(patch, tmp_path_factory)
        server = request.getfixturevalue("postgres") if shared_engine == "postgresql" else None
        with open_memory(shared_engine, tmp_path_factory.mktemp("unchanged"), server) as m:
            shared_seed(m)
            yield m
        if server is not None and m.url is not None:
            server.drop(m.url)


@pytest.fixture
def unchanged_mem(_shared_memory: Memory) -> Iterator[Memory]:
    """A Memory per engine, shared by a module's tests of calls that must change nothing (refused input):
    one store and server per module instead of one per test, holding what the module's ``shared_seed``
    adds; after each test its stats must be as they were, so a call that wrongly writes fails where it runs."""
    before = _shared_memory.stats()
    yield _shared_memory
    assert _shared_memory.stats() == before, "a call that must change nothing changed the shared store"


@pytest.fixture
def make_memory(engine: str, tmp_path: Path, engine_server: PostgresServer | None
                ) -> Iterator[Callable[..., Memory]]:
    """Open Memories with settings, of the engine under test; closed at the end."""
    opened: list[Memory] = []

    def make(**settings: Any) -> Memory:
        opened.append(open_memory(engine, tmp_path / str(len(opened)), engine_server, **settings))
        return opened[-1]

    yield make
    for m in opened:
        m.close()
        if engine_server is not None and m.url is not None:
            engine_server.drop(m.url)


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "mem"


_KEEP = {"OMNIMEM_DATA_DIR", "OMNIMEM_REQUIRE_DATA", "OMNIMEM_REQUIRE_MEDIA_TOOLS", "OMNIMEM_REQUIRE_POSTGRES"}


def clear_user_settings(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Remove a developer's own OMNIMEM_* settings and config file (for fixtures wider than one test, too)."""
    for name in list(os.environ):
        if name.startswith("OMNIMEM_") and name not in _KEEP:
            monkeypatch.delenv(name)
    empty = tmp_path_factory.getbasetemp() / "empty-config.toml"
    empty.touch()
    monkeypatch.setenv("OMNIMEM_CONFIG", str(empty))


@pytest.fixture(autouse=True)
def _no_user_settings(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A developer's own OMNIMEM_* settings or config file must not leak into tests."""
    clear_user_settings(monkeypatch, tmp_path_factory)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the fast subset (``pytest -m fast``, tests/fast_subset.py); every test still runs by default."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        params = dict(callspec.params) if callspec is not None else {}
        if is_fast(Path(str(item.path)), params, item.get_closest_marker("slow") is not None):
            item.add_marker(pytest.mark.fast)
