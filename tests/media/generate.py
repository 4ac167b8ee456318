"""Real media files for the media tests, generated deterministically.

Images come from Pillow, speech from espeak-ng, audio and video containers
from PyAV. Every generator takes an explicit seed or none at all, so the same
bytes come out on every run.
"""

from __future__ import annotations

import hashlib
import io
import shutil
import subprocess
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import soundfile as sf
from PIL import Image, ImageDraw

RATE = 16_000


# ----------------------------------------------------------------- images


def photo(seed: int, size: tuple[int, int] = (320, 240)) -> Image.Image:
    """A structured picture (gradient + shapes) whose layout depends on ``seed``."""
    rng = np.random.default_rng(seed)
    width, height = size
    x = np.linspace(0, 1, width)[None, :]
    y = np.linspace(0, 1, height)[:, None]
    angle = rng.uniform(0, np.pi)
    ramp = np.cos(angle) * x + np.sin(angle) * y
    base = np.stack(
        [(ramp * rng.uniform(80, 255) + rng.uniform(0, 60)) % 256 for _ in range(3)], axis=-1
    )
    image = Image.fromarray(base.astype(np.uint8), "RGB")
    draw = ImageDraw.Draw(image)
    for _ in range(6):
        x0, y0 = int(rng.integers(0, width - 40)), int(rng.integers(0, height - 40))
        x1, y1 = x0 + int(rng.integers(20, 120)), y0 + int(rng.integers(20, 100))
        colour = tuple(int(c) for c in rng.integers(0, 256, 3))
        if rng.random() < 0.5:
            draw.rectangle((x0, y0, x1, y1), fill=colour)
        else:
            draw.ellipse((x0, y0, x1, y1), fill=colour)
    return image


def encode(image: Image.Image, fmt: str, **options: object) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **options)
    return buffer.getvalue()


def jpeg_with_exif(
    image: Image.Image,
    *,
    taken: str,
    offset: str | None = None,
    lat: tuple[float, float, float] | None = None,
    lat_ref: str = "N",
    lon: tuple[float, float, float] | None = None,
    lon_ref: str = "E",
) -> bytes:
    """JPEG with EXIF DateTimeOriginal ("YYYY:MM:DD HH:MM:SS"), optional offset and GPS."""
    exif = Image.Exif()
    exif[0x0132] = taken  # DateTime (IFD0)
    sub = exif.get_ifd(0x8769)
    sub[0x9003] = taken  # DateTimeOriginal
    if offset is not None:
        sub[0x9011] = offset  # OffsetTimeOriginal
    if lat is not None and lon is not None:
        gps = exif.get_ifd(0x8825)
        gps[1], gps[2], gps[3], gps[4] = lat_ref, lat, lon_ref, lon
    return encode(image, "JPEG", quality=90, exif=exif)


def near_duplicate(data: bytes) -> bytes:
    """The same picture, downscaled by 10 % and re-encoded at lower quality."""
    image = Image.open(io.BytesIO(data)).convert("RGB")
    smaller = image.resize((image.width * 9 // 10, image.height * 9 // 10), Image.LANCZOS)
    return encode(smaller, "JPEG", quality=70)


# ------------------------------------------------------------------ audio


def have_espeak() -> bool:
    return shutil.which("espeak-ng") is not None


def speak(text: str, workdir: Path, *, speed: int = 140) -> np.ndarray:
    """``text`` spoken by espeak-ng, as 16 kHz mono float32."""
    digest = hashlib.sha1(f"{speed}:{text}".encode()).hexdigest()[:12]
    wav = workdir / f"espeak-{digest}.wav"
    subprocess.run(
        ["espeak-ng", "-s", str(speed), "-w", str(wav), text],
        check=True,
        capture_output=True,
    )
    samples, rate = sf.read(wav, dtype="float32")
    return resample(samples, rate)


def resample(samples: np.ndarray, rate: int, target: int = RATE) -> np.ndarray:
    """Mono float32 resampling with PyAV (test-side helper)."""
    if rate == target:
        return samples.astype(np.float32)
    resampler = av.AudioResampler(format="flt", layout="mono", rate=target)
    frame = av.AudioFrame.from_ndarray(
        samples.astype(np.float32).reshape(1, -1), format="flt", layout="mono"
    )
    frame.sample_rate = rate
    out = [*resampler.resample(frame), *resampler.resample(None)]
    return np.concatenate([f.to_ndarray().reshape(-1) for f in out]).astype(np.float32)


def silence(seconds: float) -> np.ndarray:
    return np.zeros(int(seconds * RATE), dtype=np.float32)


def noise(seconds: float, *, level: float = 0.003, seed: int = 0) -> np.ndarray:
    """Low white noise (about -50 dBFS): room tone, not speech."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(int(seconds * RATE)) * level).astype(np.float32)


@dataclass(frozen=True)
class Track:
    """A composed audio track and where its speech is, in seconds."""

    samples: np.ndarray
    speech_spans: tuple[tuple[float, float], ...]
    texts: tuple[str, ...]

    @property
    def duration_s(self) -> float:
        return len(self.samples) / RATE


def compose(parts: list[np.ndarray | str], workdir: Path) -> Track:
    """Concatenate arrays (silence/noise) and strings (spoken by espeak-ng)."""
    pieces: list[np.ndarray] = []
    spans: list[tuple[float, float]] = []
    texts: list[str] = []
    position = 0
    for part in parts:
        samples = speak(part, workdir) if isinstance(part, str) else part
        if isinstance(part, str):
            spans.append((position / RATE, (position + len(samples)) / RATE))
            texts.append(part)
        pieces.append(samples)
        position += len(samples)
    return Track(np.concatenate(pieces), tuple(spans), tuple(texts))


def encode_audio(samples: np.ndarray, path: Path, *, codec: str, rate: int = RATE) -> Path:
    """Write mono float32 ``samples`` with PyAV (codec "aac" -> .m4a, "libmp3lame" -> .mp3)."""
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream(codec, rate=rate, layout="mono")
        _write_audio(container, stream, samples, rate)
    return path


def _write_audio(container: av.container.OutputContainer, stream: av.AudioStream,
                 samples: np.ndarray, rate: int) -> None:
    frame_size = stream.codec_context.frame_size or 1024
    fmt = stream.codec_context.format.name
    pcm = samples.astype(np.float32)
    for pts in range(0, len(pcm), frame_size):
        chunk = pcm[pts : pts + frame_size]
        if len(chunk) < frame_size:
            chunk = np.pad(chunk, (0, frame_size - len(chunk)))
        frame = av.AudioFrame.from_ndarray(chunk.reshape(1, -1), format="flt", layout="mono")
        frame.sample_rate = rate
        frame.pts = pts
        frame.time_base = Fraction(1, rate)
        if fmt != "flt":
            frame = av.AudioResampler(format=fmt, layout="mono", rate=rate).resample(frame)[0]
            frame.pts = pts
        container.mux(stream.encode(frame))
    container.mux(stream.encode(None))


# ------------------------------------------------------------------ video


def scene_frame(scene: int, index: int, size: tuple[int, int] = (160, 120)) -> np.ndarray:
    """Frame ``index`` of one of three test scenes, as RGB uint8.

    0: solid red; 1: blue gradient with a white ball rolling right; 2: static green noise
    texture (same texture every frame, as a still shot of grass would be).
    """
    width, height = size
    if scene == 0:
        frame = np.zeros((height, width, 3), np.uint8)
        frame[..., 0] = 200
        return frame
    if scene == 1:
        frame = np.zeros((height, width, 3), np.uint8)
        frame[..., 2] = np.linspace(90, 250, height, dtype=np.uint8)[:, None]
        frame[..., 1] = 30
        yy, xx = np.mgrid[0:height, 0:width]
        cx = width // 3 + index % 30 // 5  # a white ball rolling right, 1 px per 5 frames
        frame[(xx - cx) ** 2 + (yy - height // 2) ** 2 < 24**2] = 240
        return frame
    rng = np.random.default_rng(7)
    frame = np.zeros((height, width, 3), np.uint8)
    frame[..., 1] = rng.integers(100, 230, (height, width))
    frame[..., 0] = 20
    return frame


def make_video(
    path: Path,
    *,
    scene_s: float = 3.0,
    fps: int = 10,
    audio: np.ndarray | None = None,
    codec: str = "mpeg4",
) -> Path:
    """Three scenes of ``scene_s`` seconds each (cuts at scene_s, 2*scene_s), optional AAC audio."""
    with av.open(str(path), mode="w") as container:
        video = container.add_stream(codec, rate=fps)
        video.width, video.height, video.pix_fmt = 160, 120, "yuv420p"
        video.codec_context.options = {"qscale": "3"} if codec == "mpeg4" else {}
        sound = container.add_stream("aac", rate=RATE, layout="mono") if audio is not None else None
        per_scene = int(scene_s * fps)
        for index in range(3 * per_scene):
            rgb = scene_frame(index // per_scene, index)
            frame = av.VideoFrame.from_ndarray(rgb, format="rgb24")
            frame.pts = index
            frame.time_base = Fraction(1, fps)
            container.mux(video.encode(frame))
        container.mux(video.encode(None))
        if sound is not None and audio is not None:
            _write_audio(container, sound, audio, RATE)
    return path
