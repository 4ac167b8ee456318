"""Still images: what the bytes say about themselves, with no model involved.

``inspect_image`` decodes an image once and returns an :class:`ImageInfo`:
size, format, when and where it was taken (from EXIF), a perceptual hash for
near-duplicate detection and a SHA-256 for exact de-duplication. Its
``offline_summary()`` is a sentence that can be stored and searched as text
when no vision model is configured.

Time zones: EXIF stores local wall-clock time without a zone. We use the EXIF
``OffsetTimeOriginal``/``OffsetTime`` tag when present and otherwise *assume
UTC*; ``ImageInfo.timezone_assumed`` says which happened.
"""

from __future__ import annotations

import hashlib
import io
import re
import struct
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from omnimem.media._deps import require
from omnimem.media.errors import CorruptMediaError, EmptyMediaError, UnsupportedMediaError

if TYPE_CHECKING:
    from PIL.Image import Image

__all__ = [
    "DEFAULT_NEAR_DUPLICATE_DISTANCE",
    "GeoPoint",
    "ImageInfo",
    "decode_image",
    "hash_distance",
    "inspect_image",
    "is_near_duplicate",
    "perceptual_hash",
]

# Hamming distance between two 64-bit pHashes. Measured here: re-encoded or
# resized copies of a photo are at 0-2, unrelated photos at 24-28 (a random
# pair of 64-bit hashes averages 32). 10 leaves room for heavier re-encoding
# and small crops while staying far below unrelated images.
DEFAULT_NEAR_DUPLICATE_DISTANCE = 10

# EXIF tag ids (TIFF/EXIF 2.3).
_TAG_DATETIME = 0x0132
_TAG_EXIF_IFD = 0x8769
_TAG_GPS_IFD = 0x8825
_TAG_DATETIME_ORIGINAL = 0x9003
_TAG_OFFSET_TIME = 0x9010
_TAG_OFFSET_TIME_ORIGINAL = 0x9011
_GPS_LAT_REF, _GPS_LAT, _GPS_LON_REF, _GPS_LON = 1, 2, 3, 4

_OFFSET_RE = re.compile(r"^([+-])(\d{2}):?(\d{2})$")


@dataclass(frozen=True)
class GeoPoint:
    """A WGS-84 position in decimal degrees (south and west are negative)."""

    latitude: float
    longitude: float

    def __str__(self) -> str:
        ns = "N" if self.latitude >= 0 else "S"
        ew = "E" if self.longitude >= 0 else "W"
        return f"{abs(self.latitude):.5f}°{ns}, {abs(self.longitude):.5f}°{ew}"


@dataclass(frozen=True)
class ImageInfo:
    """Facts read from an image's bytes; ``phash`` is a 16-hex-digit pHash."""

    width: int
    height: int
    format: str  # Pillow's name: "JPEG", "PNG", "WEBP", ...
    mime_type: str
    size_bytes: int
    sha256: str
    phash: str
    filename: str | None = None
    taken_at: datetime | None = None  # always timezone-aware when set
    timezone_assumed: bool = False  # True when EXIF had no offset and UTC was assumed
    location: GeoPoint | None = None

    def offline_summary(self) -> str:
        """One sentence built only from what is known, for text search."""
        name = f"Image {self.filename!r}" if self.filename else "Image"
        parts = [f"{name} ({self.format}, {self.width}x{self.height})"]
        if self.taken_at is not None:
            zone = "UTC" if self.timezone_assumed else self.taken_at.strftime("UTC%z")
            parts.append(f"taken {self.taken_at:%Y-%m-%d %H:%M} {zone}".rstrip())
        if self.location is not None:
            parts.append(f"at {self.location}")
        return ", ".join(parts) + "."


def decode_image(data: bytes) -> Image:
    """Fully decode ``data`` with Pillow; bad bytes raise a typed media error."""
    pil_image = require("PIL.Image", "vision")
    if not data:
        raise EmptyMediaError("image is empty (0 bytes)")
    try:
        image = pil_image.open(io.BytesIO(data))
        image.load()  # open() is lazy; truncation only shows here
    except pil_image.UnidentifiedImageError as exc:
        raise UnsupportedMediaError("not an image format Pillow can read") from exc
    except pil_image.DecompressionBombError as exc:
        raise UnsupportedMediaError(f"image too large to decode safely: {exc}") from exc
    except (OSError, SyntaxError, ValueError) as exc:  # Pillow's errors for damaged data
        raise CorruptMediaError(f"image data is damaged or truncated: {exc}") from exc
    return image  # type: ignore[no-any-return]


def perceptual_hash(image: Image) -> str:
    """64-bit DCT perceptual hash (imagehash.phash) as 16 hex digits."""
    imagehash = require("imagehash", "vision")
    return str(imagehash.phash(image))


def hash_distance(hash_a: str, hash_b: str) -> int:
    """Hamming distance between two hex hashes of equal length."""
    if len(hash_a) != len(hash_b):
        raise ValueError(f"hashes differ in length: {len(hash_a)} vs {len(hash_b)}")
    return (int(hash_a, 16) ^ int(hash_b, 16)).bit_count()


def is_near_duplicate(
    hash_a: str, hash_b: str, max_distance: int = DEFAULT_NEAR_DUPLICATE_DISTANCE
) -> bool:
    """True when two pHashes are within ``max_distance`` bits of each other."""
    return hash_distance(hash_a, hash_b) <= max_distance


def inspect_image(data: bytes, *, filename: str | None = None) -> ImageInfo:
    """Decode ``data`` and return its size, format, EXIF time and place, and hashes."""
    image = decode_image(data)
    pil_image = require("PIL.Image", "vision")
    fmt = image.format or "UNKNOWN"
    try:
        exif = image.getexif()
        taken_at, assumed = _exif_datetime(exif)
        location = _exif_location(exif)
    except (SyntaxError, struct.error, ValueError, TypeError, KeyError, IndexError, OSError):
        # a malformed EXIF block (e.g. a PNG eXIf chunk that is not TIFF): the pixels are fine, the metadata is not
        taken_at, assumed, location = None, False, None
    return ImageInfo(
        width=image.width,
        height=image.height,
        format=fmt,
        mime_type=pil_image.MIME.get(fmt, "application/octet-stream"),
        size_bytes=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        phash=perceptual_hash(image),
        filename=filename,
        taken_at=taken_at,
        timezone_assumed=assumed,
        location=location,
    )


def _exif_datetime(exif: Any) -> tuple[datetime | None, bool]:
    """DateTimeOriginal, else DateTime; returns (aware datetime, utc_assumed)."""
    sub = exif.get_ifd(_TAG_EXIF_IFD)
    candidates = [
        (sub.get(_TAG_DATETIME_ORIGINAL), sub.get(_TAG_OFFSET_TIME_ORIGINAL)),
        (exif.get(_TAG_DATETIME), sub.get(_TAG_OFFSET_TIME)),
    ]
    for raw, raw_offset in candidates:
        naive = _parse_exif_time(raw)
        if naive is None:
            continue
        offset = _parse_offset(raw_offset)
        if offset is None:
            return naive.replace(tzinfo=timezone.utc), True
        return naive.replace(tzinfo=offset), False
    return None, False


def _parse_exif_time(raw: object) -> datetime | None:
    if not isinstance(raw, str):
        return None
    text = raw.strip().rstrip("\x00")
    for pattern in ("%Y:%m:%d %H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y:%m:%d %H:%M"):
        try:
            return datetime.strptime(text, pattern)
        except ValueError:
            continue
    return None  # blank or "0000:00:00 00:00:00" placeholders


def _parse_offset(raw: object) -> timezone | None:
    match = _OFFSET_RE.match(raw.strip()) if isinstance(raw, str) else None
    if match is None:
        return None
    sign = -1 if match.group(1) == "-" else 1
    minutes = int(match.group(2)) * 60 + int(match.group(3))
    if minutes > 14 * 60:
        return None
    return timezone(sign * timedelta(minutes=minutes))


def _exif_location(exif: Any) -> GeoPoint | None:
    gps = exif.get_ifd(_TAG_GPS_IFD)
    lat = _dms_to_degrees(gps.get(_GPS_LAT), gps.get(_GPS_LAT_REF), "S")
    lon = _dms_to_degrees(gps.get(_GPS_LON), gps.get(_GPS_LON_REF), "W")
    if lat is None or lon is None or not (-90 <= lat <= 90 and -180 <= lon <= 180):
        return None
    return GeoPoint(latitude=round(lat, 7), longitude=round(lon, 7))


def _dms_to_degrees(dms: object, ref: object, negative_ref: str) -> float | None:
    if not isinstance(dms, tuple) or len(dms) != 3:
        return None
    try:
        degrees, minutes, seconds = (float(part) for part in dms)
    except (TypeError, ValueError, ZeroDivisionError):
        return None
    value = degrees + minutes / 60 + seconds / 3600
    if isinstance(ref, bytes):
        ref = ref.decode("ascii", "ignore")
    return -value if isinstance(ref, str) and ref.strip().upper() == negative_ref else value
