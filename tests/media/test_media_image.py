"""Images: metadata, EXIF time and place, perceptual hashes, bad bytes, CLIP."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

import generate as gen
from omnimem.errors import InvalidInputError, MissingDependencyError
from omnimem.media import (
    CLIPImageEmbedder,
    CorruptMediaError,
    EmptyMediaError,
    UnsupportedMediaError,
    hash_distance,
    inspect_image,
    is_near_duplicate,
)
from omnimem.media.image import DEFAULT_NEAR_DUPLICATE_DISTANCE


@pytest.fixture(scope="module")
def original() -> bytes:
    return gen.encode(gen.photo(1), "JPEG", quality=92)


@pytest.mark.parametrize(("fmt", "mime"), [("PNG", "image/png"), ("JPEG", "image/jpeg")])
def test_basic_facts(fmt: str, mime: str) -> None:
    data = gen.encode(gen.photo(3, size=(200, 150)), fmt)
    info = inspect_image(data, filename=f"pic.{fmt.lower()}")
    assert (info.width, info.height, info.format, info.mime_type) == (200, 150, fmt, mime)
    assert info.size_bytes == len(data)
    assert len(info.phash) == 16 and len(info.sha256) == 64
    assert info.taken_at is None and info.location is None
    assert info.offline_summary() == f"Image 'pic.{fmt.lower()}' ({fmt}, 200x150)."


def test_exif_time_and_gps() -> None:
    data = gen.jpeg_with_exif(
        gen.photo(2),
        taken="2021:06:05 14:30:15",
        lat=(48.0, 51.0, 30.24), lat_ref="N",
        lon=(2.0, 17.0, 40.2), lon_ref="E",
    )
    info = inspect_image(data, filename="eiffel.jpg")
    assert info.taken_at == datetime(2021, 6, 5, 14, 30, 15, tzinfo=timezone.utc)
    assert info.timezone_assumed is True  # no OffsetTimeOriginal: UTC assumed
    assert info.location is not None
    assert info.location.latitude == pytest.approx(48.8584, abs=1e-4)
    assert info.location.longitude == pytest.approx(2.2945, abs=1e-4)
    summary = info.offline_summary()
    assert "eiffel.jpg" in summary and "2021-06-05 14:30 UTC" in summary
    assert "48.85840°N, 2.29450°E" in summary


def test_exif_offset_and_southern_western_hemisphere() -> None:
    data = gen.jpeg_with_exif(
        gen.photo(2),
        taken="2019:12:31 23:59:00",
        offset="-03:00",
        lat=(22.0, 54.0, 0.0), lat_ref="S",
        lon=(43.0, 12.0, 0.0), lon_ref="W",
    )
    info = inspect_image(data)
    assert info.taken_at == datetime(2019, 12, 31, 23, 59, tzinfo=timezone(timedelta(hours=-3)))
    assert info.timezone_assumed is False
    assert info.location is not None
    assert (info.location.latitude, info.location.longitude) == pytest.approx((-22.9, -43.2))
    assert "UTC-0300" in info.offline_summary()


def test_placeholder_exif_date_is_ignored() -> None:
    info = inspect_image(gen.jpeg_with_exif(gen.photo(2), taken="0000:00:00 00:00:00"))
    assert info.taken_at is None


def test_near_duplicate_and_different(original: bytes) -> None:
    copy = inspect_image(gen.near_duplicate(original))
    first = inspect_image(original)
    other = inspect_image(gen.encode(gen.photo(99), "JPEG"))
    assert first.sha256 != copy.sha256  # not byte-identical ...
    assert hash_distance(first.phash, copy.phash) <= 4  # ... but perceptually the same
    assert is_near_duplicate(first.phash, copy.phash)
    assert hash_distance(first.phash, other.phash) > 2 * DEFAULT_NEAR_DUPLICATE_DISTANCE
    assert not is_near_duplicate(first.phash, other.phash)
    assert is_near_duplicate(first.phash, other.phash, max_distance=64)


def test_hash_distance_needs_equal_lengths() -> None:
    with pytest.raises(ValueError):
        hash_distance("ff", "fff")


@pytest.mark.parametrize(
    ("make", "error"),
    [
        (lambda jpeg: jpeg[: len(jpeg) // 2], CorruptMediaError),  # truncated JPEG
        (lambda jpeg: b"this is not an image at all", UnsupportedMediaError),
        (lambda jpeg: b"", EmptyMediaError),
    ],
    ids=["truncated", "garbage", "empty"],
)
def test_bad_bytes_raise_typed_errors(original: bytes, make, error) -> None:
    with pytest.raises(error) as caught:
        inspect_image(make(original))
    assert isinstance(caught.value, InvalidInputError)
    assert caught.value.status in (400, 415)


def test_missing_pillow_names_the_extra(monkeypatch: pytest.MonkeyPatch, original: bytes) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "PIL.Image", None)  # makes the import fail
    with pytest.raises(MissingDependencyError, match=r"omnimem\[vision\]"):
        inspect_image(original)


def test_clip_embeds_images_and_texts_into_one_space(tiny_clip: Path, original: bytes) -> None:
    embedder = CLIPImageEmbedder(tiny_clip)
    assert embedder.dim == 16 and embedder.name.startswith("clip:")
    images = embedder.embed_images([original, gen.photo(5)])
    texts = embedder.embed(["the dog", "a cat", "the dog"])
    assert images.shape == (2, 16) and texts.shape == (3, 16)
    assert images.dtype == np.float32 and texts.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(images, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(texts, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(texts[0], texts[2], atol=1e-6)  # deterministic
    assert not np.allclose(texts[0], texts[1])
    assert (images @ texts.T).shape == (2, 3)  # same space: comparable
    assert embedder.embed_images([]).shape == (0, 16)


def test_clip_refuses_a_folder_without_a_checkpoint(tmp_path: Path) -> None:
    from omnimem.errors import ConfigError

    with pytest.raises(ConfigError, match="config.json"):
        CLIPImageEmbedder(tmp_path)
