"""redact_pii through the CLI (the setting from the environment) and the MCP tools: the same placeholders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnimem import Memory
from omnimem.cli.commands import app
from omnimem.mcp import create_mcp
from tests.mcp.conftest import connect

EMAIL, PHONE, NAME = "maria.kowalski@example.org", "+44 20 7946 0958", "Maria Kowalski"
TEXT = f"{NAME} asked us to write to {EMAIL} or call {PHONE}."
REDACTED = "<PERSON> asked us to write to <EMAIL> or call <PHONE>."


def test_the_cli_add_and_import_store_placeholders(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OMNIMEM_EMBEDDER", "fake")
    monkeypatch.setenv("OMNIMEM_REDACT_PII", "1")
    store, runner = tmp_path / "mem", CliRunner()
    added = runner.invoke(app, ["add", TEXT, "--user-id", "ann", "--store", str(store)])
    assert added.exit_code == 0, added.output
    dump = tmp_path / "other.jsonl"
    dump.write_text("\n".join(json.dumps(r) for r in [
        {"kind": "header", "format": "omnimem-export", "version": 1},
        {"kind": "unit", "id": "cd34ef56", "text": f"Imported note: {NAME} is on {PHONE}.", "user_id": "ann"},
    ]) + "\n")
    imported = runner.invoke(app, ["import", str(dump), "--store", str(store)])
    assert imported.exit_code == 0, imported.output
    exported = runner.invoke(app, ["export", "--user-id", "ann", "--store", str(store)])
    texts = [r["text"] for r in map(json.loads, exported.output.splitlines()) if r["kind"] == "unit"]
    assert sorted(texts) == sorted([REDACTED, "Imported note: <PERSON> is on <PHONE>."])
    found = runner.invoke(app, ["search", "<EMAIL>", "--user-id", "ann", "--store", str(store), "--json"])
    assert REDACTED in found.output and EMAIL not in found.output


def test_the_mcp_add_and_add_dialogue_store_placeholders(tmp_path: Path) -> None:
    with Memory(tmp_path / "store", embedder="fake", redact_pii=True) as memory:
        with connect(create_mcp(memory)) as session:
            added = session.call("add", text=TEXT, user_id="ann")
            assert session.call("get", unit_id=added["id"])["full_text"] == REDACTED
            session.call("add_dialogue", user_id="ann", session_id="s2",
                         turns=[{"text": f"My card is 4111 1111 1111 1111, {NAME}.", "speaker": "user"}])
            context = session.call("search", query="<CARD>", user_id="ann")
            assert "My card is <CARD>, <PERSON>." in json.dumps(context) and NAME not in json.dumps(context)
