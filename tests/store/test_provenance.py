"""Provenance and trust in the store contract: kept on every unit, filtered by ``min_trust``, changed with a log."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from omnimem.mau import Scope
from omnimem.store.audit import AuditEvent
from omnimem.store.base import SearchFilter
from tests.store.conftest import Backend
from tests.store.test_unit_store import unit


def fill(backend: Backend) -> dict[str, int]:
    ann = Scope("ann")
    units = [
        replace(unit("note", ann, vector=[1.0, 0.0, 0.0, 0.0], text="kayak on the lake"),
                surface="http", actor="key:phone"),
        replace(unit("tool-out", ann, vector=[0.9, 0.1, 0.0, 0.0], text="kayak rental page says call now"),
                source="tool", trust="untrusted", surface="mcp", actor="key:agent"),
        replace(unit("imported", ann, vector=[0.8, 0.2, 0.0, 0.0], text="kayak import"),
                source="import", trust="untrusted", surface="import", actor="local:me", origin="user"),
    ]
    rows = backend.store.insert(units, {})
    backend.search.added(rows, np.stack([u.embedding for u in units]), backend.store.last_write_seq)
    return {u.id: rid for rid, u in rows}


def names(found: list[tuple[int, float]], rid: dict[str, int]) -> set[str]:
    by_rid = {v: k for k, v in rid.items()}
    return {by_rid[r] for r, _ in found}


def test_every_unit_keeps_its_source_trust_surface_actor_and_origin(backend: Backend) -> None:
    fill(backend)
    got = {u.id: u.provenance for u in backend.store.get(["note", "tool-out", "imported"])}
    assert got == {
        "note": {"source": "user", "trust": "trusted", "surface": "http", "actor": "key:phone", "origin": None},
        "tool-out": {"source": "tool", "trust": "untrusted", "surface": "mcp", "actor": "key:agent", "origin": None},
        "imported": {"source": "import", "trust": "untrusted", "surface": "import", "actor": "local:me",
                     "origin": "user"},
    }


def test_min_trust_filters_dense_text_and_admitted_inside_the_backend(backend: Backend) -> None:
    rid = fill(backend)
    query = np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32)
    for scope in (Scope(), Scope("ann")):  # unscoped too: a floor must not take the every-unit shortcut
        trusted = backend.search.within(SearchFilter(scope, min_trust="trusted"))
        assert names(trusted.dense(query, 5), rid) == {"note"}
        assert names(trusted.text("kayak", 5), rid) == {"note"}
        assert trusted.admitted(list(rid.values())) == {rid["note"]}
        anything = backend.search.within(SearchFilter(scope, min_trust="untrusted"))
        assert names(anything.text("kayak", 5), rid) == {"note", "tool-out", "imported"}
        assert names(backend.search.within(SearchFilter(scope)).dense(query, 5), rid) == {"note", "tool-out",
                                                                                         "imported"}


def test_set_trust_changes_the_unit_logs_the_event_and_moves_the_counter(backend: Backend) -> None:
    rid = fill(backend)
    before = backend.store.seq()
    event = AuditEvent("trust", "key:admin", ("tool-out",), Scope("ann"), "checked by hand",
                       {"from": "untrusted", "to": "trusted"})
    assert backend.store.set_trust(["tool-out"], "trusted", event) == 1
    assert backend.store.seq() > before
    assert backend.store.get(["tool-out"])[0].trust == "trusted"
    assert [(e.action, e.actor, e.reason) for e in backend.store.events(unit_id="tool-out")][-1] == (
        "trust", "key:admin", "checked by hand")
    backend.search.sync()
    trusted = backend.search.within(SearchFilter(Scope("ann"), min_trust="trusted"))
    assert names(trusted.text("kayak", 5), rid) == {"note", "tool-out"}
