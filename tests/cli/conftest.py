"""The CLI's fixture: ``run(*args, input=None)`` invokes ``omnimem`` in-process with the fake embedder."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from typer.testing import CliRunner, Result

from omnimem.cli import app

Run = Callable[..., Result]


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch) -> Run:
    """Each argument is passed as ``str``; ``input`` is what the command reads on stdin."""
    monkeypatch.setenv("OMNIMEM_EMBEDDER", "fake")
    runner = CliRunner()

    def invoke(*args: object, input: str | None = None) -> Result:
        return runner.invoke(app, [str(a) for a in args], input=input)

    return invoke
