"""Decode any audio we can read into 16 kHz mono float32, block by block.

WAV/FLAC/OGG/MP3 go through soundfile (libsndfile); everything else (AAC,
M4A, Opus in MP4/WebM, the audio track of a video) through PyAV. Resampling
and down-mixing use PyAV's resampler (libswresample), which keeps its filter
state between blocks, so a long file is never held in memory whole: callers
get blocks of ``block_s`` seconds and decide what to keep.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO, Literal

import numpy as np
import numpy.typing as npt

from omnimem.errors import InvalidInputError
from omnimem.media._deps import require
from omnimem.media.errors import CorruptMediaError, EmptyMediaError, UnsupportedMediaError

SAMPLE_RATE = 16_000
"""Every decoded block is at this rate: what Silero VAD and Whisper expect."""

MediaSource = str | os.PathLike[str] | bytes
"""A file path or the file's bytes."""

Samples = npt.NDArray[np.float32]
Decoder = Literal["auto", "soundfile", "pyav"]


def iter_audio_blocks(
    source: MediaSource, *, block_s: float = 30.0, decoder: Decoder = "auto"
) -> Iterator[Samples]:
    """Yield 16 kHz mono float32 blocks of ``block_s`` seconds (the last may be shorter).

    Raises EmptyMediaError when the input has no samples at all,
    UnsupportedMediaError when no decoder recognises it and CorruptMediaError
    when decoding fails part-way.
    """
    if block_s <= 0:
        raise ValueError("block_s must be positive")
    _check_not_empty(source)
    block = _Blocker(int(block_s * SAMPLE_RATE))
    if decoder == "soundfile" or (decoder == "auto" and _soundfile_can_read(source)):
        chunks = _decode_soundfile(source)
    elif decoder in ("auto", "pyav"):
        chunks = _decode_pyav(source)
    else:
        raise ValueError(f"unknown decoder {decoder!r}")
    total = 0
    for chunk in chunks:
        for out in block.push(chunk):
            total += len(out)
            yield out
    tail = block.flush()
    total += len(tail)
    if len(tail):
        yield tail
    if total == 0:
        raise EmptyMediaError("audio holds no samples")


def load_audio(source: MediaSource, *, max_s: float | None = None) -> Samples:
    """The whole input as one 16 kHz mono array; for short clips only.

    ``max_s`` guards against loading hours of audio by mistake: longer input
    raises InvalidInputError (use iter_audio_blocks or process_audio instead).
    """
    blocks: list[Samples] = []
    seen = 0
    for blk in iter_audio_blocks(source):
        seen += len(blk)
        if max_s is not None and seen > max_s * SAMPLE_RATE:
            raise InvalidInputError(f"audio is longer than max_s={max_s} seconds")
        blocks.append(blk)
    return np.concatenate(blocks)


def has_audio_stream(source: MediaSource) -> bool:
    """True when the container (read with PyAV) holds at least one audio stream."""
    with open_container(source) as container:
        return len(container.streams.audio) > 0


def open_binary(source: MediaSource) -> BinaryIO | str:
    """What decoders accept: a path string or an in-memory file."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return io.BytesIO(bytes(source))
    path = Path(source)
    if not path.is_file():
        raise InvalidInputError(f"no such media file: {path}")
    return str(path)


def _check_not_empty(source: MediaSource) -> None:
    if isinstance(source, (bytes, bytearray, memoryview)):
        size = len(source)
    else:
        path = Path(source)
        if not path.is_file():
            raise InvalidInputError(f"no such media file: {path}")
        size = path.stat().st_size
    if size == 0:
        raise EmptyMediaError("media is empty (0 bytes)")


def _soundfile_can_read(source: MediaSource) -> bool:
    sf = require("soundfile", "audio")
    try:
        sf.info(open_binary(source))
    except (RuntimeError, TypeError, ValueError):  # LibsndfileError is a RuntimeError
        return False
    return True


def _decode_soundfile(source: MediaSource) -> Iterator[Samples]:
    sf = require("soundfile", "audio")
    resampler: _Resampler | None = None
    try:
        with sf.SoundFile(open_binary(source)) as handle:
            if handle.samplerate != SAMPLE_RATE:
                resampler = _Resampler(handle.samplerate)
            for frames in handle.blocks(blocksize=65_536, dtype="float32", always_2d=True):
                mono = np.ascontiguousarray(frames.mean(axis=1), dtype=np.float32)
                yield resampler.push(mono) if resampler else mono
    except RuntimeError as exc:
        raise CorruptMediaError(f"audio data is damaged: {exc}") from exc
    if resampler is not None:
        yield resampler.flush()


def _decode_pyav(source: MediaSource) -> Iterator[Samples]:
    av = require("av", "audio")
    with open_container(source) as container:
        if not container.streams.audio:
            raise UnsupportedMediaError("the file has no audio stream")
        stream = container.streams.audio[0]
        resampler = av.AudioResampler(format="flt", layout="mono", rate=SAMPLE_RATE)
        try:
            for frame in container.decode(stream):
                frame.pts = None  # let the resampler count samples, not trust timestamps
                yield _frames_to_samples(resampler.resample(frame))
            yield _frames_to_samples(resampler.resample(None))
        except av.FFmpegError as exc:
            raise CorruptMediaError(f"audio stream is damaged: {exc}") from exc


def open_container(source: MediaSource, *, max_pixels: int | None = None) -> Any:
    """Open ``source`` with PyAV for reading; unreadable input is UnsupportedMediaError.

    ``max_pixels`` makes FFmpeg's decoders refuse larger frames, also while
    probing the streams (which decodes a first frame).
    """
    av = require("av", "audio")
    options = {"max_pixels": str(max_pixels)} if max_pixels is not None else None
    try:
        return av.open(open_binary(source), mode="r", options=options)
    except av.FFmpegError as exc:
        raise UnsupportedMediaError(f"not a media format we can read: {exc}") from exc


def _frames_to_samples(frames: list[Any]) -> Samples:
    if not frames:
        return np.zeros(0, dtype=np.float32)
    return np.concatenate([f.to_ndarray().reshape(-1) for f in frames]).astype(np.float32)


class _Resampler:
    """Streaming mono float32 resampler to SAMPLE_RATE (keeps filter state)."""

    def __init__(self, rate: int) -> None:
        av = require("av", "audio")
        self._av = av
        self._rate = rate
        self._inner = av.AudioResampler(format="flt", layout="mono", rate=SAMPLE_RATE)

    def push(self, mono: Samples) -> Samples:
        if len(mono) == 0:
            return mono
        frame = self._av.AudioFrame.from_ndarray(mono.reshape(1, -1), format="flt", layout="mono")
        frame.sample_rate = self._rate
        return _frames_to_samples(self._inner.resample(frame))

    def flush(self) -> Samples:
        return _frames_to_samples(self._inner.resample(None))


class _Blocker:
    """Re-cuts a stream of arbitrary-sized chunks into fixed-size blocks."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._pending: list[Samples] = []
        self._count = 0

    def push(self, chunk: Samples) -> Iterator[Samples]:
        if len(chunk) == 0:
            return
        self._pending.append(chunk)
        self._count += len(chunk)
        while self._count >= self._size:
            joined = np.concatenate(self._pending)
            yield joined[: self._size]
            rest = joined[self._size :]
            self._pending = [rest] if len(rest) else []
            self._count = len(rest)

    def flush(self) -> Samples:
        joined = np.concatenate(self._pending) if self._pending else np.zeros(0, np.float32)
        self._pending, self._count = [], 0
        return joined.astype(np.float32, copy=False)
