"""The facade's public types, checked by ``mypy --strict`` as a usage script (``.ci/run``; never executed).

An in-process Memory is typed as the ``LocalMemory`` that ``Memory.__new__`` makes, with its
in-process parts; a remote one is a plain ``Memory`` without them. The ``type: ignore`` comments
are checked too: ``warn_unused_ignores`` (part of ``--strict``) fails if the remote Memory ever
gains a ``store`` or ``reembed``.
"""

from typing import assert_type

from omnimem import Context, LocalMemory, Memory, RemoteMemory, Settings
from omnimem.contract import Engine, SearchRequest
from omnimem.engine.local import LocalEngine
from omnimem.mau import Scope
from omnimem.remote.engine import RemoteEngine
from omnimem.store.base import Store


def in_process() -> None:
    with Memory() as mem:
        assert_type(mem, LocalMemory)
        assert_type(mem.store, Store)
        assert_type(mem.settings, Settings)
        assert_type(mem.engine, LocalEngine)
        assert_type(mem.search("where", user_id="u"), Context)
    assert_type(Memory("./mem", embedder="fake"), LocalMemory)
    assert_type(LocalMemory(url="postgresql+pgserver://./pgdata"), LocalMemory)


def over_http() -> None:
    remote = Memory(url="http://127.0.0.1:8420", api_key="omk_x_y", timeout=5.0, retries=1, backoff=0.1)
    assert_type(remote, Memory)
    assert_type(remote.settings, Settings | None)
    assert_type(remote.search("where", user_id="u"), Context)
    remote.store  # type: ignore[attr-defined]
    remote.reembed("fake")  # type: ignore[attr-defined]
    assert_type(RemoteMemory(url="https://memory.example"), Memory)


def engines(local: LocalEngine, remote: RemoteEngine) -> list[Engine]:
    assert_type(local.search(SearchRequest("where", Scope("u"))), Context)
    return [local, remote]  # both satisfy the Protocol structurally
