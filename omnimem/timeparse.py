"""Turn the time strings people and data sets use into aware datetimes.

The relative times read in a query (:func:`query_window`: "yesterday", "last week", "in May", ...) are
English expressions only, whatever the store's ``language`` setting: a query in another language gets no
time window (its search is otherwise unchanged).
"""

from __future__ import annotations

import re
from datetime import MAXYEAR, MINYEAR, date, datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from omnimem.errors import ConfigError, InvalidTimeError

# Formats beyond ISO 8601, tried in order. LoCoMo writes "1:56 pm on 8 May, 2023".
_FORMATS = (
    "%I:%M %p on %d %B, %Y",
    "%I:%M %p on %d %b, %Y",
    "%I:%M%p on %d %B, %Y",
    "%d %B %Y",
    "%d %B, %Y",
    "%B %d, %Y",
    "%d %b %Y",
    "%b %d, %Y",
    "%Y/%m/%d %H:%M",
    "%Y/%m/%d",
)


def parse_time(value: str | datetime | date | None, *, default_tz: tzinfo = timezone.utc) -> datetime | None:
    """Parse ``value`` into a timezone-aware datetime.

    Naive inputs are taken to be in ``default_tz``. ``None`` stays ``None``
    (the event time is unknown). Anything else that does not parse raises
    :class:`InvalidTimeError` rather than guessing.
    """
    if value is None:
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=default_tz)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=default_tz)
    if not isinstance(value, str):
        raise InvalidTimeError(f"time must be a string or datetime, got {type(value).__name__}")
    text = re.sub(r"\s+", " ", value.strip())
    if not text:
        raise InvalidTimeError("time is an empty string")
    iso = text[:-1] + "+00:00" if text.endswith("Z") else text
    try:
        parsed = datetime.fromisoformat(iso)
    except ValueError:
        parsed = None
    if parsed is None:
        for fmt in _FORMATS:
            try:
                parsed = datetime.strptime(text, fmt)
                break
            except ValueError:
                continue
    if parsed is None:
        raise InvalidTimeError(f"cannot parse time {value!r}; use ISO 8601, e.g. 2023-05-08T13:56")
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=default_tz)


def format_time(value: datetime | None) -> str:
    """Short human form used in rendered context: ``2023-05-08 13:56``."""
    if value is None:
        return "unknown time"
    return value.strftime("%Y-%m-%d %H:%M")


def zone(name: str) -> tzinfo:
    """The time zone called ``name`` ("UTC" or an IANA name); a ConfigError if there is none."""
    if name.upper() == "UTC":
        return timezone.utc
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(f"unknown timezone {name!r}") from None


# --- relative times in a query --------------------------------------------------------------------

_MONTHS = {m: i for i, m in enumerate(("january", "february", "march", "april", "may", "june", "july", "august",
                                       "september", "october", "november", "december"), start=1)}
_MONTHS.update({m[:3]: i for m, i in list(_MONTHS.items()) if m != "may"})
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "a few": 3}
_UNIT = r"(day|weekend|week|month|year)s?"
_AGO = re.compile(r"\b(\d{1,3}|" + "|".join(sorted((re.escape(n) for n in _NUMBERS), key=len, reverse=True))
                  + r")\s+" + _UNIT + r"\s+ago\b")
_LAST = re.compile(r"\b(last|past|previous|this)\s+" + _UNIT + r"\b")
_DAY = re.compile(r"\b(yesterday|today)\b")
_IN_MONTH = re.compile(r"\b(?:in|during|of|since)\s+(" + "|".join(sorted(_MONTHS, key=len, reverse=True))
                       + r")\b(?:\s+(\d{4}))?")
_IN_YEAR = re.compile(r"\b(?:in|during)\s+(\d{4})\b")
_DAYS = {"day": 1, "week": 7, "weekend": 7, "month": 30, "year": 365}


def query_window(query: str, now: datetime) -> tuple[datetime, datetime] | None:
    """The time window a relative time in ``query`` names, read against ``now`` (start inclusive, end exclusive).

    "yesterday", "last week" (the 7 days before ``now``; "this week" the same),
    "two months ago" (the window around that point, as wide as the distance: one
    to three months back), "in March" (the latest March
    that began before ``now``), "in March 2023", "in 2023". None when the query
    names no time. The first expression found wins.

    A window is clamped to the calendar (``datetime.min`` to ``datetime.max``
    in ``now``'s zone): the part before year 1 or after 9999 is dropped, and a
    window wholly outside is empty (start == end), so no time matches it.
    """
    text = query.casefold()
    day = timedelta(days=1)
    zone_ = now.tzinfo
    if (m := _DAY.search(text)) is not None:
        today = now.replace(hour=0, minute=0, second=0, microsecond=0)
        if m.group(1) == "yesterday":
            return _shifted(today, -day), today
        return today, _shifted(today, day)
    if (m := _AGO.search(text)) is not None:
        count = int(m.group(1)) if m.group(1).isdigit() else _NUMBERS[m.group(1)]
        span = _DAYS[m.group(2)] * day
        back, half = count * span, span * max(1, count) / 2  # "two months ago": one to three months back
        return _shifted(now, -(back + half)), _shifted(now, half - back)
    if (m := _LAST.search(text)) is not None:
        return _shifted(now, -_DAYS[m.group(2)] * day), now
    if (m := _IN_MONTH.search(text)) is not None:
        month = _MONTHS[m.group(1)]
        year = int(m.group(2)) if m.group(2) else (now.year if month <= now.month else now.year - 1)
        return _month_start(year, month, zone_), _month_start(year + month // 12, month % 12 + 1, zone_)
    if (m := _IN_YEAR.search(text)) is not None:
        year = int(m.group(1))
        return _month_start(year, 1, zone_), _month_start(year + 1, 1, zone_)
    return None


def _shifted(when: datetime, by: timedelta) -> datetime:
    """``when + by``, clamped to the calendar's first or last instant (in ``when``'s zone)."""
    try:
        return when + by
    except OverflowError:
        return (datetime.max if by > timedelta(0) else datetime.min).replace(tzinfo=when.tzinfo)


def _month_start(year: int, month: int, tz: tzinfo | None) -> datetime:
    """The first instant of ``month`` of ``year``; before year 1 the calendar's first instant, after 9999 its last."""
    if year < MINYEAR:
        return datetime.min.replace(tzinfo=tz)
    if year > MAXYEAR:
        return datetime.max.replace(tzinfo=tz)
    return datetime(year, month, 1, tzinfo=tz)
