"""``UnitStore.past_owners``: who a unit id belonged to, from its tombstones and its audit events (every backend).

An import refuses an id whose past names another user or agent, so this is what
keeps one scope from taking over another's unit id and its history.
"""

from __future__ import annotations

from omnimem.mau import Scope
from omnimem.store.audit import AuditEvent
from tests.store.conftest import Backend
from tests.store.test_unit_store import unit


def test_an_id_keeps_its_owners_after_a_delete_and_after_a_whole_forget(backend: Backend) -> None:
    store = backend.store
    bob, bot = Scope("bob", None, "s1"), Scope("ann", "bot")
    store.insert([unit("b1", bob), unit("b2", bob)], {}, event=AuditEvent("add", "test", ("b1", "b2"), bob))
    store.insert([unit("a1", bot)], {}, event=AuditEvent("add", "test", ("a1",), bot))
    assert store.past_owners(["b1", "a1", "never"]) == {"b1": {("bob", None)}, "a1": {("ann", "bot")}}
    store.delete(["b1"], event=AuditEvent("delete", "test", ("b1",), bob))  # a tombstone names bob too
    store.delete(["b2"], event=AuditEvent("forget", "test", ("b2",), Scope()), forgotten=Scope("bob"))
    owners = store.past_owners(["b1", "b2", "b1"])
    assert owners == {"b1": {("bob", None)}, "b2": {("bob", None), (None, None)}}  # the log outlives the key
    assert store.past_owners([]) == {}
