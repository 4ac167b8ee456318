"""Images, audio and video as units: what is searched, what the cold tier keeps.

Each function turns one media input into pending units; the facade stores
them. The novelty filters here are the media ones: perceptual-hash
near-duplicates for images, voice activity for audio (silence is never
stored), scene changes for video frames.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any

from omnimem.errors import InvalidInputError, InvalidTimeError
from omnimem.engine.ingest.prepare import Pending
from omnimem.mau import Modality, Scope, content_hash
from omnimem.timeparse import parse_time
from omnimem.contract.validate import media_file

# Token cost of raw content at pyramid level 3 (documented in the README):

Source = str | Path | bytes


def read_bytes(source: Source, *, limit: int) -> tuple[bytes, str | None]:
    """Bytes of ``source`` and its file name (paths only)."""
    source = media_file(source)
    if isinstance(source, bytes):
        data = source
        name = None
    else:
        path = source
        if path.stat().st_size > limit:
            raise InvalidInputError(f"{path} is larger than {limit} bytes")
        data, name = path.read_bytes(), path.name
    if len(data) > limit:
        raise InvalidInputError(f"input is larger than {limit} bytes")
    return data, name


def file_digest(source: Source) -> tuple[str, str | None]:
    """SHA-256 of a file or bytes, streamed for paths (long media stays out of memory)."""
    source = media_file(source)
    if isinstance(source, bytes):
        return hashlib.sha256(source).hexdigest(), None
    path = source
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest(), path.name


def media_hash(kind: Modality, digest: str, scope: Scope, part: str = "") -> str:
    return content_hash(f"sha256:{digest}{part}", speaker=None, event_time=None, scope=scope, source_id=None, modality=kind)


def _after(base: datetime | None, seconds: float) -> datetime | None:
    """``base`` plus an offset into the media; past year 9999 is a typed error."""
    if base is None:
        return None
    try:
        return base + timedelta(seconds=seconds)
    except OverflowError:
        raise InvalidTimeError(f"{base.isoformat()} plus {seconds} s is past the year 9999") from None


def _clock(seconds: float) -> str:
    whole = int(seconds)
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}" if whole >= 3600 else f"{whole // 60}:{whole % 60:02d}"


def image_item(
    data: bytes, *, filename: str | None, caption: str | None, time: object, scope: Scope, tz: tzinfo,
    max_pixels: int | None = None,
) -> tuple[Pending, str]:
    """One image unit (and its perceptual hash, for the near-duplicate check)."""
    from omnimem.media import inspect_image
    from omnimem.media.limits import check_image

    check_image(data, max_pixels)  # from the header, before decoding
    info = inspect_image(data, filename=filename)
    when = parse_time(time, default_tz=tz) if time is not None else info.taken_at  # type: ignore[arg-type]
    text = caption.strip() if caption and caption.strip() else info.offline_summary()
    meta: dict[str, Any] = {
        "mime": info.mime_type, "width": info.width, "height": info.height, "phash": info.phash,
        "filename": filename, "caption": bool(caption and caption.strip()),
    }
    if info.location is not None:
        meta["location"] = [info.location.latitude, info.location.longitude]
    item = Pending(
        text, None, when, scope, None, media_hash(Modality.IMAGE, info.sha256, scope),
        modality=Modality.IMAGE, metadata=meta, raw=data, novelty=False,
    )
    return item, info.phash


def audio_items(
    source: Source, *, time: object, scope: Scope, tz: tzinfo, stats: dict[str, float], block_s: float = 60.0,
    max_seconds: float | None = None, transcriber: Any = None, detector: Any = None,
) -> Iterator[Pending]:
    """Speech segments as audio units, streamed; ``stats`` is filled as it goes.

    ``transcriber`` and ``detector`` are ``transcriber`` and ``vad`` providers
    (default: the built-in Whisper and Silero).
    """
    from omnimem.media.audio import SpeechStream, encode_wav, transcribe
    from omnimem.media.limits import audio_seconds, check_seconds

    source = media_file(source)
    digest, name = file_digest(source)
    base = parse_time(time, default_tz=tz) if time is not None else None  # type: ignore[arg-type]
    if max_seconds is not None:
        check_seconds(audio_seconds(source if not isinstance(source, Path) else str(source)), max_seconds, "the audio")
    label = name or f"audio {digest[:8]}"
    stream = SpeechStream(source if not isinstance(source, Path) else str(source), block_s=block_s,
                          detector=detector)
    speech = 0.0
    count = 0
    for segment, samples in stream:
        check_seconds(segment.end_s, max_seconds, "the audio")  # a header without a duration
        text = transcriber.transcribe(samples) if transcriber is not None else transcribe(samples)
        speech += segment.duration_s
        count += 1
        said = text or "(speech without recognised words)"
        yield Pending(
            f"{said} [audio {label} {_clock(segment.start_s)}-{_clock(segment.end_s)}]",
            None,
            _after(base, segment.start_s),
            scope, None, media_hash(Modality.AUDIO, digest, scope, f"@{segment.start_s}-{segment.end_s}"),
            modality=Modality.AUDIO, raw=encode_wav(samples), novelty=False, chain=True,
            metadata={"mime": "audio/wav", "start_s": segment.start_s, "end_s": segment.end_s,
                      "source": label, "source_sha256": digest, "transcript": text},
        )
    stats.update({
        "audio_seconds": stream.total_s, "speech_seconds": round(speech, 3),
        "silence_dropped_seconds": round(max(0.0, stream.total_s - speech), 3), "speech_segments": count,
    })


def video_items(
    source: Source, *, time: object, scope: Scope, tz: tzinfo, fps: float, max_frames: int, detector: Any = None,
    max_pixels: int | None = None, max_seconds: float | None = None,
) -> tuple[list[Pending], dict[str, float], str]:
    """A video event unit, its kept frames (image units) and its speech (audio units)."""
    from omnimem.media.limits import check_image
    from omnimem.media.video import process_video

    source = media_file(source)
    digest, name = file_digest(source)
    check_image(source if not isinstance(source, Path) else str(source), max_pixels)  # an image posing as a video
    label = name or f"video {digest[:8]}"
    result = process_video(source if not isinstance(source, Path) else str(source), fps=fps,
                           max_frames=max_frames, keep_audio=True, detector=detector,
                           max_pixels=max_pixels, max_seconds=max_seconds)
    base = parse_time(time, default_tz=tz) if time is not None else None  # type: ignore[arg-type]
    event_id = uuid.uuid4().hex
    segments = result.audio.segments if result.audio else ()
    transcript = " ".join(s.text for s in segments if s.text)
    words = transcript.split()
    said = f"; speech: {' '.join(words[:40])}{' …' if len(words) > 40 else ''}" if words else ""
    event = Pending(
        f"Video {label} ({_clock(result.duration_s)}, {result.frames_kept} scene(s)){said}",
        None, base, scope, None, media_hash(Modality.VIDEO, digest, scope), modality=Modality.VIDEO,
        novelty=False, unit_id=event_id,
        metadata={"source": label, "source_sha256": digest, "duration_s": result.duration_s,
                  "frames_sampled": result.frames_sampled, "frames_kept": result.frames_kept,
                  "truncated": result.truncated},
    )
    items = [event]
    for frame in result.frames:
        near = [s.text for s in segments if s.text and abs((s.start_s + s.end_s) / 2 - frame.timestamp_s) <= 10]
        context = f"; speech around it: {' '.join(near)[:300]}" if near else ""
        items.append(Pending(
            f"Frame at {_clock(frame.timestamp_s)} of video {label}{context}", None,
            _after(base, frame.timestamp_s), scope, None,
            media_hash(Modality.IMAGE, digest, scope, f"#frame@{frame.timestamp_s}"), modality=Modality.IMAGE,
            raw=frame.data, novelty=False, chain=True,
            metadata={"mime": frame.mime_type, "width": frame.width, "height": frame.height, "phash": frame.phash,
                      "parent_id": event_id, "timestamp_s": frame.timestamp_s, "source": label},
        ))
    for seg in segments:
        items.append(Pending(
            f"{seg.text or '(speech without recognised words)'} [video {label} {_clock(seg.start_s)}-{_clock(seg.end_s)}]",
            None, _after(base, seg.start_s), scope, None,
            media_hash(Modality.AUDIO, digest, scope, f"#speech@{seg.start_s}-{seg.end_s}"), modality=Modality.AUDIO,
            raw=seg.wav, novelty=False, chain=True,
            metadata={"mime": "audio/wav", "start_s": seg.start_s, "end_s": seg.end_s, "parent_id": event_id,
                      "source": label, "transcript": seg.text},
        ))
    audio = result.audio
    stats = {
        "frames_sampled": result.frames_sampled, "frames_kept": result.frames_kept,
        "audio_seconds": audio.total_s if audio else 0.0, "speech_seconds": audio.speech_s if audio else 0.0,
        "silence_dropped_seconds": audio.silence_dropped_s if audio else 0.0,
    }
    return items, stats, event_id


CAPTION_PROMPT = (
    "Describe this image in one or two plain sentences for a searchable memory: what it shows, the setting, "
    "and any readable text. Do not guess names or dates."
)


class VisionCaptioner:
    """The ``vision-llm`` captioner provider: an OpenAI-compatible vision model describes the image."""

    name = "vision-llm"

    def __init__(self, llm: Any) -> None:
        self.llm = llm

    def caption(self, data: bytes, mime: str) -> str:
        return describe_image(self.llm, data, mime)


def describe_image(llm: Any, data: bytes, mime: str) -> str:
    """A caption from an OpenAI-compatible vision model (image sent inline as a data URL)."""
    import base64

    url = f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
    messages = [{"role": "user", "content": [
        {"type": "text", "text": CAPTION_PROMPT},
        {"type": "image_url", "image_url": {"url": url}},
    ]}]
    text = str(llm.complete(messages, max_tokens=120).text).strip()
    if not text:
        raise InvalidInputError("the vision model returned an empty caption")
    return text
