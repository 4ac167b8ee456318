"""Audio: decoding, streaming VAD, transcription and novelty statistics on real files."""

from __future__ import annotations

import sys
import threading
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

import generate as gen
from omnimem.errors import InvalidInputError, MissingDependencyError
from omnimem.media import (
    SAMPLE_RATE,
    AudioResult,
    EmptyMediaError,
    SpeechSegment,
    UnsupportedMediaError,
    detect_speech,
    iter_audio_blocks,
    load_audio,
    process_audio,
    transcribe,
)
from omnimem.media.audio import whisper_model


def overlaps(segment: SpeechSegment, span: tuple[float, float]) -> bool:
    return segment.start_s < span[1] and span[0] < segment.end_s


def assert_speech_where_it_is(segments: list[SpeechSegment], track: gen.Track) -> None:
    assert len(segments) == len(track.speech_spans)
    for segment, span in zip(segments, track.speech_spans):
        assert overlaps(segment, span), (segment, span)
        # padding may reach a little into the silence around it, no further
        assert span[0] - 0.5 <= segment.start_s and segment.end_s <= span[1] + 0.5


def words(result: AudioResult) -> list[str]:
    return [seg.text.lower() for seg in result.segments]


@pytest.fixture(scope="module")
def wav_result(speech_wav: Path) -> AudioResult:
    return process_audio(speech_wav)


def test_speech_found_where_it_is_and_nowhere_else(speech_wav: Path, speech_track: gen.Track) -> None:
    assert_speech_where_it_is(detect_speech(speech_wav), speech_track)


def test_small_blocks_find_the_same_speech(speech_wav: Path, speech_track: gen.Track) -> None:
    """Blocks of 2 s cut through both utterances; the carry-over must stitch them."""
    whole = detect_speech(speech_wav)
    streamed = detect_speech(speech_wav, block_s=2.0)
    assert_speech_where_it_is(streamed, speech_track)
    for a, b in zip(whole, streamed):
        assert abs(a.start_s - b.start_s) < 0.15 and abs(a.end_s - b.end_s) < 0.15


def test_transcripts_contain_the_spoken_words(wav_result: AudioResult) -> None:
    first, second = words(wav_result)
    assert "purple" in first
    for word in ("quick", "brown", "fox", "lazy"):
        assert word in second
    assert "purple" in wav_result.transcript.lower() and "lazy" in wav_result.transcript.lower()


def test_novelty_statistics(wav_result: AudioResult, speech_track: gen.Track) -> None:
    assert wav_result.total_s == pytest.approx(speech_track.duration_s, abs=0.01)
    assert wav_result.speech_s == pytest.approx(sum(s.duration_s for s in wav_result.segments))
    assert wav_result.speech_s + wav_result.silence_dropped_s == pytest.approx(wav_result.total_s)
    assert 4.0 < wav_result.speech_s < 6.5  # two utterances of ~1.5 s and ~3.5 s
    assert wav_result.silence_dropped_s > 4.5  # 6 s of silence and noise, minus padding
    assert 0.3 < wav_result.speech_ratio < 0.6


def test_bytes_and_path_give_the_same_result(speech_wav: Path, wav_result: AudioResult) -> None:
    assert process_audio(speech_wav.read_bytes(), with_transcripts=False).segments == tuple(
        seg.__class__(seg.start_s, seg.end_s, "") for seg in wav_result.segments
    )


@pytest.mark.parametrize(("codec", "suffix"), [("aac", "m4a"), ("libmp3lame", "mp3")])
def test_compressed_formats_load(
    codec: str, suffix: str, speech_track: gen.Track, media_dir: Path
) -> None:
    path = gen.encode_audio(speech_track.samples, media_dir / f"speech.{suffix}", codec=codec)
    samples = load_audio(path)
    assert samples.dtype == np.float32 and samples.ndim == 1
    assert len(samples) / SAMPLE_RATE == pytest.approx(speech_track.duration_s, abs=0.1)
    assert_speech_where_it_is(detect_speech(path), speech_track)
    if codec == "aac":  # transcribing one lossy format is enough to keep the suite fast
        assert "lazy" in process_audio(path).transcript.lower()


def test_resamples_and_downmixes(media_dir: Path) -> None:
    """A 44.1 kHz stereo file comes out as 16 kHz mono at the same pitch."""
    rate, seconds = 44_100, 2.0
    t = np.arange(int(rate * seconds)) / rate
    tone = 0.5 * np.sin(2 * np.pi * 440 * t)
    path = media_dir / "stereo.flac"
    sf.write(path, np.stack([tone, tone], axis=1), rate)
    samples = load_audio(path)
    assert len(samples) == pytest.approx(seconds * SAMPLE_RATE, abs=16)
    spectrum = np.abs(np.fft.rfft(samples))
    assert np.argmax(spectrum) * SAMPLE_RATE / len(samples) == pytest.approx(440, abs=2)


def test_silence_and_noise_have_no_speech(media_dir: Path) -> None:
    path = media_dir / "room.wav"
    sf.write(path, np.concatenate([gen.silence(2.0), gen.noise(3.0, seed=4)]), SAMPLE_RATE)
    result = process_audio(path)
    assert result.segments == () and result.speech_s == 0
    assert result.silence_dropped_s == pytest.approx(5.0, abs=0.01)


def test_long_input_streams_in_bounded_memory(media_dir: Path) -> None:
    """Four minutes is 15 MB once decoded at 16 kHz; the peak depends on block_s only
    (measured ~4 MB at 5 s blocks for both 2- and 4-minute files)."""
    path = media_dir / "long.wav"
    with sf.SoundFile(path, "w", samplerate=8000, channels=1, subtype="PCM_16") as out:
        for minute in range(4):
            out.write(gen.noise(60.0, seed=minute)[::2])  # 60 s at 8 kHz
    decoded_bytes = 240 * SAMPLE_RATE * 4
    assert all(len(b) <= 5 * SAMPLE_RATE for b in iter_audio_blocks(path, block_s=5.0))
    tracemalloc.start()
    try:
        segments = detect_speech(path, block_s=5.0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert segments == []
    assert peak < decoded_bytes / 3, f"peak {peak / 1e6:.1f} MB"


@pytest.mark.parametrize(
    ("data", "error"),
    [(b"", EmptyMediaError), (b"RIFF\x00\x00garbage" * 10, UnsupportedMediaError)],
    ids=["zero-bytes", "garbage"],
)
def test_bad_input_raises_typed_errors(data: bytes, error: type[Exception]) -> None:
    with pytest.raises(error):
        process_audio(data)


def test_zero_samples_is_empty(media_dir: Path) -> None:
    path = media_dir / "empty.wav"
    sf.write(path, np.zeros(0, np.float32), SAMPLE_RATE)
    with pytest.raises(EmptyMediaError):
        detect_speech(path)


def test_truncated_container_is_rejected(speech_track: gen.Track, media_dir: Path) -> None:
    data = gen.encode_audio(speech_track.samples, media_dir / "cut.m4a", codec="aac").read_bytes()
    with pytest.raises(InvalidInputError):
        process_audio(data[: len(data) // 2])


def test_missing_file_is_invalid_input(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="no such media file"):
        process_audio(tmp_path / "nope.wav")


def test_missing_decoders_name_the_extra(monkeypatch: pytest.MonkeyPatch, speech_wav: Path) -> None:
    monkeypatch.setitem(sys.modules, "soundfile", None)
    with pytest.raises(MissingDependencyError, match=r"omnimem\[audio\]"):
        load_audio(speech_wav)


def test_whisper_model_is_shared_and_thread_safe(speech_wav: Path) -> None:
    assert whisper_model() is whisper_model()
    clip = load_audio(speech_wav)[int(5.2 * SAMPLE_RATE) : int(9.0 * SAMPLE_RATE)]
    texts: list[str] = []
    threads = [threading.Thread(target=lambda: texts.append(transcribe(clip))) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(texts) == 2 and texts[0] == texts[1] and "lazy" in texts[0].lower()
