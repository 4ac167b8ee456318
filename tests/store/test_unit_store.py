"""The ``UnitStore`` contract: units, meta, audit log, tombstones and cold blobs."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone

import numpy as np
import pytest

from omnimem.errors import NotFoundError
from omnimem.mau import MAU, Links, Modality, Scope
from omnimem.store.audit import AuditEvent
from omnimem.store.cold import content_ref
from tests.store.conftest import DIM, Backend

NOW = datetime(2024, 1, 1, tzinfo=timezone.utc)


def unit(uid: str, scope: Scope, *, ref: str | None = None, vector: list[float] | None = None,
         text: str | None = None, modality: Modality = Modality.TEXT, when: datetime = NOW) -> MAU:
    return MAU(uid, text or f"summary {uid}", modality, when, when, scope, "hash" + uid, speaker="Ann",
               raw_ref=ref, links=Links(source_ids=("D1:" + uid,)),
               embedding=np.array(vector or [1.0, 0.0, 0.0, 0.0], dtype=np.float32), metadata={"n": uid})


def test_a_unit_with_two_successors_links_to_the_newest(backend: Backend) -> None:
    """A unit written with an explicit ``prev_id`` (here another session's turn) gives its predecessor a second
    successor: every backend reads the newest one as the predecessor's next link, however it is read."""
    store = backend.store
    s = Scope("u1", None, "s1")
    rows = store.insert([unit("a", s), unit("b", s)], {})
    store.insert([replace(unit("x", Scope("u1", None, "s2")), links=Links("a", None, ()))], {})
    a, b, x = store.get(["a", "b", "x"])
    assert (a.links.next_id, b.links.prev_id, x.links.prev_id) == ("x", "a", "a")
    assert store.get_rows([rows[0][0]])[rows[0][0]].links.next_id == "x"
    assert store.get_with_rids(["a"])[0][1].links.next_id == "x"


def test_meta_records_the_embedder(backend: Backend) -> None:
    meta = backend.store.meta()
    assert meta is not None and (meta.embedder, meta.dim) == ("fake", DIM)
    assert backend.store.read_only is False


def test_units_round_trip_with_session_links_and_row_ids(backend: Backend) -> None:
    store = backend.store
    s = Scope("u1", None, "s1")
    rows = store.insert([unit("a", s), unit("b", s), unit("c", Scope("u1"))], {})
    assert [u.id for _, u in rows] == ["a", "b", "c"] and len({rid for rid, _ in rows}) == 3
    a, b, c = store.get(["a", "b", "c"])
    assert (a.links.prev_id, a.links.next_id, b.links.prev_id) == (None, "b", "a")
    assert c.links.prev_id is None and b.source_ids == ("D1:b",) and b.metadata == {"n": "b"}
    assert b.embedding is not None and b.embedding.tolist() == [1.0, 0.0, 0.0, 0.0]
    by_rid = store.get_rows([rid for rid, _ in rows])
    assert sorted(u.id for u in by_rid.values()) == ["a", "b", "c"]
    assert [(rid, u.id) for rid, u in store.get_with_rids(["c"])] == [(rows[2][0], "c")]
    assert store.find_hashes(["hasha", "nope"]) == {"hasha": "a"}
    assert store.ids_in_scope(Scope("u1", None, "s1")) == ["a", "b"]
    assert [uid for uid, _ in store.recent(s, 5)] == ["b", "a"]
    assert store.recent_lines(s, 1) == [("Ann", "summary b")]
    assert [row[0] for row in store.embed_rows()] == [rid for rid, _ in rows]


def test_a_failing_batch_stores_nothing_and_the_counter_moves_per_write(backend: Backend) -> None:
    store = backend.store
    before = store.seq()
    store.insert([unit("a", Scope("u"))], {})
    assert store.seq() == before + 1 == store.last_write_seq
    with pytest.raises(Exception):
        # the same id with other content fails the batch (the same unit again is skipped as itself, below)
        store.insert([unit("b", Scope("u")), replace(unit("a", Scope("u")), content_hash="other")], {})
    assert [u.id for u in store.get(["a", "b"])] == ["a"]
    store.delete(["a"])
    assert store.seq() == before + 2


def test_the_same_unit_stored_again_is_skipped_as_a_duplicate_of_itself(backend: Backend) -> None:
    """Two writers storing one unit (an import and its retry) at once: the second finds it stored, no error."""
    store = backend.store
    store.insert([unit("a", Scope("u"))], {})
    again = store.insert([unit("a", Scope("u")), unit("b", Scope("u"))], {})
    assert [u.id for _, u in again] == ["b"]
    assert [u.id for u in store.get(["a", "b"])] == ["a", "b"]


def test_cold_blobs_live_as_long_as_a_unit_uses_them(backend: Backend) -> None:
    store = backend.store
    shared = b"shared full text"
    ref = content_ref(shared)
    s = Scope("u", None, "s")
    store.insert([unit("a", s, ref=ref), unit("b", s, ref=ref)], {ref: shared})
    assert store.read_raw(ref) == shared
    store.delete(["a"])
    assert store.read_raw(ref) == shared  # b still uses it
    assert store.get(["b"])[0].links.prev_id is None
    store.delete(["b"])
    with pytest.raises(NotFoundError):
        store.read_raw(ref)


def test_supersession_audit_and_tombstones(backend: Backend) -> None:
    store = backend.store
    owner = Scope("ann")
    store.insert([unit("old", owner)], {}, event=AuditEvent("add", "test", ("old",), owner))
    store.insert([unit("new", owner)], {}, supersedes={"new": ["old"]},
                 event=AuditEvent("supersede", "test", ("new", "old"), owner))
    assert store.get(["old"])[0].superseded_by == "new" and store.predecessors(["new"]) == ["old"]
    assert [e.action for e in store.events(unit_id="old")] == ["add", "supersede"]
    store.delete(["new"], event=AuditEvent("delete", "test", ("new",), owner))
    assert store.get(["old"])[0].active  # what it replaced is current again
    assert store.tombstoned([(owner, "hashnew")]) == {"hashnew": "new"}
    assert store.tombstone_owner("new") == owner
    assert [e.action for e in store.events(scope=owner, limit=2)] == ["delete", "revive"]  # old is current again
    assert store.forgotten_since(owner) is None
    store.delete(["old"], forgotten=owner)
    assert store.forgotten_since(owner) is not None


def test_vectors_are_replaced_with_the_embedder_that_made_them(backend: Backend) -> None:
    store = backend.store
    rows = store.insert([unit("a", Scope("u"))], {})
    store.replace_vectors([rows[0][0]], [np.array([0.0, 1.0, 0.0], dtype=np.float32)], "other", 3,
                          AuditEvent("reembed", "test", ()))
    meta = store.meta()
    assert meta is not None and (meta.embedder, meta.dim) == ("other", 3)
    embedding = store.get(["a"])[0].embedding
    assert embedding is not None and embedding.tolist() == [0.0, 1.0, 0.0]


def test_stats_metadata_and_scrub(backend: Backend) -> None:
    store = backend.store
    store.insert([unit("img", Scope("u"), modality=Modality.IMAGE)], {})
    assert store.recent_metadata(Scope("u"), Modality.IMAGE, 3) == [("img", {"n": "img"})]
    store.add_stats({"text_duplicate": 2})
    store.add_stats({"text_duplicate": 1})
    assert store.filter_stats()["text_duplicate"] == 3
    assert store.stats()["units"] == 1
    store.delete(["img"])
    assert store.scrub() is True

