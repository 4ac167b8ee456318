from datetime import date, datetime, timedelta, timezone

import pytest

from omnimem.errors import InvalidTimeError
from omnimem.timeparse import parse_time, query_window


def test_locomo_session_format():
    assert parse_time("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)


def test_iso_with_and_without_offset():
    assert parse_time("2023-05-08T13:56") == datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
    aware = parse_time("2023-05-08T13:56:00+02:00")
    assert aware is not None and aware.utcoffset() == timedelta(hours=2)
    assert parse_time("2023-05-08T13:56:00Z") == datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)


def test_dates_and_datetimes_pass_through_as_aware():
    assert parse_time(date(2024, 1, 2)) == datetime(2024, 1, 2, tzinfo=timezone.utc)
    assert parse_time(datetime(2024, 1, 2, 3, 4)).tzinfo is timezone.utc
    assert parse_time(None) is None


@pytest.mark.parametrize("bad", ["yesterday-ish", "", "32 Foo 2023", 12345])
def test_unparseable_times_are_typed_errors(bad):
    with pytest.raises(InvalidTimeError):
        parse_time(bad)


# --- relative windows near the edges of the calendar ----------------------------------------------

FIRST = datetime.min.replace(tzinfo=timezone.utc)
LAST = datetime.max.replace(tzinfo=timezone.utc)


@pytest.mark.parametrize("query", ["last week", "yesterday", "two months ago", "999 years ago", "in March",
                                   "in 0000", "the past year", "3 days ago"])
def test_a_window_before_year_1_is_empty_at_the_first_instant(query: str) -> None:
    assert query_window(query, FIRST) == (FIRST, FIRST)


@pytest.mark.parametrize(("query", "window"), [
    ("today", (datetime(9999, 12, 31, tzinfo=timezone.utc), LAST)),
    ("in 9999", (datetime(9999, 1, 1, tzinfo=timezone.utc), LAST)),
    ("in December 9999", (datetime(9999, 12, 1, tzinfo=timezone.utc), LAST)),
    ("a week ago", (LAST - timedelta(days=10.5), LAST - timedelta(days=3.5))),
])
def test_a_window_past_9999_ends_at_the_last_instant(query: str, window: tuple[datetime, datetime]) -> None:
    assert query_window(query, LAST) == window


def test_a_window_partly_before_year_1_keeps_the_part_inside() -> None:
    now = datetime(1, 1, 4, tzinfo=timezone.utc)
    assert query_window("last week", now) == (FIRST, now)
    assert query_window("today", FIRST) == (FIRST, datetime(1, 1, 2, tzinfo=timezone.utc))


def test_windows_away_from_the_edges_are_unchanged() -> None:
    now = datetime(2024, 3, 10, 15, 30, tzinfo=timezone.utc)
    assert query_window("last week", now) == (now - timedelta(days=7), now)
    assert query_window("yesterday", now) == (datetime(2024, 3, 9, tzinfo=timezone.utc),
                                              datetime(2024, 3, 10, tzinfo=timezone.utc))
    assert query_window("two months ago", now) == (now - timedelta(days=90), now - timedelta(days=30))
    assert query_window("in December", now) == (datetime(2023, 12, 1, tzinfo=timezone.utc),
                                                datetime(2024, 1, 1, tzinfo=timezone.utc))
    assert query_window("what did we eat", now) is None
