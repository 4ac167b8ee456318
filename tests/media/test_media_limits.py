"""One pixel limit and one duration limit for every media path, checked from headers before decoding."""

from __future__ import annotations

import io
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import generate as gen
from omnimem import InvalidInputError, InvalidTimeError, Memory
from omnimem.media.errors import MediaTooLargeError


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def declared_png(width: int, height: int) -> bytes:
    """A few hundred bytes that declare a ``width`` x ``height`` picture (only 4 rows of data follow)."""
    rows = zlib.compress(b"\x00" * (1 + width * 3) * 4)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", rows) + _chunk(b"IEND", b"")


def small_png(size: tuple[int, int] = (64, 48)) -> bytes:
    buffer = io.BytesIO()
    gen.photo(1, size).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.mark.parametrize("side", [13_300, 16_000])
def test_add_image_refuses_a_declared_size_over_the_limit(side: int) -> None:
    with Memory(embedder="fake") as m:
        with pytest.raises(MediaTooLargeError, match="pixels"):
            m.add_image(declared_png(side, side))
        assert m.stats()["units"] == 0


def test_add_video_refuses_an_image_declaring_16000x16000_before_decoding() -> None:
    with Memory(embedder="fake") as m:
        with pytest.raises(MediaTooLargeError):
            m.add_video(declared_png(16_000, 16_000))
        assert m.stats()["units"] == 0


def test_the_pixel_limit_is_one_setting_for_images_and_video_frames(silent_video: Path) -> None:
    with Memory(embedder="fake", max_media_pixels=160 * 120 - 1) as m:  # the video's frames are 160x120
        with pytest.raises(MediaTooLargeError, match="max_media_pixels"):
            m.add_image(small_png((160, 120)))
        with pytest.raises(MediaTooLargeError, match="max_media_pixels"):
            m.add_video(silent_video)
        assert m.add_image(small_png((100, 100))).accepted
    with Memory(embedder="fake", max_media_pixels=160 * 120) as m:
        assert m.add_video(silent_video).event_id is not None


def test_the_duration_limit_covers_video_and_audio(silent_video: Path, tmp_path: Path) -> None:
    wav = tmp_path / "quiet.wav"
    gen.sf.write(wav, np.zeros(3 * gen.RATE, dtype=np.float32), gen.RATE)
    with Memory(embedder="fake", max_media_seconds=2.0) as m:  # the video lasts 9 s, the recording 3 s
        with pytest.raises(MediaTooLargeError, match="max_media_seconds"):
            m.add_video(silent_video)
        with pytest.raises(MediaTooLargeError, match="max_media_seconds"):
            m.add_audio(wav)
        assert m.stats()["units"] == 0


def test_media_times_near_the_year_9999_are_a_typed_error(silent_video: Path) -> None:
    with Memory(embedder="fake") as m:
        with pytest.raises(InvalidTimeError):
            m.add_video(silent_video, time="9999-12-31T23:59:58+00:00")  # later frames would be past 9999


@pytest.mark.parametrize("fps", [float("nan"), float("inf"), -1.0, 0.0, "1"])
def test_video_fps_must_be_a_finite_positive_number(silent_video: Path, fps: object) -> None:
    with Memory(embedder="fake") as m:
        with pytest.raises(InvalidInputError):
            m.add_video(silent_video, fps=fps)  # type: ignore[arg-type]


def test_png_with_a_malformed_exif_chunk_is_stored_without_its_exif() -> None:
    png = small_png()
    broken = png[:33] + _chunk(b"eXIf", b"garbage, not TIFF") + png[33:]  # right after IHDR
    with Memory(embedder="fake") as m:
        result = m.add_image(broken, caption="a broken exif block")
        assert result.accepted and m.get(str(result.id)).metadata["width"] == 64


def test_caption_with_lone_surrogates_is_refused() -> None:
    with Memory(embedder="fake") as m:
        with pytest.raises(InvalidInputError):
            m.add_image(small_png(), caption="bad \ud800 caption")
        with pytest.raises(InvalidInputError):
            m.add_image(small_png(), caption=42)  # type: ignore[arg-type]
        assert Image.open(io.BytesIO(small_png())).size == (64, 48)
