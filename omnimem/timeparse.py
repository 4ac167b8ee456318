"""Turn the time strings people and data sets use into aware datetimes."""

from __future__ import annotations

import re
from datetime import date, datetime, timezone, tzinfo
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
