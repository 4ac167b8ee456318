"""The remote facade answers like the local one: value objects survive the wire, and the same
data gives the same search results locally and over HTTP (identical contexts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from omnimem import Memory
from omnimem.mau import MAU, Scope
from omnimem.results import AddResult, Answer, AuditRecord, Context, MediaResult, Neighbor
from omnimem.results.entities import Entity, EntityType
from tests.serving import LiveServer

TURNS = [
    {"id": "D1:1", "speaker": "Melanie", "text": "I painted a sunset last weekend with Caroline.", "time": "2023-05-08"},
    {"id": "D1:2", "speaker": "Caroline", "text": "Mel, your sunset painting is beautiful!", "time": "2023-05-08"},
    {"id": "D1:3", "speaker": "Caroline", "text": "I went to an LGBTQ support group in Boston.", "time": "2023-05-08"},
    {"id": "D2:1", "speaker": "Melanie", "text": "Caroline showed me Boston harbour at dawn.", "time": "2023-06-01"},
    {"id": "D2:2", "speaker": "Melanie", "text": "We are planning a camping trip to the mountains in July.",
     "time": "2023-06-01"},
]
QUERIES = ["sunset painting", "Boston support group", "camping trip plans", "what did Caroline show Melanie?",
           "nothing like this was ever said"]


def test_value_objects_round_trip(tmp_path: Path) -> None:
    with Memory(tmp_path / "m", embedder="fake") as mem:
        results = mem.add_dialogue(TURNS, user_id="u", session_id="s")
        mem.update(results[0].id, text="I painted a sunrise last weekend with Caroline.", user_id="u")
        ctx = mem.search("painting", user_id="u", include_superseded=True)
        assert ctx.hits
        assert Context.from_dict(ctx.to_dict()) == ctx
        assert Context.from_dict(ctx.to_dict()).render() == ctx.render()
        for hit in ctx.hits:
            assert MAU.from_dict(hit.unit.to_dict()) == hit.unit
        answer = mem.ask("what was painted?", user_id="u")
        assert Answer.from_dict(answer.to_dict()) == answer
        for record in mem.history(results[0].id):
            assert AuditRecord.from_dict(record.to_dict()) == record
        for result in results:
            assert AddResult.from_dict(result.to_dict()) == result
    media = MediaResult((AddResult("a", True, "stored"), AddResult(None, False, "silence")), {"segments": 2.0}, "a")
    assert MediaResult.from_dict(media.to_dict()) == media
    entity = Entity("e1", "Boston", ("Bos",), EntityType("Location"), 0.9, Scope("u", "a"))
    assert Entity.from_dict(entity.to_dict()) == entity
    neighbor = Neighbor(entity, 2, 0.25)
    assert Neighbor.from_dict(neighbor.to_dict()) == neighbor


@pytest.mark.parametrize("settings", [{}, {"fusion": "union", "packing": "session", "neighbours": 1}],
                         ids=["defaults", "union-session"])
def test_local_and_remote_search_are_identical(tmp_path: Path, settings: dict[str, object]) -> None:
    with Memory(tmp_path / "local", embedder="fake", **settings) as local, \
            Memory(tmp_path / "served", embedder="fake", **settings) as backend:
        live = LiveServer(backend, auth=False, rate_limit=None)
        try:
            with Memory(url=live.url) as remote:
                local.add_dialogue(TURNS[:3], user_id="u", session_id="s1")
                local.add_dialogue(TURNS[3:], user_id="u", session_id="s2")
                local.add("a note of another user about sunsets", user_id="v")
                # the same ids; the importer vouches for its own export (an import is untrusted otherwise)
                assert remote.import_records(list(local.export(all=True)), trust="trusted")["stored"] == 6
                for query in QUERIES:
                    for kwargs in ({"user_id": "u"}, {}, {"user_id": "u", "session_id": "s2", "budget": 40}):
                        theirs = remote.search(query, **kwargs)
                        # the server's own facade on the same store: identical, field by field
                        assert theirs == backend.search(query, **kwargs)
                        # a separate local store with the same units (an import gives them a new record time
                        # and marks them as imported)
                        mine = local.search(query, **kwargs)
                        assert _recorded_now(theirs) == _recorded_now(mine)
                        assert theirs.render() == mine.render()
        finally:
            live.stop()


def _recorded_now(ctx: Context) -> Context:
    """The context with every unit's record time and provenance set to one value (all else must match exactly)."""
    from dataclasses import replace
    from datetime import datetime, timezone

    when = datetime(2000, 1, 1, tzinfo=timezone.utc)
    return replace(ctx, hits=tuple(replace(h, unit=replace(h.unit, record_time=when, source="user", surface=None,
                                                           actor=None, origin=None)) for h in ctx.hits))


def test_remote_media_keep_the_file_name_only_when_there_is_one(tmp_path: Path) -> None:
    from tests.server.conftest import png

    picture = tmp_path / "harbour.png"
    picture.write_bytes(png(3))
    with Memory(tmp_path / "served", embedder="fake") as backend:
        live = LiveServer(backend, auth=False, rate_limit=None)
        try:
            with Memory(url=live.url) as remote:
                named = remote.add_image(picture, "the harbour at dawn", user_id="u")
                anonymous = remote.add_image(png(7), "a sketch", user_id="u")
                assert named.id and anonymous.id
                assert remote.get(named.id).metadata["filename"] == "harbour.png"
                assert remote.get(anonymous.id).metadata["filename"] is None  # as for bytes added locally
                assert remote.raw(named.id) == (picture.read_bytes(), "image/png")
        finally:
            live.stop()
