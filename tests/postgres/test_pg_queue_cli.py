"""`omnimem --url ... queue` and `worker --drain` work on a PostgreSQL database like on a store folder."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from omnimem import Memory
from omnimem.cli.commands import app


def test_queue_and_worker_run_on_a_database(pg_url: str) -> None:
    with Memory(url=pg_url, embedder="fake", graph=True, enrich="off") as m:  # jobs wait for an outside worker
        m.add("Caroline met Melanie in Boston.", user_id="ann")
        assert m.stats()["queue"]["pending"] == 1
    runner = CliRunner()
    shown = runner.invoke(app, ["--url", pg_url, "queue", "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["depth"]["pending"] == 1
    drained = runner.invoke(app, ["--url", pg_url, "worker", "--drain", "--graph"])
    assert drained.exit_code == 0, drained.output
    with Memory(url=pg_url, embedder="fake", graph=True) as m:
        assert m.stats()["queue"]["pending"] == 0
        assert {"Caroline", "Melanie"} <= {e.name for e in m.entities(user_id="ann")}
