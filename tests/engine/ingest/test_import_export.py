"""Import and export as an attacker or an unlucky operator would use them (issue 15):
forged hashes, fields that poison later calls, backups that undo a forget, and
round trips of everything ``add`` accepts."""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from omnimem import InvalidInputError, MalformedDataError, Memory
from omnimem.mau import Scope, content_hash

HEADER = {"kind": "header", "format": "omnimem-export", "version": 1}


def unit(uid: str, text: str, **fields) -> dict:
    return {"kind": "unit", "id": uid, "text": text, "content_hash": "a" * 64, **fields}


def test_a_forged_content_hash_cannot_block_another_users_add(mem: Memory):
    victims_hash = content_hash("I take insulin", speaker=None, event_time=None, scope=Scope("victim"), source_id=None)
    assert mem.import_records([HEADER, unit("abc1", "harmless", user_id="attacker", content_hash=victims_hash)])["stored"] == 1
    later = mem.add("I take insulin", user_id="victim")
    assert later.accepted, later
    assert mem.search("insulin", user_id="victim").hits[0].unit.id == later.id


@pytest.fixture(scope="module")
def shared_seed() -> Callable[[Memory], object]:
    """unchanged_mem holds one memory of user u."""
    return lambda m: m.add("existing memory", user_id="u")


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (unit("abc2", "a text unit", user_id="u", raw=base64.b64encode(b"\xff\xfe binary").decode()), "carries no raw"),
        (unit("abc2", "speech", user_id="u", modality="audio", raw=base64.b64encode(b"RIFF").decode(),
              metadata={"start_s": 0.0, "end_s": "later"}), "end_s"),
        (unit("abc2", "speech", user_id="u", modality="audio", raw=base64.b64encode(b"RIFF").decode(),
              metadata={"start_s": 5.0, "end_s": 1.0}), "before start_s"),
        (unit("abc2", "a photo", user_id="u", modality="image", raw=base64.b64encode(b"\x89PNG").decode(),
              metadata={"phash": "not-a-hash"}), "phash"),
        (unit("abc2", "a photo", user_id="u", modality="image", raw=base64.b64encode(b"\x89PNG").decode(),
              metadata={"width": -3}), "width"),
        (unit("abc2", "text", user_id="u", metadata={"note": "\ud800"}), "lone surrogates"),
        (unit("abc2", "text", user_id="u", speaker=7), "speaker"),
        (unit("abc2", "text", user_id="u", modality="smell"), "unknown modality"),
        (unit("abc2", "   ", user_id="u"), "text is empty"),
    ],
)
def test_a_record_that_would_poison_later_calls_refuses_the_whole_dump(unchanged_mem: Memory, record, message):
    good = unit("abc1", "a fine record", user_id="u")
    with pytest.raises(MalformedDataError, match=message) as refused:
        unchanged_mem.import_records([HEADER, good, record])
    text = str(refused.value)
    assert text.startswith("record 3 (id abc2): ") and text.count("record") == 1  # named once, no repeated prefix
    assert unchanged_mem.stats()["units"] == 1  # the good record before it was not stored either
    assert unchanged_mem.search("memory", user_id="u").hits  # and the scope still works


def test_import_cannot_hide_another_users_unit(mem: Memory):
    vid = mem.add("victim: allergy to penicillin", user_id="victim").id
    victim = mem.get(vid)
    replica = unit(vid, victim.summary, user_id="victim", superseded_by="abc9")
    with pytest.raises(MalformedDataError, match="another user or agent"):
        mem.import_records([HEADER, replica, unit("abc9", "nothing here", user_id="attacker")])
    with pytest.raises(MalformedDataError, match="cannot be imported here"):  # the victim's id, the attacker's scope
        mem.import_records([HEADER, unit(vid, "x", user_id="attacker", superseded_by="abc9"),
                            unit("abc9", "nothing here", user_id="attacker")])
    assert mem.get(vid).active and [h.unit.id for h in mem.search("penicillin", user_id="victim").hits] == [vid]
    assert mem.stats()["units"] == 1


def test_import_honours_tombstones_unless_told_otherwise(tmp_path: Path):
    with Memory(tmp_path / "mem", embedder="fake") as m:
        keep = m.add("Ann likes tea", user_id="ann", session_id="s0").id
        gone = m.add("Ann's old address is Elm Street 5", user_id="ann", session_id="s1").id
        backup = list(m.export(user_id="ann"))
        m.delete(gone)
        assert m.import_records(backup) == {"units": 2, "stored": 0, "skipped": 2, "forgotten": 1, "events": 0}
        m.forget(user_id="ann")  # the whole user: her tombstone key goes, the forget itself is remembered
        assert m.import_records(backup) == {"units": 2, "stored": 0, "skipped": 2, "forgotten": 2, "events": 0}
        assert m.stats()["units"] == 0
        assert m.import_records(backup, allow_forgotten=True)["stored"] == 2
        assert {keep, gone} == {u["id"] for u in m.export(user_id="ann") if u["kind"] == "unit"}
        new = m.add("Ann is back and likes coffee", user_id="ann").id
        fresh = [r for r in m.export(user_id="ann") if r.get("id") == new]
        m.forget(unit_ids=[new])
        assert m.import_records([HEADER, *fresh], allow_forgotten=False)["forgotten"] == 1


def test_round_trip_of_what_add_accepts(tmp_path: Path, monkeypatch):
    from typer.testing import CliRunner

    from omnimem.cli.commands import app

    monkeypatch.setenv("OMNIMEM_EMBEDDER", "fake")
    long_text = "lorem ipsum " * 90_000 + "the end"  # over 1,000,000 characters
    odd = "line one\u2028still the same unit\u0085and this\u2029too\rand a carriage return"
    with Memory(tmp_path / "a", embedder="fake") as a:
        a.add(long_text, user_id="ann")
        a.add(odd, user_id="ann", metadata={"note": "sep\u2028arated", "n": 3})
    exported = CliRunner().invoke(app, ["export", "--user-id", "ann", "--store", str(tmp_path / "a")])
    assert exported.exit_code == 0, exported.output
    dump = tmp_path / "ann.jsonl"
    dump.write_text(exported.stdout, encoding="utf-8")
    res = CliRunner().invoke(app, ["import", str(dump), "--store", str(tmp_path / "b"), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["stored"] == 2
    with Memory(tmp_path / "b") as b:
        texts = sorted(r["text"] for r in b.export(user_id="ann") if r["kind"] == "unit")
        assert texts == sorted([long_text, odd])
        assert b.add(odd, user_id="ann").reason == "duplicate"  # the recomputed hash is add's hash


def test_metadata_with_lone_surrogates_is_refused_at_add(mem: Memory):
    with pytest.raises(InvalidInputError, match="lone surrogates"):
        mem.add("a note", user_id="u", metadata={"tag": "bad\udc80"})
    with pytest.raises(InvalidInputError):
        mem.add("a note", user_id="u", metadata={"when": object()})
    assert mem.stats()["units"] == 0
    mem.add("a note", user_id="u", metadata={"tag": "fine"})
    assert [json.dumps(r, ensure_ascii=False).encode() for r in mem.export(user_id="u")]


def test_ingest_jsonl_splits_on_newlines_only(tmp_path: Path, monkeypatch):
    from typer.testing import CliRunner

    from omnimem.cli.commands import app

    monkeypatch.setenv("OMNIMEM_EMBEDDER", "fake")
    turns = tmp_path / "turns.jsonl"
    rows = [{"text": "first\u2028half and\u0085more", "speaker": "Ann", "user_id": "ann"},
            {"text": "second turn", "speaker": "Bob", "user_id": "ann"}]
    turns.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    res = CliRunner().invoke(app, ["ingest", "jsonl", str(turns), "--store", str(tmp_path / "mem")])
    assert res.exit_code == 0, res.output
    with Memory(tmp_path / "mem") as m:
        assert sorted(r["text"] for r in m.export(user_id="ann") if r["kind"] == "unit") == sorted(
            r["text"] for r in rows)


def test_an_image_round_trips_and_its_hash_is_recomputed(tmp_path: Path):
    image = pytest.importorskip("PIL.Image")
    pytest.importorskip("imagehash")
    buf = io.BytesIO()
    image.new("RGB", (64, 48), (200, 30, 30)).save(buf, "PNG")
    data = buf.getvalue()
    with Memory(tmp_path / "a", embedder="fake") as a:
        a.add_image(data, "a red square", user_id="ann")
        dump = list(a.export(user_id="ann"))
    with Memory(tmp_path / "b", embedder="fake") as b:
        assert b.import_records(dump)["stored"] == 1
        again = b.add_image(data, "a red square", user_id="ann")
        assert not again.accepted and again.reason == "duplicate"
        assert b.search("red square", user_id="ann").hits


def test_a_malformed_audit_event_in_a_dump_stores_nothing(mem: Memory):
    from omnimem.errors import MalformedDataError

    event = {"kind": "event", "seq": 1, "time": "2024-01-01T00:00:00+00:00", "actor": "x", "action": "add",
             "unit_ids": ["abc1"], "user_id": "ann", "details": {}}
    with pytest.raises(MalformedDataError, match="record 3: not a valid audit event"):
        mem.import_records([HEADER, unit("abc1", "Ann likes tea", user_id="ann"), {**event, "time": "yesterday"}])
    assert mem.stats()["units"] == 0
    assert mem.import_records([HEADER, unit("abc1", "Ann likes tea", user_id="ann"), event])["events"] == 1
    assert [e.details["imported_from"] for e in mem.history("abc1", user_id="ann") if e.action == "add"] == \
        [{"seq": 1, "time": "2024-01-01T00:00:00+00:00"}]
