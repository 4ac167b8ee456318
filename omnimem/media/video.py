"""Video: a few frames that show what changed, and the audio track's speech.

``process_video`` decodes the video stream with PyAV frame by frame (never the
whole file), samples it at ``fps`` frames per second, and keeps a sampled
frame only when the scene-change detector says it differs from the last kept
one (see ``omnimem.media.scene``). The audio track, if any, goes through
``process_audio`` in a second streaming pass. Memory holds the kept frames
(encoded, downscaled to ``max_side``) plus one decoded frame at a time.
"""

from __future__ import annotations

import io
import math
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from omnimem.media._deps import require
from omnimem.media.audio import AudioResult, VadSettings, process_audio
from omnimem.media.audio_io import MediaSource, open_container
from omnimem.media.errors import CorruptMediaError, EmptyMediaError, UnsupportedMediaError
from omnimem.media.image import perceptual_hash
from omnimem.media.limits import check_pixels, check_seconds, check_video_stream, ffmpeg_pixels, too_many_pixels
from omnimem.media.scene import (
    EmbeddingChangeDetector,
    PixelChangeDetector,
    SceneChangeDetector,
)

if TYPE_CHECKING:
    from PIL.Image import Image

__all__ = [
    "EmbeddingChangeDetector",
    "PixelChangeDetector",
    "SceneChangeDetector",
    "VideoFrame",
    "VideoResult",
    "process_video",
]

ImageFormat = Literal["jpeg", "png"]
_MIME = {"jpeg": "image/jpeg", "png": "image/png"}


@dataclass(frozen=True)
class VideoFrame:
    """A kept frame: when it appears, its encoded image and its pHash."""

    timestamp_s: float  # from the first video frame
    data: bytes  # encoded as mime_type
    mime_type: str
    width: int
    height: int
    phash: str


@dataclass(frozen=True)
class VideoResult:
    """Kept frames, how many were looked at, and the audio track's speech."""

    frames: tuple[VideoFrame, ...]
    frames_sampled: int
    duration_s: float
    truncated: bool  # True when max_frames was reached and decoding stopped early
    audio: AudioResult | None  # None when there is no audio track (or with_audio=False)

    @property
    def frames_kept(self) -> int:
        return len(self.frames)


def process_video(
    source: MediaSource,
    *,
    fps: float = 1.0,
    max_frames: int = 200,
    detector: SceneChangeDetector | None = None,
    image_format: ImageFormat = "jpeg",
    max_side: int | None = 1024,
    with_audio: bool = True,
    with_transcripts: bool = True,
    vad: VadSettings = VadSettings(),
    model_path: str | os.PathLike[str] | None = None,
    keep_audio: bool = False,
    max_pixels: int | None = None,
    max_seconds: float | None = None,
) -> VideoResult:
    """Sample ``source`` (path or bytes) at ``fps``, keep scene changes, transcribe its audio.

    ``detector`` defaults to a fresh PixelChangeDetector; a given detector is
    ``reset()`` first. Raises UnsupportedMediaError when there is no video
    stream, CorruptMediaError when decoding fails, EmptyMediaError when the
    stream has no frames.
    """
    if fps <= 0 or max_frames < 1:
        raise ValueError("fps must be positive and max_frames at least 1")
    if image_format not in _MIME:
        raise ValueError(f"image_format must be one of {sorted(_MIME)}")
    detector = detector if detector is not None else PixelChangeDetector()
    detector.reset()
    frames, sampled, duration, truncated, has_audio = _keyframes(
        source, fps, max_frames, detector, image_format, max_side, (max_pixels, max_seconds)
    )
    audio = None
    if with_audio and has_audio:
        try:
            audio = process_audio(
                source,
                with_transcripts=with_transcripts,
                vad=vad,
                model_path=model_path,
                decoder="pyav",
                keep_audio=keep_audio,
            )
        except EmptyMediaError:  # an audio stream with no samples: same as none
            audio = None
    return VideoResult(
        frames=tuple(frames),
        frames_sampled=sampled,
        duration_s=duration,
        truncated=truncated,
        audio=audio,
    )


def _keyframes(
    source: MediaSource,
    fps: float,
    max_frames: int,
    detector: SceneChangeDetector,
    image_format: ImageFormat,
    max_side: int | None,
    limits: tuple[int | None, float | None] = (None, None),
) -> tuple[list[VideoFrame], int, float, bool, bool]:
    av = require("av", "audio")
    interval = 1.0 / fps
    kept: list[VideoFrame] = []
    sampled, truncated = 0, False
    first_t: float | None = None
    last_t = 0.0
    next_t = 0.0
    with open_container(source, max_pixels=ffmpeg_pixels(limits[0]) if limits[0] else None) as container:
        if not container.streams.video:
            raise UnsupportedMediaError("the file has no video stream")
        has_audio = len(container.streams.audio) > 0
        stream = container.streams.video[0]
        unknown_size = check_video_stream(container, stream, *limits)  # before decoding; FFmpeg enforces it too
        stream.thread_type = "AUTO"
        rate = float(stream.average_rate or 25)
        try:
            for index, frame in enumerate(container.decode(stream)):
                t = float(frame.time) if frame.time is not None else index / rate
                first_t = t if first_t is None else first_t
                last_t = t - first_t
                check_pixels(frame.width, frame.height, limits[0], "a video frame")  # headers can lie
                check_seconds(last_t, limits[1], "the video")
                if last_t + 1e-6 < next_t:
                    continue
                next_t = (math.floor(last_t / interval + 1e-6) + 1) * interval
                sampled += 1
                image = frame.to_image()
                if detector.is_new_scene(image):
                    kept.append(_encode_frame(image, round(last_t, 3), image_format, max_side))
                    if len(kept) >= max_frames:
                        truncated = True
                        break
        except av.FFmpegError as exc:
            if unknown_size:  # the probe refused a frame over the limit, so FFmpeg does not know the size
                raise too_many_pixels(limits[0]) from exc
            raise CorruptMediaError(f"video stream is damaged: {exc}") from exc
        duration = _duration(container, last_t)
    if sampled == 0:
        raise EmptyMediaError("the video stream has no frames")
    return kept, sampled, duration, truncated, has_audio


def _duration(container: Any, last_t: float) -> float:
    if container.duration:
        return round(float(container.duration) / 1_000_000, 3)  # AV_TIME_BASE units
    return round(last_t, 3)


def _encode_frame(
    image: Image, timestamp_s: float, image_format: ImageFormat, max_side: int | None
) -> VideoFrame:
    phash = perceptual_hash(image)
    if max_side is not None and max(image.size) > max_side:
        image = image.copy()
        image.thumbnail((max_side, max_side))
    buffer = io.BytesIO()
    if image_format == "jpeg":
        image.convert("RGB").save(buffer, format="JPEG", quality=85)
    else:
        image.save(buffer, format="PNG", optimize=False)
    return VideoFrame(
        timestamp_s=timestamp_s,
        data=buffer.getvalue(),
        mime_type=_MIME[image_format],
        width=image.width,
        height=image.height,
        phash=phash,
    )
