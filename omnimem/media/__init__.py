"""Media processing: images, audio and video in, typed facts out (no storage).

Everything here is pure processing returning frozen dataclasses; the core
decides what to store. Heavy dependencies (Pillow, imagehash, PyAV,
soundfile, Silero VAD, faster-whisper, transformers) are imported only when a
function needs them; a missing one raises MissingDependencyError naming the
extra to install ("vision" or "audio").
"""

from __future__ import annotations

from omnimem.media.audio import (
    AudioResult,
    SpeechSegment,
    TranscribedSegment,
    VadSettings,
    detect_speech,
    iter_speech,
    process_audio,
    transcribe,
)
from omnimem.media.audio_io import SAMPLE_RATE, MediaSource, iter_audio_blocks, load_audio
from omnimem.media.clip import CLIPImageEmbedder
from omnimem.media.errors import CorruptMediaError, EmptyMediaError, UnsupportedMediaError
from omnimem.media.image import (
    GeoPoint,
    ImageInfo,
    hash_distance,
    inspect_image,
    is_near_duplicate,
)
from omnimem.media.scene import (
    EmbeddingChangeDetector,
    PixelChangeDetector,
    SceneChangeDetector,
)
from omnimem.media.video import VideoFrame, VideoResult, process_video

__all__ = [
    "SAMPLE_RATE",
    "AudioResult",
    "CLIPImageEmbedder",
    "CorruptMediaError",
    "EmbeddingChangeDetector",
    "EmptyMediaError",
    "GeoPoint",
    "ImageInfo",
    "MediaSource",
    "PixelChangeDetector",
    "SceneChangeDetector",
    "SpeechSegment",
    "TranscribedSegment",
    "UnsupportedMediaError",
    "VadSettings",
    "VideoFrame",
    "VideoResult",
    "detect_speech",
    "hash_distance",
    "inspect_image",
    "is_near_duplicate",
    "iter_audio_blocks",
    "iter_speech",
    "load_audio",
    "process_audio",
    "process_video",
    "transcribe",
]
