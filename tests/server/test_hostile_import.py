"""Import and JSON fields under hostile input: no forged audit events, one size and depth bound everywhere.

A dump is untrusted: a write key imports only its own scope's records (units
and audit events alike), its events are logged under its own key, an event
about another user's unit is never restored, and free-form JSON (metadata,
event details) is bounded in size and depth on every write path, so what is
accepted always reads back (no 500 on ``/v1/log``, ``/v1/search``,
``/v1/units``).
"""

from __future__ import annotations

import base64
import io
import json
import wave
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from omnimem import Memory
from omnimem.cli import app
from omnimem.errors import InvalidInputError
from omnimem.contract.validate import MAX_JSON_DEPTH
from tests.server.conftest import Served, png

NDJSON = {"content-type": "application/x-ndjson"}
HEADER = {"kind": "header", "format": "omnimem-export", "version": 1}


def nested(depth: int) -> dict[str, Any]:
    """``{"a": {"a": ... 1}}``, ``depth`` levels of objects."""
    value: Any = 1
    for _ in range(depth):
        value = {"a": value}
    return dict(value)


def event(unit_id: str, user_id: str, **fields: Any) -> dict[str, Any]:
    return {"kind": "event", "seq": 7, "time": datetime.now(timezone.utc).isoformat(), "actor": "key:root",
            "action": "delete", "unit_ids": [unit_id], "user_id": user_id, "agent_id": None, "session_id": None,
            "reason": "forged", "details": {}, **fields}


def dump(*records: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in (HEADER, *records))


def _error(response: httpx.Response, status: int, code: str, *words: str) -> None:
    assert response.status_code == status, response.text
    assert response.json()["error"] == code
    assert all(w in response.json()["message"] for w in words), response.json()["message"]


def test_a_write_key_cannot_append_events_to_another_users_log(served: Served) -> None:
    alice_id = served.client("alice").post("/v1/units", json={"text": "alice keeps a diary"}).json()["id"]
    before = served.client("alice").get("/v1/log").json()["events"]
    forged = dump(event(alice_id, "alice"))
    _error(served.client("bob").post("/v1/import", content=forged, headers=NDJSON), 403, "ScopeError", "record 2")
    assert served.client("alice").get("/v1/log").json()["events"] == before
    assert served.client("root").get(f"/v1/units/{alice_id}/history").json()["events"] == before


def test_events_a_write_key_imports_are_its_own_and_only_about_its_units(served: Served) -> None:
    alice_id = served.client("alice").post("/v1/units", json={"text": "alice keeps a diary"}).json()["id"]
    bob = served.client("bob")
    bob_id = bob.post("/v1/units", json={"text": "bob keeps a notebook"}).json()["id"]
    records = [event(bob_id, "bob", seq=1), event(alice_id, "bob", seq=2)]  # the second names alice's unit
    summary = bob.post("/v1/import", content=dump(*records), headers=NDJSON).json()
    assert summary["events"] == 1
    imported = [e for e in bob.get(f"/v1/units/{bob_id}/history").json()["events"] if e["reason"] == "forged"]
    assert [e["actor"] for e in imported] == ["key:bob"]  # never the actor the record claimed
    assert imported[0]["details"]["imported_from"]["seq"] == 1
    everything = served.client("root").get("/v1/log").json()["events"]
    assert not any(e["actor"] == "key:root" for e in everything)
    assert not any(alice_id in e["unit_ids"] for e in everything if e["reason"] == "forged")


def test_an_admin_restoring_a_backup_keeps_the_source_actors(served: Served) -> None:
    unit_id = served.client("alice").post("/v1/units", json={"text": "restored with its history"}).json()["id"]
    response = served.client("root").post("/v1/import", content=dump(event(unit_id, "alice", actor="key:ops")),
                                          headers=NDJSON)
    assert response.json()["events"] == 1
    actors = [e["actor"] for e in served.client("alice").get(f"/v1/units/{unit_id}/history").json()["events"]]
    assert actors == ["key:alice", "key:ops"]


def test_event_details_are_bounded_so_the_log_always_reads(served: Served) -> None:
    unit_id = served.client("alice").post("/v1/units", json={"text": "a unit with a log"}).json()["id"]
    root = served.client("root")
    deep = root.post("/v1/import", content=dump(event(unit_id, "alice", details=nested(300))), headers=NDJSON)
    _error(deep, 400, "MalformedDataError", "record 2", "details", f"{MAX_JSON_DEPTH} levels")
    big = root.post("/v1/import", content=dump(event(unit_id, "alice", details={"blob": "x" * 2_000_000})),
                    headers=NDJSON)
    _error(big, 400, "MalformedDataError", "details is 2000012 bytes")
    assert root.get("/v1/log").status_code == 200
    assert served.client("alice").get("/v1/log").status_code == 200


def test_an_import_line_nested_5000_deep_is_a_400_and_the_connection_stays_usable(served: Served) -> None:
    root = served.client("root")
    line = "[" * 5000 + "]" * 5000
    body = json.dumps(HEADER).encode() + b"\n" + line.encode() + b"\n"
    _error(root.post("/v1/import", content=body, headers=NDJSON), 400, "MalformedDataError", "line 2", "deeply")
    unit = json.dumps({"kind": "unit", "id": "ab12", "text": "deep", "user_id": "u", "metadata": "@"})
    deep_unit = unit.replace('"@"', '{"a":' * 5000 + "1" + "}" * 5000)
    response = root.post("/v1/import", content=json.dumps(HEADER).encode() + b"\n" + deep_unit.encode(),
                         headers=NDJSON)
    _error(response, 400, "MalformedDataError", "line 2")
    assert root.get("/v1/units").status_code == 200  # the same keep-alive client


def test_the_cli_import_refuses_a_5000_deep_line_in_one_line(tmp_path: Path) -> None:
    with Memory(tmp_path / "store", embedder="fake"):
        pass
    file = tmp_path / "deep.jsonl"
    file.write_text(json.dumps(HEADER) + "\n" + "[" * 5000 + "]" * 5000 + "\n")
    result = CliRunner().invoke(app, ["import", str(file), "--store", str(tmp_path / "store")])
    assert result.exit_code == 2, result.output
    assert "deep.jsonl:2: nests too deeply" in result.output and result.output.count("error:") == 1


@pytest.mark.parametrize("depth", [40, 255, 900])
def test_deep_metadata_is_refused_on_every_write_path(served: Served, depth: int) -> None:
    alice = served.client("alice")
    _error(alice.post("/v1/units", json={"text": "deep", "metadata": nested(depth)}), 400, "InvalidInputError",
           "metadata nests deeper")
    turns = [{"text": "a turn", "metadata": nested(depth)}]
    _error(alice.post("/v1/dialogues", json={"turns": turns}), 400, "InvalidInputError", "metadata")
    with pytest.raises(InvalidInputError, match="metadata nests deeper"):
        served.memory.add("deep through the Python API", metadata=nested(depth), user_id="alice")
    with pytest.raises(InvalidInputError, match="metadata nests deeper"):
        served.remote("alice").add("deep through the remote client", metadata=nested(depth))
    assert served.memory.count_units() == 0
    assert alice.post("/v1/search", json={"query": "deep"}).status_code == 200


def test_metadata_at_the_depth_limit_reads_back_everywhere(served: Served) -> None:
    alice = served.client("alice")
    unit_id = alice.post("/v1/units", json={"text": "deep but allowed", "metadata": nested(MAX_JSON_DEPTH)}).json()["id"]
    assert alice.get(f"/v1/units/{unit_id}").json()["metadata"] == nested(MAX_JSON_DEPTH)
    assert alice.post("/v1/search", json={"query": "deep but allowed"}).json()["hits"][0]["unit"]["id"] == unit_id
    assert alice.get("/v1/units").status_code == 200
    assert served.client("root").get("/v1/units").status_code == 200
    assert served.client("root").get("/v1/export", params={"all": True}).status_code == 200


def _unit_record(modality: str, raw: bytes, metadata: dict[str, Any], unit_id: str = "cd34") -> dict[str, Any]:
    return {"kind": "unit", "id": unit_id, "modality": modality, "text": f"an imported {modality}",
            "user_id": "alice", "raw": base64.b64encode(raw).decode(), "metadata": metadata}


def _wav() -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as clip:
        clip.setnchannels(1)
        clip.setsampwidth(2)
        clip.setframerate(16000)
        clip.writeframes(b"\x00\x00" * 1600)
    return out.getvalue()


def test_imported_media_units_are_checked_like_uploads(served: Served) -> None:
    alice = served.client("alice")
    html = b"<html><script>alert(1)</script></html>"
    fake_image = _unit_record("image", html, {"mime": "text/html", "phash": "0" * 16})
    _error(alice.post("/v1/import", content=dump(fake_image), headers=NDJSON), 400, "MalformedDataError",
           "record 2")
    fake_audio = _unit_record("audio", html, {"mime": "audio/wav", "start_s": 0, "end_s": 1})
    _error(alice.post("/v1/import", content=dump(fake_audio), headers=NDJSON), 400, "MalformedDataError",
           "WAV")
    assert served.memory.count_units() == 0
    image = _unit_record("image", png(3), {"mime": "text/html", "phash": "0" * 16, "width": 9999})
    audio = _unit_record("audio", _wav(), {"mime": "audio/wav", "start_s": 0, "end_s": 0.1}, unit_id="ef56")
    assert alice.post("/v1/import", content=dump(image, audio), headers=NDJSON).json()["stored"] == 2
    stored = served.memory.get("cd34").metadata
    assert (stored["mime"], stored["width"], stored["height"]) == ("image/png", 64, 48)  # from the pixels
    assert stored["phash"] != "0" * 16
    assert alice.get("/v1/units/cd34/raw").headers["content-type"] == "image/png"
