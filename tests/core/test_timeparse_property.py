"""The time parser over its whole input space: any query against any ``now`` from year 1 to 9999, in any zone.

``query_window`` never raises and gives a window inside the calendar, start
<= end, in ``now``'s zone; ``parse_time`` gives an aware datetime or an
:class:`InvalidTimeError`, nothing else; a search with any of them answers.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone, tzinfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omnimem import Memory
from omnimem.errors import InvalidTimeError
from omnimem.timeparse import parse_time, query_window

PHRASES = ("last week", "this month", "the past year", "previous weekend", "yesterday", "today", "a day ago",
           "two months ago", "a couple of weeks ago", "a few years ago", "999 years ago", "12 days ago",
           "in March", "during may", "since December", "in jan 0001", "in December 9999", "in 0000", "in 9999",
           "in 2023", "of feb 2024")

zones: st.SearchStrategy[tzinfo | None] = st.one_of(
    st.none(), st.timezones(),
    st.integers(-23 * 60 - 59, 23 * 60 + 59).map(lambda minutes: timezone(timedelta(minutes=minutes))))
edges = st.sampled_from([datetime.min, datetime.max, datetime(1, 1, 1, 23, 59), datetime(9999, 12, 31, 0, 1),
                         datetime(1, 2, 28), datetime(9999, 11, 30)])
nows = st.one_of(st.datetimes(timezones=zones), st.builds(lambda d, z: d.replace(tzinfo=z), edges, zones))
queries = st.one_of(st.sampled_from(PHRASES),
                    st.tuples(st.text(max_size=20), st.sampled_from(PHRASES), st.text(max_size=20)).map(" ".join),
                    st.text(max_size=40))


@settings(max_examples=3000, deadline=None, derandomize=True, database=None)
@given(queries, nows)
def test_a_window_is_always_inside_the_calendar_and_in_order(query: str, now: datetime) -> None:
    window = query_window(query, now)
    if window is None:
        return
    start, end = window
    assert start.tzinfo is now.tzinfo and end.tzinfo is now.tzinfo
    assert start <= end
    naive = [start.replace(tzinfo=None), end.replace(tzinfo=None)]
    assert all(datetime.min <= t <= datetime.max for t in naive)


@settings(max_examples=1500, deadline=None, derandomize=True, database=None)
@given(st.one_of(st.text(max_size=40), nows.map(datetime.isoformat), nows.map(lambda d: d.isoformat(" ")),
                 st.sampled_from(["0001-01-01", "9999-12-31T23:59:59.999999-23:59", "0001-01-01T00:00+14:00",
                                  "0000-01-01", "10000-01-01", "1:56 pm on 8 May, 0001"])),
       zones.map(lambda z: z or timezone.utc))
def test_parse_time_gives_an_aware_datetime_or_the_typed_error(value: str, default_tz: tzinfo) -> None:
    try:
        parsed = parse_time(value, default_tz=default_tz)
    except InvalidTimeError:
        return
    assert parsed is not None and parsed.tzinfo is not None


@pytest.fixture(scope="module")
def memory() -> Iterator[Memory]:
    with Memory(embedder="fake") as mem:
        mem.add("We hiked the ridge trail last week", user_id="u", time="2024-03-04T10:00:00Z")
        mem.add("The first note of the calendar", user_id="u", time="0001-01-01T00:00:00Z")
        mem.add("The last note of the calendar", user_id="u", time="9999-12-31T12:00:00Z")
        yield mem


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(st.sampled_from(PHRASES), nows.map(datetime.isoformat))
def test_a_search_answers_for_any_now(memory: Memory, query: str, now: str) -> None:
    found = memory.search(query, user_id="u", now=now)
    assert len(found.hits) >= 1


EDGE_NOWS = ["0001-01-01", "0001-01-01T00:00:00+14:00", "0001-01-03T05:00:00-05:00", "9999-12-31",
             "9999-12-31T23:59:59.999999-12:00", "9999-12-31T23:59:59+05:30"]


def test_every_engine_answers_a_relative_time_read_at_the_edges_of_the_calendar(mem: Memory) -> None:
    """Memory(), a store folder, PostgreSQL and a live server (where this was a 500): clamped windows, no error."""
    mem.add("We hiked the ridge trail last week", user_id="u", time="2024-03-04T10:00:00Z")
    first = mem.add("The first note of the calendar", user_id="u", time="0001-01-01T12:00:00Z").id
    mem.add("The last note of the calendar", user_id="u", time="9999-12-31T00:00:00Z")
    for query in PHRASES:
        for now in EDGE_NOWS:
            assert mem.search(query, user_id="u", now=now).hits, (query, now)
    assert mem.search("the note of today", user_id="u", now="0001-01-01T18:00:00Z").hits[0].unit.id == first
