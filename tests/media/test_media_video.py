"""Video: scene-change keyframes and the audio track, on a generated MP4."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import generate as gen
from omnimem.errors import InvalidInputError
from omnimem.media import (
    CorruptMediaError,
    EmbeddingChangeDetector,
    PixelChangeDetector,
    UnsupportedMediaError,
    VideoResult,
    process_video,
)
from omnimem.media.image import hash_distance


@pytest.fixture(scope="module")
def video_result(speech_video: Path) -> VideoResult:
    return process_video(speech_video)


def test_one_frame_per_scene(video_result: VideoResult) -> None:
    """9 s at 1 fps: 9 samples; the cuts at 3 s and 6 s are kept, repeats dropped."""
    assert video_result.frames_sampled == 9
    assert [f.timestamp_s for f in video_result.frames] == [0.0, 3.0, 6.0]
    assert video_result.frames_kept == 3 and not video_result.truncated
    assert video_result.duration_s == pytest.approx(9.0, abs=0.2)


def test_kept_frames_are_the_scenes(video_result: VideoResult) -> None:
    means = []
    for frame in video_result.frames:
        image = Image.open(io.BytesIO(frame.data))
        assert image.format == "JPEG" and frame.mime_type == "image/jpeg"
        assert (frame.width, frame.height) == image.size == (160, 120)
        means.append(np.asarray(image.convert("RGB"), dtype=float).mean(axis=(0, 1)))
    red, blue, green = means
    assert np.argmax(red) == 0 and np.argmax(blue) == 2 and np.argmax(green) == 1
    assert len({f.phash for f in video_result.frames}) >= 2  # flat red vs textured scenes


def test_audio_track_is_transcribed(video_result: VideoResult) -> None:
    assert video_result.audio is not None
    assert len(video_result.audio.segments) == 1
    assert "purple" in video_result.audio.transcript.lower()
    # the AAC track is the 0.5 s + speech + 1 s clip, shorter than the 9 s picture
    assert 2.5 < video_result.audio.total_s < 5.0
    assert video_result.audio.silence_dropped_s > 0.5


def test_every_frame_sampled_still_keeps_one_per_scene(speech_video: Path) -> None:
    result = process_video(speech_video, fps=10, with_audio=False, image_format="png")
    assert result.frames_sampled == 90
    assert [f.timestamp_s for f in result.frames] == [0.0, 3.0, 6.0]
    assert result.frames[0].mime_type == "image/png" and result.audio is None
    assert Image.open(io.BytesIO(result.frames[0].data)).format == "PNG"


def test_max_frames_truncates(speech_video: Path) -> None:
    result = process_video(speech_video, max_frames=2, with_audio=False)
    assert result.frames_kept == 2 and result.truncated
    assert result.frames_sampled == 4  # stopped at the second cut (t = 3 s)


def test_video_without_audio(silent_video: Path) -> None:
    result = process_video(silent_video)
    assert result.audio is None and result.frames_kept == 3


def test_bytes_source(silent_video: Path) -> None:
    result = process_video(silent_video.read_bytes(), max_side=80)
    assert [f.timestamp_s for f in result.frames] == [0.0, 3.0, 6.0]
    assert (result.frames[0].width, result.frames[0].height) == (80, 60)


def test_strict_thresholds_keep_more_frames(silent_video: Path) -> None:
    """Thresholds at zero turn the detector into 'keep anything that moved at all'."""
    strict = PixelChangeDetector(histogram_threshold=0.0, hash_threshold=0)
    result = process_video(silent_video, detector=strict)
    assert result.frames_kept > 3


def test_embedding_detector_hook(silent_video: Path) -> None:
    """Any image -> vector callable works; here the mean colour stands in for CLIP."""
    calls: list[int] = []

    def mean_colour(image: Image.Image) -> np.ndarray:
        calls.append(1)
        return np.asarray(image.convert("RGB"), dtype=float).mean(axis=(0, 1)) + 1.0

    detector = EmbeddingChangeDetector(mean_colour, threshold=0.05)
    result = process_video(silent_video, detector=detector)
    assert len(calls) == result.frames_sampled == 9
    assert [f.timestamp_s for f in result.frames] == [0.0, 3.0, 6.0]
    # the detector is reset per video, so a second run gives the same answer
    assert [f.timestamp_s for f in process_video(silent_video, detector=detector).frames] == [
        0.0, 3.0, 6.0,
    ]


def test_clip_plugs_into_the_embedding_hook(tiny_clip: Path, silent_video: Path) -> None:
    from omnimem.media import CLIPImageEmbedder

    clip = CLIPImageEmbedder(tiny_clip)
    detector = EmbeddingChangeDetector(lambda image: clip.embed_images([image])[0], threshold=0.0)
    result = process_video(silent_video, detector=detector, with_audio=False)
    assert result.frames_kept >= 1 and result.frames[0].timestamp_s == 0.0


def test_cut_frames_hash_apart(video_result: VideoResult) -> None:
    blue, green = video_result.frames[1], video_result.frames[2]
    assert hash_distance(blue.phash, green.phash) > 14


@pytest.mark.parametrize(
    ("make", "error"),
    [
        (lambda mp4: b"\x00\x00\x00\x18ftypmp42" + b"\xff" * 500, InvalidInputError),
        (lambda mp4: b"not a video", UnsupportedMediaError),
    ],
    ids=["broken-mp4", "garbage"],
)
def test_bad_video_raises_typed_errors(silent_video: Path, make, error) -> None:
    with pytest.raises(error):
        process_video(make(silent_video.read_bytes()))


def test_audio_only_file_is_not_a_video(speech_track: gen.Track, media_dir: Path) -> None:
    path = gen.encode_audio(speech_track.samples, media_dir / "voice.m4a", codec="aac")
    with pytest.raises(UnsupportedMediaError, match="no video stream"):
        process_video(path)


def test_corrupt_error_is_exported() -> None:
    assert issubclass(CorruptMediaError, InvalidInputError)
