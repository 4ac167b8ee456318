"""Memory.units, count_units, preview_forget and raw: the reads behind the console, on every engine."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from omnimem import InvalidInputError, Memory, NotFoundError

TURNS = [
    {"speaker": "Ann", "text": "We moved to Lisbon in spring.", "time": "2023-03-02"},
    {"speaker": "Ben", "text": "The new flat has a view of the river.", "time": "2023-03-01"},
    {"speaker": "Ann", "text": "I started Portuguese lessons on Tuesdays.", "time": "2023-04-10"},
]


def test_units_are_listed_in_event_time_order_with_filters(mem: Memory) -> None:
    ids = [r.id for r in mem.add_dialogue(TURNS, user_id="u", session_id="s")]
    mem.add("another user's note", user_id="v", time="2023-01-01")
    listed = mem.units(user_id="u")
    assert [u.id for u in listed] == [ids[1], ids[0], ids[2]]  # by event time, not insertion
    assert mem.count_units(user_id="u") == 3 and mem.count_units() == 4
    assert [u.id for u in mem.units(user_id="u", speaker="Ann")] == [ids[0], ids[2]]
    assert [u.id for u in mem.units(user_id="u", since="2023-03-02", until="2023-04-10")] == [ids[0]]
    assert [u.id for u in mem.units(user_id="u", limit=2, offset=1)] == [ids[0], ids[2]]
    assert mem.units(user_id="u", offset=10) == []
    assert mem.count_units(user_id="u", modality="image") == 0
    assert mem.count_units(user_id="u", session_id="other") == 0


def test_superseded_units_are_listed_only_when_asked(mem: Memory) -> None:
    old = mem.add("the meeting is on Monday", user_id="u", time="2023-05-01").id
    new = mem.update(old, text="the meeting is on Tuesday", user_id="u").id
    assert [u.id for u in mem.units(user_id="u")] == [new]
    assert {u.id for u in mem.units(user_id="u", include_superseded=True)} == {old, new}
    assert mem.count_units(user_id="u", include_superseded=True) == 2


@pytest.mark.parametrize("kwargs", [{"modality": "smell"}, {"limit": 0}, {"limit": 5000}, {"offset": -1},
                                    {"since": "not a time"}, {"include_superseded": "yes"}])
def test_bad_listing_arguments_are_typed_errors(unchanged_mem: Memory, kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidInputError):
        unchanged_mem.units(**kwargs)  # type: ignore[arg-type]


def test_preview_forget_lists_what_forget_removes_and_removes_nothing(mem: Memory) -> None:
    ids = [r.id for r in mem.add_dialogue(TURNS, user_id="u", session_id="s")]
    mem.add("another user's note", user_id="v")
    preview = mem.preview_forget(user_id="u", until="2023-04-01")
    assert sorted(u.id for u in preview) == sorted(ids[:2])
    assert mem.count_units() == 4
    assert mem.forget(user_id="u", until="2023-04-01") == len(preview)
    assert [u.id for u in mem.units(user_id="u")] == [ids[2]]
    with pytest.raises(InvalidInputError):
        mem.preview_forget()  # the same refusals as forget: never "everything" by accident


def test_raw_content_of_a_unit(mem: Memory) -> None:
    from tests.server.conftest import png

    data = png(2)
    image = mem.add_image(data, "a blue square", user_id="u").id
    assert image is not None
    assert mem.raw(image, user_id="u") == (data, "image/png")
    with pytest.raises(NotFoundError):
        mem.raw(image, user_id="v")
    note = mem.add("short note", user_id="u").id
    assert note is not None
    with pytest.raises(NotFoundError, match="no raw content"):
        mem.raw(note)


SAME_DAY = [  # one session's turns, all at the session's date: only the order given tells them apart
    {"speaker": "Ann" if i % 2 == 0 else "Ben", "text": text, "time": "2023-05-07"}
    for i, text in enumerate([
        "Did you finish the pottery class?", "Yes, I made a blue vase on the last day.",
        "What colour glaze did you pick?", "A deep cobalt, it came out almost black.",
        "Are you going back next term?", "Maybe, the teacher wants to start a wheel course.",
        "My sister took that one in Porto.", "Did she keep any of her bowls?",
        "Only two survived the kiln.", "That sounds like my first try at baking bread.",
    ])
]


def test_a_sessions_turns_are_listed_in_the_order_they_were_given(mem: Memory) -> None:
    ids = [r.id for r in mem.add_dialogue(SAME_DAY[:6], user_id="u", session_id="s")]
    ids += [r.id for r in mem.add_dialogue(SAME_DAY[6:], user_id="u", session_id="s")]  # a later batch, same date
    assert len(set(ids)) == len(SAME_DAY)
    assert [u.id for u in mem.units(user_id="u")] == ids
    assert [u.id for u in mem.units(user_id="u", limit=8)] == ids[:8]
    assert [u.id for u in mem.units(user_id="u", limit=4, offset=4)] == ids[4:8]
    mem.add("an older note", user_id="u", time="2023-05-01")  # an earlier time still comes first
    assert [u.summary for u in mem.units(user_id="u", limit=2)] == ["an older note", SAME_DAY[0]["text"]]


def test_http_listing_keeps_the_turn_order(tmp_path: Path) -> None:
    from tests.serving import LiveServer

    with Memory(tmp_path / "store", embedder="fake") as backend:
        ids = [r.id for r in backend.add_dialogue(SAME_DAY, user_id="u", session_id="s")]
        live = LiveServer(backend, auth=False, rate_limit=None)
        try:
            with httpx.Client(base_url=live.url) as client:
                page = client.get("/v1/units", params={"limit": 8, "user_id": "u"}).raise_for_status().json()
        finally:
            live.stop()
    assert [u["id"] for u in page["units"]] == ids[:8] and page["total"] == len(SAME_DAY)
