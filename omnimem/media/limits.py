"""Size limits of media, read from headers before anything is decoded.

One pixel limit (per image or video frame) and one duration limit (per
audio or video input), from the settings ``max_media_pixels`` and
``max_media_seconds``. A small file can declare an enormous picture (a
249 KB PNG declaring 16000x16000 pixels decodes to 768 MB), so the check
reads the declared size, not the file size.
"""

from __future__ import annotations

import io
from typing import Any

from omnimem.media._deps import require
from omnimem.media.audio_io import MediaSource, open_binary
from omnimem.media.errors import MediaTooLargeError


def check_pixels(width: int, height: int, limit: int | None, what: str = "image") -> None:
    if limit is not None and width * height > limit:
        raise MediaTooLargeError(f"{what} is {width}x{height} pixels ({width * height:,}); the limit is {limit:,} "
                                 "(setting max_media_pixels)")


def check_seconds(seconds: float | None, limit: float | None, what: str = "media") -> None:
    if limit is not None and seconds is not None and seconds > limit:
        raise MediaTooLargeError(f"{what} lasts {seconds:.0f} s; the limit is {limit:.0f} s (setting max_media_seconds)")


def check_image(data: MediaSource, max_pixels: int | None) -> None:
    """The image's declared size against the limit; unreadable headers are left to the decoder's errors."""
    pil_image = require("PIL.Image", "vision")
    try:
        with pil_image.open(io.BytesIO(data) if isinstance(data, bytes) else data) as image:  # the header only
            width, height = image.size
    except pil_image.DecompressionBombError as exc:  # Pillow's own (higher) limit, also from the header
        raise MediaTooLargeError(f"image declares more pixels than Pillow decodes safely ({exc}); the limit is "
                                 f"{max_pixels} (setting max_media_pixels)") from None
    except Exception:  # noqa: BLE001 - not an image Pillow can open: decode_image raises the typed error
        return
    check_pixels(width, height, max_pixels)


def check_video_stream(container: Any, stream: Any, max_pixels: int | None, max_seconds: float | None) -> bool:
    """A video stream's declared frame size and the container's declared duration.

    Returns whether the frame size is unknown because FFmpeg's probe already
    refused a frame over ``max_pixels`` (then a decoding error means "too large").
    """
    context = stream.codec_context
    if max_pixels is not None:
        context.options = {**context.options, "max_pixels": str(ffmpeg_pixels(max_pixels))}
    width, height = int(context.width or 0), int(context.height or 0)
    check_pixels(width, height, max_pixels, "a video frame")
    check_seconds(float(container.duration) / 1_000_000 if container.duration else None, max_seconds, "the video")
    return max_pixels is not None and not (width and height)


def ffmpeg_pixels(max_pixels: int) -> int:
    """FFmpeg's own guard: looser than ours, since it counts padded (coded) sizes; ours is exact."""
    return 2 * max_pixels + 65_536


def too_many_pixels(max_pixels: int | None) -> MediaTooLargeError:
    return MediaTooLargeError(f"a video frame is larger than {max_pixels:,} pixels (setting max_media_pixels)")


def audio_seconds(source: MediaSource) -> float | None:
    """The declared duration of an audio input, if its header says."""
    sf = require("soundfile", "audio")
    try:
        return float(sf.info(open_binary(source)).duration)
    except (RuntimeError, TypeError, ValueError):  # not a libsndfile format: ask FFmpeg
        pass
    av = require("av", "audio")
    try:
        with av.open(open_binary(source), mode="r") as container:
            return float(container.duration) / 1_000_000 if container.duration else None
    except (av.FFmpegError, OSError, ValueError):
        return None  # the decoder reports what is wrong with it
