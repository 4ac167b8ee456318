"""Extra synthetic media for ``python -m benchmarks media`` (media_bench.py), built on tests/media/generate.py.

``generate.py`` (the tests' generators) gives pictures (``photo``), speech
(``speak`` / ``compose``), silence, noise and audio muxing; it has a fixed
three-scene video only. This module adds what the benchmark needs on top:
videos made of any number of scenes of chosen lengths and kinds (static
shots, moving content, slow pans, zooms, lighting fades, flat colours, a
mirrored twin of the previous shot), with the exact cut times returned.

Everything is a pure function of its arguments (explicit seeds), so the same
bytes come out on every run.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
from PIL import Image

from benchmarks.harness.paths import ROOT

sys.path.insert(0, str(ROOT / "tests" / "media"))
import generate as gen

SIZE = (320, 240)

# Scene kinds. "Moving" kinds change inside the shot and may provoke false cuts.
KINDS = {
    "still": "a structured picture with faint per-frame sensor noise (sigma 2)",
    "ball": "the picture with a ball crossing it at 48 px/s (15 % of the width per second)",
    "pan": "a slow horizontal pan over a wider picture, 24 px/s",
    "zoom": "a slow zoom into the picture, from 100 % to 75 % of the field over the shot",
    "fade": "the picture brightening from 55 % to 100 % over the shot (lighting change)",
    "flat": "one flat colour",
    "mirror": "the previous scene's picture mirrored left-right: same colours, other layout",
}
MOVING = ("ball", "pan", "zoom", "fade")


@dataclass(frozen=True)
class Scene:
    kind: str
    seed: int
    frames: int  # length in video frames


@dataclass(frozen=True)
class CutVideo:
    """A generated video and its ground truth."""

    path: Path
    fps: int
    scenes: tuple[Scene, ...]
    cuts_s: tuple[float, ...]  # time of the first frame of scenes 2..n
    starts_s: tuple[float, ...]  # time of the first frame of every scene
    duration_s: float


def _picture(seed: int, size: tuple[int, int]) -> np.ndarray:
    return np.asarray(gen.photo(seed, size), dtype=np.uint8)


def _flat(seed: int, size: tuple[int, int]) -> np.ndarray:
    rng = np.random.default_rng(seed)
    colour = rng.integers(30, 226, 3).astype(np.uint8)
    return np.broadcast_to(colour, (size[1], size[0], 3)).copy()


def scene_frames(scene: Scene, previous_seed: int, fps: int, size: tuple[int, int] = SIZE) -> list[np.ndarray]:
    """All frames of one scene, RGB uint8 (height, width, 3)."""
    width, height = size
    n = scene.frames
    progress = np.linspace(0.0, 1.0, n) if n > 1 else np.zeros(1)
    out: list[np.ndarray] = []
    if scene.kind == "flat":
        frame = _flat(scene.seed, size)
        return [frame] * n
    if scene.kind == "pan":
        wide = _picture(scene.seed, (width * 2, height))
        for i in range(n):
            x = min(width, round(i * 24 / fps))
            out.append(np.ascontiguousarray(wide[:, x : x + width]))
        return out
    base = _picture(previous_seed if scene.kind == "mirror" else scene.seed, size)
    if scene.kind == "mirror":
        base = np.ascontiguousarray(base[:, ::-1])
    noise_rng = np.random.default_rng(10_000 + scene.seed)
    for i in range(n):
        if scene.kind in ("still", "mirror"):
            jitter = noise_rng.normal(0.0, 2.0, base.shape)
            frame = np.clip(base.astype(np.float32) + jitter, 0, 255).astype(np.uint8)
        elif scene.kind == "ball":
            frame = base.copy()
            cx = int(40 + i * 48 / fps) % (width + 60) - 30
            yy, xx = np.mgrid[0:height, 0:width]
            frame[(xx - cx) ** 2 + (yy - height // 2) ** 2 < 22**2] = (250, 250, 235)
        elif scene.kind == "zoom":
            scale = 1.0 - 0.25 * progress[i]
            w, h = width * scale, height * scale
            left, top = (width - w) / 2, (height - h) / 2
            image = Image.fromarray(base).resize(size, Image.Resampling.BILINEAR, box=(left, top, left + w, top + h))
            frame = np.asarray(image, dtype=np.uint8)
        elif scene.kind == "fade":
            gain = 0.55 + 0.45 * progress[i]
            frame = np.clip(base.astype(np.float32) * gain, 0, 255).astype(np.uint8)
        else:
            raise ValueError(f"unknown scene kind {scene.kind!r}")
        out.append(frame)
    return out


def plan_scenes(seed: int, *, fps: int, count: int, lengths_s: tuple[float, ...]) -> tuple[Scene, ...]:
    """``count`` scenes with lengths drawn from ``lengths_s`` and kinds mixed (seeded).

    Consecutive scenes never share a kind except that "mirror" always follows a
    picture scene (it reuses that picture), and two flat scenes may follow
    each other (a cut between two flat colours).
    """
    rng = np.random.default_rng(seed)
    pictures = ("still", "ball", "pan", "zoom", "fade")
    scenes: list[Scene] = []
    for index in range(count):
        previous = scenes[-1].kind if scenes else None
        choices = [*pictures, "flat", "flat"]
        if previous in ("still", "ball", "zoom", "fade"):
            choices.append("mirror")
        choices = [k for k in choices if k != previous or k == "flat"]
        kind = str(rng.choice(choices))
        length = float(rng.choice(lengths_s))
        frames = max(1, round(length * fps))
        scenes.append(Scene(kind, seed * 100 + index, frames))
    return tuple(scenes)


def make_cut_video(
    path: Path,
    scenes: tuple[Scene, ...],
    *,
    fps: int = 10,
    size: tuple[int, int] = SIZE,
    audio: np.ndarray | None = None,
) -> CutVideo:
    """Write ``scenes`` back to back as MPEG-4 (qscale 3) in MP4, optional AAC audio."""
    starts: list[float] = []
    with av.open(str(path), mode="w") as container:
        video = container.add_stream("mpeg4", rate=fps)
        video.width, video.height, video.pix_fmt = size[0], size[1], "yuv420p"
        video.codec_context.options = {"qscale": "3"}
        sound = container.add_stream("aac", rate=gen.RATE, layout="mono") if audio is not None else None
        index = 0
        previous_seed = scenes[0].seed
        for scene in scenes:
            starts.append(index / fps)
            for rgb in scene_frames(scene, previous_seed, fps, size):
                frame = av.VideoFrame.from_ndarray(rgb, format="rgb24")
                frame.pts = index
                frame.time_base = Fraction(1, fps)
                container.mux(video.encode(frame))
                index += 1
            if scene.kind != "flat":
                previous_seed = scene.seed if scene.kind != "mirror" else previous_seed
        container.mux(video.encode(None))
        if sound is not None and audio is not None:
            gen._write_audio(container, sound, audio, gen.RATE)
    return CutVideo(path, fps, scenes, tuple(starts[1:]), tuple(starts), index / fps)


# ------------------------------------------------------------------ audio

SENTENCES = (
    "The quick brown fox jumps over the lazy dog.",
    "Please remember to water the plants on Friday.",
    "An elephant never forgets where the river is.",
    "We moved the meeting to the small room upstairs.",
    "She bought fresh bread and a jar of honey at the market.",
    "The train to the coast leaves early in the morning.",
    "My brother lost his keys again last night.",
    "Turn left after the church and park behind the bakery.",
    "The doctor said I should drink more water.",
    "Our team finished the report before the deadline.",
    "It started raining just as we reached the beach.",
    "Can you call the plumber about the kitchen sink?",
    "The purple elephant danced under the silver moon.",
    "He plays the violin every evening after dinner.",
    "Book a table for four at the Italian restaurant.",
    "The children built a snowman in the garden.",
    "Her favourite colour is green, like the forest.",
    "The library closes at noon on public holidays.",
    "Send the invoice to the accounting department.",
    "A strong wind blew the umbrella out of my hand.",
)


def gap(kind: str, seconds: float, seed: int) -> np.ndarray:
    """Non-speech filler: "silence" (digital zero), "noise" (-50 dBFS) or "noise-loud" (-40 dBFS)."""
    if kind == "silence":
        samples = gen.silence(seconds)
    elif kind == "noise":
        samples = gen.noise(seconds, level=0.003, seed=seed)
    elif kind == "noise-loud":
        samples = gen.noise(seconds, level=0.01, seed=seed)
    else:
        raise ValueError(f"unknown gap kind {kind!r}")
    return np.asarray(samples, dtype=np.float32)


def plan_track(seed: int, sentences: tuple[str, ...], gaps_s: tuple[float, ...]) -> list[tuple[str, float] | str]:
    """Sentences separated (and framed) by gaps of seeded kind and length: [(kind, s), text, ...]."""
    rng = np.random.default_rng(seed)
    kinds = ("silence", "noise", "noise-loud")
    parts: list[tuple[str, float] | str] = []
    for text in sentences:
        parts.append((str(rng.choice(kinds)), float(rng.choice(gaps_s))))
        parts.append(text)
    parts.append((str(rng.choice(kinds)), float(rng.choice(gaps_s))))
    return parts


def build_track(parts: list[tuple[str, float] | str], workdir: Path, seed: int) -> gen.Track:
    """Render a plan with ``generate.compose`` (espeak-ng for the sentences)."""
    arrays: list[np.ndarray | str] = []
    for index, part in enumerate(parts):
        arrays.append(part if isinstance(part, str) else gap(part[0], part[1], seed * 100 + index))
    return gen.compose(arrays, workdir)
