"""Scope and governance, as a hostile or careless caller would try them (issue 15):
one user touching another's units, corrections that hide originals for good, forget
footguns, and forgotten content confirmable by guessing."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from omnimem import InvalidInputError, Memory, NotFoundError
from omnimem.mau import Scope, content_hash
from omnimem.store.sqlite.schema import MIGRATIONS


def ids(ctx) -> list[str]:
    return [h.unit.id for h in ctx.hits]


# -- one user cannot hide or touch another's memories --------------------------------------
def test_another_user_cannot_supersede_a_victims_unit(mem: Memory):
    vid = mem.add("victim: allergy to penicillin", user_id="victim").id
    with pytest.raises(NotFoundError, match="no unit with id") as refused:
        mem.add("nothing here", user_id="attacker", supersedes=[vid])
    with pytest.raises(NotFoundError) as missing:
        mem.add("nothing here", user_id="attacker", supersedes=["0" * 32])
    assert str(refused.value).replace(vid, "X") == str(missing.value).replace("0" * 32, "X")  # existence does not leak
    with pytest.raises(NotFoundError):  # the same user under another agent is another owner too
        mem.add("nothing here", user_id="victim", agent_id="other-bot", supersedes=[vid])
    assert ids(mem.search("allergy penicillin", user_id="victim")) == [vid]
    assert mem.get(vid).active and [e.action for e in mem.history(vid)] == ["add"]
    assert mem.stats()["units"] == 1


def test_supersession_is_logged_against_the_replaced_unit(mem: Memory):
    old = mem.add("the meeting is on Monday", user_id="u").id
    new = mem.add("the meeting moved to Tuesday", user_id="u", session_id="later", supersedes=[old]).id
    event = mem.history(old)[-1]
    assert event.action == "supersede" and set(event.unit_ids) == {old, new}


@pytest.mark.parametrize("call", ["get", "update", "delete", "history"])
def test_calls_by_id_are_bound_to_the_given_scope(mem: Memory, call: str):
    uid = mem.add("Ann's bank PIN is 4321", user_id="ann", agent_id="bank-bot", session_id="s1").id
    run = {
        "get": lambda **scope: mem.get(uid, **scope),
        "update": lambda **scope: mem.update(uid, text="Ann's bank PIN is 9999", **scope),
        "delete": lambda **scope: mem.delete(uid, **scope),
        "history": lambda **scope: mem.history(uid, **scope),
    }[call]
    for outside in ({"user_id": "bob"}, {"agent_id": "other-bot"}, {"user_id": "ann", "session_id": "s2"}):
        with pytest.raises(NotFoundError, match=f"no unit with id '{uid}'"):
            run(**outside)
    assert mem.get(uid).active and mem.stats()["units"] == 1  # nothing happened
    run(user_id="ann", agent_id="bank-bot", session_id="s1")  # inside the scope: allowed


def test_history_of_a_deleted_unit_stays_bound_to_its_owner(mem: Memory):
    uid = mem.add("a note to delete", user_id="ann", session_id="s1").id
    mem.add("a note that stays", user_id="ann", session_id="s0")
    mem.delete(uid)
    assert [e.action for e in mem.history(uid, user_id="ann")] == ["add", "delete"]
    with pytest.raises(NotFoundError):
        mem.history(uid, user_id="bob")


# -- deleting a correction makes the original current again --------------------------------
def test_deleting_a_correction_revives_the_original(mem: Memory):
    u1 = mem.add("Ann lives in Oslo", user_id="ann").id
    u2 = mem.update(u1, text="Ann lives in Bergen").id
    assert ids(mem.search("where does Ann live", user_id="ann")) == [u2]
    mem.delete(u2)
    assert mem.get(u1).active and mem.get(u1).superseded_at is None
    assert ids(mem.search("where does Ann live", user_id="ann")) == [u1]
    revive = mem.history(u1)[-1]
    assert revive.action == "revive" and revive.details["deleted_successor"] == u2
    assert mem.update(u1, text="Ann lives in Tromsø").accepted  # it can be corrected again


def test_forgetting_a_correction_revives_the_original(tmp_path: Path):
    with Memory(tmp_path / "mem", embedder="fake") as m:
        u1 = m.add("the office is in Berlin", user_id="u", session_id="s1").id
        u2 = m.add("the office moved to Munich", user_id="u", session_id="s2", supersedes=[u1]).id
        assert m.forget(user_id="u", session_id="s2") == 1
        assert [e.action for e in m.history(u1)] == ["add", "supersede", "revive"]
        assert ids(m.search("office", user_id="u")) == [u1]
        u3 = m.update(u1, text="the office is in Hamburg").id
        assert m.forget(unit_ids=[u3]) == 1 and u2 != u3
    with Memory(tmp_path / "mem") as m:  # the indexes on disk agree after a reopen
        assert ids(m.search("office", user_id="u")) == [u1]


def test_deleting_a_middle_version_links_the_oldest_to_the_newest(mem: Memory):
    u1 = mem.add("version one of the plan", user_id="u").id
    u2 = mem.update(u1, text="version two of the plan").id
    u3 = mem.update(u2, text="version three of the plan").id
    mem.delete(u2)
    assert mem.get(u1).superseded_by == u3 and ids(mem.search("plan", user_id="u")) == [u3]


def test_delete_chain_removes_every_version(mem: Memory):
    u1 = mem.add("version one of the plan", user_id="u").id
    u2 = mem.update(u1, text="version two of the plan").id
    u3 = mem.update(u2, text="version three of the plan").id
    keep = mem.add("an unrelated note", user_id="u").id
    mem.delete(u2, chain=True)
    for gone in (u1, u2, u3):
        with pytest.raises(NotFoundError):
            mem.get(gone)
    assert ids(mem.search("plan note", user_id="u", include_superseded=True)) == [keep]
    assert not any(e.action == "revive" for e in mem.log())


# -- forget footguns ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def shared_seed() -> Callable[[Memory], object]:
    """unchanged_mem holds a note of user u and one of user v, in the session "default"."""
    return lambda m: [m.add(f"a note of user {u}", user_id=u, session_id="default", time="2023-06-01") for u in "uv"]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"unit_ids": "abc"},
        {"unit_ids": [1, 2]},
        {"unit_ids": {"abc": 1}},
        {"user_id": "u", "since": 20240101},
        {"user_id": "u", "all": "yes"},
        {"user_id": "u", "all_users": 1},
        {"user_id": "u", "reason": 42},
        {"session_id": "default"},
        {"since": "2024-01-01"},
        {"until": "2024-01-01"},
        {"all": True, "user_id": "u"},
    ],
)
def test_forget_refuses_ambiguous_or_mistyped_selections(unchanged_mem: Memory, kwargs):
    with pytest.raises(InvalidInputError):
        unchanged_mem.forget(**kwargs)
    assert unchanged_mem.stats()["units"] == 2


def test_forget_by_session_or_time_for_every_user_must_say_so(mem: Memory):
    for user in ("u", "v"):
        mem.add(f"a note of user {user}", user_id=user, session_id="default", time="2023-06-01")
        mem.add(f"a later note of user {user}", user_id=user, session_id="other", time="2024-06-01")
    assert mem.forget(session_id="default", user_id="u") == 1
    assert mem.forget(session_id="default", all_users=True) == 1
    assert mem.forget(since="2024-01-01", all_users=True) == 2
    assert mem.stats()["units"] == 0 and mem.forget(all=True) == 0


def test_cli_forget_all_users(tmp_path: Path, monkeypatch):
    from typer.testing import CliRunner

    from omnimem.cli.commands import app

    monkeypatch.setenv("OMNIMEM_EMBEDDER", "fake")
    store = str(tmp_path / "mem")
    run = CliRunner().invoke
    for user in ("ann", "bob"):
        assert run(app, ["add", f"{user} was here", "--user-id", user, "--session-id", "s1", "--store", store]).exit_code == 0
    refused = run(app, ["forget", "--session-id", "s1", "--store", store])
    assert refused.exit_code == 2 and "--all-users" in refused.stderr
    assert "forgot 2" in run(app, ["forget", "--session-id", "s1", "--all-users", "--store", store]).stdout


# -- forgotten content cannot be confirmed by guessing --------------------------------------
def _plain_hash(text: str, user: str, session: str | None = None) -> str:
    return content_hash(text, speaker=None, event_time=None, scope=Scope(user, None, session), source_id=None)


def _db_rows(path: Path, sql: str) -> list[tuple]:
    conn = sqlite3.connect(path / "omnimem.db")
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_tombstones_and_log_hold_no_plain_content_hash(store_path: Path):
    secret = "I am pregnant"
    with Memory(store_path, embedder="fake") as m:
        m.add("an ordinary day", user_id="anna", session_id="s0")
        uid = m.add(secret, user_id="anna", session_id="s1").id
        m.forget(user_id="anna", session_id="s1")
        refused = m.add(secret, user_id="anna", session_id="s1")  # re-ingest protection while anna's key lives
        assert not refused.accepted and refused.duplicate_of == uid
    guess = _plain_hash(secret, "anna", "s1")
    dump = json.dumps(_db_rows(store_path, "SELECT * FROM audit_log") + _db_rows(store_path, "SELECT * FROM tombstones_keyed"),
                      default=str)
    assert guess not in dump and hashlib.sha256(secret.encode()).hexdigest() not in dump
    with Memory(store_path) as m:
        m.forget(user_id="anna")  # the whole user: her key and tombstones go
        assert m.add(secret, user_id="anna", session_id="s1").accepted  # nothing left to recognise it by
    assert _db_rows(store_path, "SELECT * FROM scope_keys WHERE user_id = 'anna'") == []
    assert _db_rows(store_path, "SELECT * FROM tombstones_keyed WHERE user_id = 'anna'") == []


def test_migration_rekeys_plain_tombstones_and_scrubs_hashes_from_the_log(store_path: Path):
    """A store written before schema 7: plain hashes in tombstones and in add events."""
    store_path.mkdir()
    conn = sqlite3.connect(store_path / "omnimem.db", isolation_level=None)
    for number, _name, steps in MIGRATIONS[:6]:
        for step in steps:
            conn.execute(str(step))
    conn.executemany("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                     [("schema_version", "6"), ("embedder", "fake"), ("dim", "384")])
    kept, dropped = _plain_hash("my phone is 555-0100", "u", "s1"), _plain_hash("anna's secret", "anna")

    def event(seq: int, action: str, unit: str, scope: dict, details: dict) -> None:
        conn.execute("INSERT INTO audit_log(seq, time, actor, action, unit_ids, scope, details) VALUES (?,?,?,?,?,?,?)",
                     (seq, "2024-01-01T00:00:00+00:00", "t", action, json.dumps([unit]),
                      json.dumps({"user_id": None, "agent_id": None, "session_id": None, **scope}), json.dumps(details)))
        conn.execute("INSERT INTO audit_units(seq, unit_id) VALUES (?, ?)", (seq, unit))

    event(1, "add", "a1", {"user_id": "u", "session_id": "s1"}, {"content_hashes": [kept]})
    event(2, "forget", "a1", {"user_id": "u", "session_id": "s1"}, {"since": None, "until": None, "all": False})
    event(3, "add", "b1", {"user_id": "anna"}, {"content_hashes": [dropped]})
    event(4, "forget", "b1", {"user_id": "anna"}, {"since": None, "until": None, "all": False})
    conn.executemany("INSERT INTO tombstones(content_hash, unit_id, forgotten_at) VALUES (?, ?, ?)",
                     [(kept, "a1", "2024-01-02T00:00:00+00:00"), (dropped, "b1", "2024-01-02T00:00:00+00:00")])
    conn.close()
    with Memory(store_path) as m:
        assert m.log()[4].action == "migrate" and m.log()[4].details["tombstones_rekeyed"] == 1
        assert "content_hashes" not in json.dumps([e.to_dict() for e in m.log()])
    raw = (store_path / "omnimem.db").read_bytes()
    assert kept.encode() not in raw and dropped.encode() not in raw
    with Memory(store_path) as m:
        again = m.add("my phone is 555-0100", user_id="u", session_id="s1")
        assert not again.accepted and again.duplicate_of == "a1"  # protection kept, now keyed
        assert m.add("anna's secret", user_id="anna").accepted  # her whole scope was forgotten: nothing to match
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):  # the triggers are back
        with sqlite3.connect(store_path / "omnimem.db") as conn:
            conn.execute("UPDATE audit_log SET actor = 'x'")


def test_forgetting_a_user_with_no_units_left_still_destroys_her_key(store_path: Path):
    with Memory(store_path, embedder="fake") as m:
        uid = m.add("I am pregnant", user_id="anna").id
        m.delete(uid)  # a keyed tombstone: anna's key exists
        assert _db_rows(store_path, "SELECT COUNT(*) FROM scope_keys WHERE user_id = 'anna'") == [(1,)]
        assert m.forget(user_id="anna") == 0
        assert m.log()[-1].action == "forget"
    assert _db_rows(store_path, "SELECT COUNT(*) FROM scope_keys WHERE user_id = 'anna'") == [(0,)]
    assert _db_rows(store_path, "SELECT COUNT(*) FROM tombstones_keyed") == [(0,)]
