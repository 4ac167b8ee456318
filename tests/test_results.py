"""Every public value object of ``omnimem.results`` survives ``to_dict`` -> JSON -> ``from_dict`` unchanged.

The HTTP server writes these with ``to_dict`` and the remote engine rebuilds them
with ``from_dict``: a field one side forgets fails here, without a server.
"""

from __future__ import annotations

import importlib
import json
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any

import pytest

import omnimem
import omnimem.context
import omnimem.results.entities
import omnimem.results
from omnimem.mau import MAU, Links, Modality, Scope
from omnimem.results import (
    AddResult, Answer, AnswerUsage, AuditRecord, Context, Entity, EntityType, Hit, MediaResult, Neighbor, Plan,
    PlanRound, RawContent,
)

WHEN = datetime(2026, 3, 4, 5, 6, 7, tzinfo=timezone.utc)
SCOPE = Scope("ann", "helper", "s1")


def unit(n: int, modality: Modality = Modality.TEXT) -> MAU:
    return MAU(f"u{n}", f"summary {n}", modality, WHEN, WHEN, SCOPE, f"hash{n}", speaker="Ann",
               raw_ref=f"raw{n}" if modality is not Modality.TEXT else None, links=Links(source_ids=(f"src{n}",)),
               metadata={"mime": "image/png"} if modality is Modality.IMAGE else {})


def context() -> Context:
    hits = (
        Hit(unit(1), 0.75, 2, 1, frozenset({"dense", "sparse"}), "[2026-03-04] Ann: full text", 9,
            fused=0.032, ranks={"dense": 1, "sparse": 2}),
        Hit(unit(2, Modality.IMAGE), 0.5, 3, 2, frozenset({"dense"}), "(image cat.png) a cat", 7,
            RawContent("[image: 640x480]", "image/png", None, 4), None, {"dense": 2}),
    )
    return Context("where is the cat", hits, 20, 100, candidates=5, dropped=("u3",), graph={"seeds": ["Ann"]},
                   packing="session")


def through_json(value: Any) -> Any:
    """What the wire does to ``to_dict``: JSON text and back."""
    return json.loads(json.dumps(value.to_dict()))


VALUES = {
    "AddResult": AddResult("u1", True, "stored", 0.25, None),
    "AddResult skipped": AddResult(None, False, "duplicate", 0.99, "u0"),
    "MediaResult": MediaResult((AddResult("u1", True, "stored"), AddResult(None, False, "silence")),
                               {"speech_segments": 2.0, "silence_seconds": 1.5}, "u1"),
    "Context": context(),
    "Context planned": replace(context(), plan=Plan("llm", (PlanRound(("where is the cat", "cat"), "the question"),),
                                                    2, 340, 25, {"analysis": 301.5, "pack": 2.25}, "deadline")),
    "Plan": Plan("offline", (PlanRound(("q",), "the question"), PlanRound(("q lily",), "second hop")),
                 ms={"search1": 1.5}),
    "Answer": Answer("where is the cat", "on the mat", context().hits, AnswerUsage(12, 3, 1, 0.25), context(),
                     "fake-model", None),
    "RawContent": RawContent("[image: 640x480]", "image/png", None, 4),
    "AuditRecord": AuditRecord(7, WHEN, "key:ci", "supersede", ("u1", "u2"), SCOPE, "typo", {"old": "u1"}),
    "Entity": Entity("e1", "Ann Lee", ("Ann",), EntityType.PERSON, 0.9, Scope("ann", "helper")),
    "Neighbor": Neighbor(Entity("e2", "Paris", (), EntityType.LOCATION, 0.8, Scope("ann")), 2, 0.64),
}


@pytest.mark.parametrize("name", sorted(VALUES))
def test_a_value_object_survives_the_wire(name: str) -> None:
    value = VALUES[name]
    again = type(value).from_dict(through_json(value))
    assert again == value
    assert again.to_dict() == value.to_dict()


def test_a_context_renders_the_same_after_the_wire() -> None:
    ctx = context()
    again = Context.from_dict(through_json(ctx))
    assert again.render() == ctx.render()
    assert len(again.lines()) == 3  # session packing: one header for the two hits of one session and time
    assert again.lines()[1:] == [hit.render() for hit in ctx.hits]


def test_raw_bytes_do_not_travel_but_their_stand_in_does() -> None:
    hit = Hit(unit(2, Modality.IMAGE), 0.5, 3, 1, frozenset({"dense"}), "a cat", 2,
              RawContent("[image]", "image/png", b"\x89PNG", None))
    again = Hit.from_dict(through_json(hit))
    assert again.raw == RawContent("[image]", "image/png", None, None)


def test_every_public_class_with_to_dict_is_round_tripped_here() -> None:
    covered = {type(v).__name__ for v in VALUES.values()} | {"Hit", "AnswerUsage", "PlanRound"}  # inside others
    homes = {"omnimem.results", "omnimem.context", "omnimem.results.entities"}  # results re-exports the other two
    public = {name for home in homes for name, member in vars(importlib.import_module(home)).items()
              if isinstance(member, type) and member.__module__ in homes and hasattr(member, "from_dict")}
    assert public == covered


def test_every_value_object_is_importable_from_results_and_the_package_names_it_there() -> None:
    for home in ("omnimem.context", "omnimem.results.entities"):
        defined = [name for name, member in vars(importlib.import_module(home)).items()
                   if getattr(member, "__module__", None) == home and not name.startswith("_")]
        assert defined and [n for n in defined if getattr(omnimem.results, n, None) is None] == [], home
    assert omnimem.Context is omnimem.results.Context is omnimem.context.Context
    assert omnimem.results.Entity is omnimem.results.entities.Entity
