"""Without the ``server`` extra, the server and the remote client say which extra to install."""

from __future__ import annotations

import sys

import pytest

from omnimem import Memory, MissingDependencyError


def test_the_server_names_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m == "omnimem.server" or m.startswith("omnimem.server.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "fastapi", None)  # makes the import fail
    with pytest.raises(MissingDependencyError, match=r"omnimem\[server\]"):
        import omnimem.server  # noqa: F401


def test_the_remote_client_names_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "omnimem.remote.transport", raising=False)
    monkeypatch.setitem(sys.modules, "httpx", None)
    with pytest.raises(MissingDependencyError, match=r"omnimem\[server\]"):
        Memory(url="http://127.0.0.1:9")


def test_importing_omnimem_loads_no_server_dependency() -> None:
    import subprocess

    code = "import sys, omnimem; print(sorted(m for m in ('fastapi', 'httpx', 'uvicorn') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
