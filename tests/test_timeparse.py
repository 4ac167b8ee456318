from datetime import date, datetime, timedelta, timezone

import pytest

from omnimem.errors import InvalidTimeError
from omnimem.timeparse import parse_time


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
