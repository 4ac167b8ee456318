"""Update and supersession, bi-temporal search, the audit log, forget with zero residue,
export/import and re-embed."""

from __future__ import annotations

import sqlite3
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import pytest

from omnimem import InvalidInputError, MalformedDataError, Memory, NotFoundError


def ids(ctx) -> list[str]:
    return [h.unit.id for h in ctx.hits]


def test_update_supersedes_and_keeps_history(mem: Memory):
    old = mem.add("Melanie lives in Boston", user_id="mel", speaker="Caroline", time="2023-05-01").id
    new = mem.update(old, text="Melanie lives in Seattle now", reason="she moved").id
    assert ids(mem.search("where does Melanie live", user_id="mel")) == [new]
    both = ids(mem.search("where does Melanie live", user_id="mel", include_superseded=True))
    assert set(both) == {old, new}
    assert mem.get(old).superseded_by == new and mem.get(old).superseded_at is not None
    updated = mem.get(new)
    assert updated.speaker == "Caroline" and updated.event_time == datetime(2023, 5, 1, tzinfo=timezone.utc)
    actions = [(e.action, e.reason) for e in mem.history(old)]
    assert actions == [("add", None), ("update", "she moved")]
    with pytest.raises(InvalidInputError, match="already superseded"):
        mem.update(old, text="again")
    with pytest.raises(InvalidInputError, match="changes nothing"):
        mem.update(new, text="Melanie lives in Seattle now")
    with pytest.raises(NotFoundError):
        mem.update("nope", text="x")


def test_explicit_supersedes_on_add(mem: Memory):
    a = mem.add("the meeting is on Monday", user_id="u").id
    b = mem.add("the meeting moved to Tuesday", user_id="u", supersedes=[a]).id
    assert ids(mem.search("meeting", user_id="u")) == [b]
    with pytest.raises(InvalidInputError):
        mem.add("the meeting moved to Wednesday", user_id="u", supersedes=[a])  # a is already replaced
    with pytest.raises(NotFoundError):
        mem.add("x y z", supersedes=["missing"])
    assert mem.stats()["units"] == 2


def test_as_of_answers_from_what_was_held_then(mem: Memory):
    a = mem.add("the office is in Berlin", user_id="u").id
    time.sleep(0.02)
    between = datetime.now(timezone.utc)
    time.sleep(0.02)
    b = mem.update(a, text="the office is in Munich").id
    assert ids(mem.search("office", user_id="u", as_of=between)) == [a]
    assert ids(mem.search("office", user_id="u")) == [b]
    assert ids(mem.search("office", user_id="u", as_of=datetime(2000, 1, 1, tzinfo=timezone.utc))) == []


def test_the_audit_log_is_append_only(store_path: Path):
    with Memory(store_path, embedder="fake", actor="api-key:test") as m:
        uid = m.add("first note", user_id="u").id
        m.delete(uid, reason="user request")
        log = m.log()
        assert [(e.action, e.actor) for e in log] == [("add", "api-key:test"), ("delete", "api-key:test")]
        assert log[1].unit_ids == (uid,) and log[1].reason == "user request"
        assert "first note" not in str([e.to_dict() for e in log])  # ids and hashes, never content
    conn = sqlite3.connect(store_path / "omnimem.db")
    for sql in ("UPDATE audit_log SET actor = 'x'", "DELETE FROM audit_log", "DELETE FROM audit_units"):
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            conn.execute(sql)
    conn.close()


def test_forgotten_content_is_not_resurrected(mem: Memory):
    mem.add("the user still lives here", user_id="u", session_id="s0")
    uid = mem.add("my phone number is 555-0100", user_id="u", session_id="s1").id
    mem.forget(user_id="u", session_id="s1")  # the user's scope lives on, and so does its tombstone key
    again = mem.add("my phone number is 555-0100", user_id="u", session_id="s1")
    assert not again.accepted and again.reason.startswith("forgotten") and again.duplicate_of == uid
    assert mem.add("my phone number is 555-0100", user_id="u", session_id="s1", allow_forgotten=True).accepted
    assert [e.action for e in mem.history(uid)] == ["add", "forget"]


def test_forget_by_time_range_and_by_ids(mem: Memory):
    for day in (1, 2, 3, 4):
        mem.add(f"diary entry for day {day} of travel", user_id="u", time=f"2024-01-0{day}")
    assert mem.forget(user_id="u", since="2024-01-02", until="2024-01-04") == 2
    left = sorted(h.unit.event_time.day for h in mem.search("diary travel", user_id="u").hits)
    assert left == [1, 4]
    target = mem.search("diary travel", user_id="u").hits[0].unit.id
    assert mem.forget(unit_ids=[target]) == 1
    with pytest.raises(InvalidInputError, match="all=True"):
        mem.forget()
    assert mem.forget(all=True) == 1 and mem.stats()["units"] == 0


def test_forget_leaves_zero_residue_on_disk(tmp_path: Path):
    secret = f"zq{uuid.uuid4().hex}"  # a string that appears nowhere else
    path = tmp_path / "mem"
    with Memory(path, embedder="fake", graph=True) as m:
        m.add_dialogue(
            [{"speaker": "Ann", "text": f"Ann told Bob in Paris that the code word is {secret}.", "time": "2024-01-01"},
             {"speaker": "Bob", "text": "long story " * 80 + secret, "time": "2024-01-01"}],
            user_id="gone", session_id="s1",
        )
        m.add("Bob likes tea in Paris", user_id="stays")
        assert m.flush(timeout=60)  # the graph rows are queued enrichment
        m.search(secret, user_id="gone")  # builds and caches the BM25 index with the secret in it
        m.close()
        with Memory(path) as again:  # reopened: indexes saved to disk now hold the secret
            assert any(secret in h.unit.summary for h in again.search(secret).hits)
    assert _files_containing(path, secret), "the test must see the secret before forgetting"
    with Memory(path, graph=True) as m:
        m.forget(user_id="gone")
        for query in (secret, "code word Paris", "long story"):
            assert all(h.unit.user_id == "stays" for h in m.search(query).hits)
        assert {e.name for e in m.entities()} >= {"Bob", "Paris"}  # still attested by the other user
        assert _files_containing(path, secret) == []
    assert _files_containing(path, secret) == []


def _files_containing(root: Path, needle: str) -> list[str]:
    data = needle.encode()
    return [str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and data in p.read_bytes()]


def test_export_import_round_trip(tmp_path: Path):
    with Memory(tmp_path / "a", embedder="fake") as a:
        first = a.add("Ann adopted a cat named Tom", user_id="ann", speaker="Ann", time="2024-02-01").id
        a.update(first, text="Ann adopted two cats, Tom and Jerry")
        a.add("long text " * 100, user_id="ann")
        a.add("someone else's note", user_id="bob")
        dump = list(a.export(user_id="ann"))
    kinds = [r["kind"] for r in dump]
    assert kinds[0] == "header" and kinds.count("unit") == 3 and "event" in kinds
    assert all(r.get("user_id") in (None, "ann") for r in dump if r["kind"] == "unit")
    with Memory(tmp_path / "b", embedder="fake") as b:
        events = kinds.count("event")
        assert b.import_records(dump) == {"units": 3, "stored": 3, "skipped": 0, "forgotten": 0, "events": events}
        assert b.import_records(dump)["stored"] == 0 and b.import_records(dump)["events"] == 0  # idempotent
        history = b.history(first)  # the source's events came along, marked as imported
        assert [e.action for e in history if "imported_from" in e.details][:2] == ["add", "update"]
        hits = b.search("cats Tom Jerry", user_id="ann").hits
        assert [h.unit.summary for h in hits][0] == "Ann adopted two cats, Tom and Jerry"
        assert b.get(first).superseded_by is not None
        again = [r for r in b.export(user_id="ann") if r["kind"] == "unit"]
        assert sorted(r["text"] for r in again) == sorted(r["text"] for r in dump if r["kind"] == "unit")
        own = [e.action for e in b.log() if "imported_from" not in e.details]  # this store's own entries
        assert own[-2:] == ["import", "supersede"]
        assert [e.action for e in b.history(first) if "imported_from" not in e.details] == ["import", "supersede"]


@pytest.fixture(scope="module")
def shared_seed() -> Callable[[Memory], object]:
    """unchanged_mem holds one memory of user u."""
    return lambda m: m.add("existing memory", user_id="u")


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ([{"kind": "unit"}], "no omnimem-export header|unit id"),
        ([{"kind": "header", "format": "other", "version": 1}], "not an omnimem-export"),
        ([{"kind": "header", "format": "omnimem-export", "version": 1},
          {"kind": "unit", "id": "../../etc", "text": "x", "content_hash": "a" * 64}], "unit id"),
        ([{"kind": "header", "format": "omnimem-export", "version": 1},
          {"kind": "unit", "id": "abc", "text": "x", "content_hash": "a" * 64, "raw_ref": "../../../etc/passwd"}],
         "path-like"),
        ([{"kind": "header", "format": "omnimem-export", "version": 1},
          {"kind": "unit", "id": "abc", "text": "x" * 10_000_001, "content_hash": "a" * 64}], "longer than"),
        ([{"kind": "header", "format": "omnimem-export", "version": 1},
          {"kind": "unit", "id": "abc", "modality": "image", "text": "x", "content_hash": "a" * 64}], "raw content"),
        ([{"kind": "header", "format": "omnimem-export", "version": 1}, {"kind": "virus"}], "unknown record kind"),
    ],
)
def test_hostile_or_malformed_dumps_change_nothing(unchanged_mem: Memory, bad, message):
    with pytest.raises(MalformedDataError, match=message):
        unchanged_mem.import_records(bad)
    assert unchanged_mem.stats()["units"] == 1


def test_reembed_switches_the_model_and_keeps_search_working(store_path: Path, monkeypatch):
    from omnimem.embed import FakeEmbedder, register_embedder

    class Other(FakeEmbedder):
        name = "fake-other"

    register_embedder("fake-other", lambda: Other(dim=64), replace=True)  # the test may run twice
    with Memory(store_path, embedder="fake") as m:
        uid = m.add("a blue bicycle with a basket", user_id="u").id
        assert m.reembed("fake-other") == 1
        assert m.embedder.name == "fake-other" and m.indexes.dense.dim == 64
        assert m.search("blue bicycle").hits[0].unit.id == uid
        assert m.log()[-1].action == "reembed"
    with Memory(store_path) as m:
        assert m.embedder.name == "fake-other"
        assert m.search("bicycle basket").hits[0].unit.id == uid


def test_cli_governance_commands(tmp_path: Path, monkeypatch):
    import json

    from typer.testing import CliRunner

    from omnimem.cli.commands import app

    monkeypatch.setenv("OMNIMEM_EMBEDDER", "fake")
    store = str(tmp_path / "mem")
    run = CliRunner().invoke
    uid = run(app, ["add", "Ann lives in Oslo", "--user-id", "ann", "--store", store]).stdout.strip()
    new = run(app, ["update", uid, "--text", "Ann lives in Bergen", "--reason", "moved", "--store", store])
    assert new.exit_code == 0, new.output
    events = json.loads(run(app, ["history", uid, "--store", store, "--json"]).stdout)
    assert [e["action"] for e in events] == ["add", "update"]
    dump = tmp_path / "ann.jsonl"
    exported = run(app, ["export", "--user-id", "ann", "--store", store])
    dump.write_text(exported.stdout)
    assert run(app, ["forget", "--store", store]).exit_code != 0  # no selection: refused
    assert "forgot 2" in run(app, ["forget", "--user-id", "ann", "--reason", "GDPR", "--store", store]).stdout
    imported = run(app, ["import", str(dump), "--store", store, "--json"])
    assert json.loads(imported.stdout)["forgotten"] == 2  # an old backup does not undo the forget
    imported = run(app, ["import", str(dump), "--allow-forgotten", "--store", store, "--json"])
    assert json.loads(imported.stdout)["stored"] == 2
    log = run(app, ["log", "--store", store]).stdout
    assert "forget" in log and "GDPR" in log and "import" in log
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind": "header", "format": "omnimem-export", "version": 1}\nnot json\n')
    res = run(app, ["import", str(bad), "--store", store])
    assert res.exit_code != 0 and "bad.jsonl:2" in res.stderr
    mismatch = run(app, ["search", "x", "--store", store], env={"OMNIMEM_EMBEDDER": "all-MiniLM-L6-v2"})
    assert mismatch.exit_code != 0 and "omnimem reembed --embedder" in mismatch.stderr


def test_llm_proposed_supersession_is_applied_and_logged():
    import json as _json

    from omnimem.llm import FakeLLM

    def judge(messages) -> str:
        user = messages[-1]["content"]
        if "Seattle" in user.split("EARLIER:")[0] and "Boston" in user:
            number = next(line.split(".")[0] for line in user.split("EARLIER:")[1].splitlines() if "Boston" in line)
            return _json.dumps({"replaces": [int(number)], "reason": "she moved"})
        return _json.dumps({"replaces": []})

    llm = FakeLLM(judge)
    with Memory(embedder="fake", llm=llm, auto_supersede=True, enrich="sync") as m:
        old = m.add("Melanie lives in Boston with her kids", user_id="mel").id
        m.add("Melanie loves hiking in the mountains", user_id="mel")
        new = m.add("Melanie now lives in Seattle with her kids", user_id="mel").id
        assert m.get(old).superseded_by == new
        assert old not in ids(m.search("where does Melanie live with her kids", user_id="mel"))
        event = m.history(old)[-1]
        assert event.action == "supersede" and event.actor == "llm:fake" and "she moved" in event.reason
    with Memory(embedder="fake", llm=FakeLLM(judge)) as m:  # off by default
        old = m.add("Melanie lives in Boston with her kids", user_id="mel").id
        m.add("Melanie now lives in Seattle with her kids", user_id="mel")
        assert m.get(old).active
