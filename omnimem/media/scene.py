"""Scene-change detectors: decide whether a sampled video frame shows something new.

A detector compares each frame with the last frame it *kept* (not the last one
it saw), so a slow pan still produces a new frame once it has drifted far
enough. Detectors are stateful; ``reset()`` starts a new video.

``PixelChangeDetector`` needs no model: it keeps a frame when its colour
histogram or its perceptual hash moved far from the last kept frame. The two
catch different cuts: a cut between two flat colours leaves the pHash
unchanged (both are structureless) but moves the histogram; a cut between two
shots of the same palette moves the pHash but not the histogram.

``EmbeddingChangeDetector`` takes any callable image -> vector (for instance a
CLIP provider's ``lambda im: clip.embed_images([im])[0]``) and keeps a frame
when the cosine distance to the last kept vector exceeds a threshold.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from omnimem.media.image import hash_distance, perceptual_hash

if TYPE_CHECKING:
    from PIL.Image import Image

# Half the L1 distance between per-channel 16-bin RGB histograms, averaged over
# the three channels: 0 = same colour distribution, 1 = disjoint. Measured on
# MPEG-4 test clips: frames within one shot (compression noise, a moving ball)
# 0.00-0.09; cuts 0.67-1.0. A flat colour drifting across one bin edge at a
# keyframe moves one channel wholly: exactly 1/3 (benchmarks/results/MEDIA.md),
# so the threshold sits above that.
DEFAULT_HISTOGRAM_THRESHOLD = 0.4
# Frames whose grey thumbnail varies less than this (std, 0-255) have no
# structure: their pHash is decided by compression noise and jumps 26-31 bits
# between two frames of the same flat shot, so it is not compared.
FLAT_STD = 6.0
# pHash Hamming distance (of 64 bits): re-encodes 0-2, unrelated images 24-31.
# pHash reacts to motion: a subject crossing 1/8 of the frame measured 22, one
# crossing 1/16 measured 14, so a shot with steady motion may yield a few frames.
DEFAULT_HASH_THRESHOLD = 14
# Cosine distance (1 - cos) between embeddings of consecutive kept frames.
DEFAULT_EMBEDDING_THRESHOLD = 0.15

_THUMB = (64, 64)
_BINS = 16


@runtime_checkable
class SceneChangeDetector(Protocol):
    """Decides, frame by frame, which frames start something new."""

    def reset(self) -> None:
        """Forget the last kept frame (a new video starts)."""

    def is_new_scene(self, image: Image) -> bool:
        """True when ``image`` should be kept; the detector then remembers it."""


def colour_histogram(image: Image) -> npt.NDArray[np.float64]:
    """Per-channel normalised RGB histogram of a 64x64 thumbnail, shape (3, 16)."""
    pixels = np.asarray(image.convert("RGB").resize(_THUMB), dtype=np.uint8).reshape(-1, 3)
    hist = np.stack(
        [np.bincount(pixels[:, c] // (256 // _BINS), minlength=_BINS) for c in range(3)]
    ).astype(np.float64)
    return hist / hist.sum(axis=1, keepdims=True)  # type: ignore[no-any-return]


def histogram_distance(a: npt.NDArray[np.float64], b: npt.NDArray[np.float64]) -> float:
    """Mean over channels of the total-variation distance, in [0, 1]."""
    return float(0.5 * np.abs(a - b).sum(axis=1).mean())


class PixelChangeDetector:
    """Weight-free detector: colour histogram distance OR pHash distance."""

    def __init__(
        self,
        *,
        histogram_threshold: float = DEFAULT_HISTOGRAM_THRESHOLD,
        hash_threshold: int = DEFAULT_HASH_THRESHOLD,
    ) -> None:
        self.histogram_threshold = histogram_threshold
        self.hash_threshold = hash_threshold
        self._last: tuple[npt.NDArray[np.float64], str, bool] | None = None

    def reset(self) -> None:
        self._last = None

    def is_new_scene(self, image: Image) -> bool:
        flat = float(np.asarray(image.convert("L").resize(_THUMB), dtype=np.float64).std()) < FLAT_STD
        current = (colour_histogram(image), perceptual_hash(image), flat)
        last, self._last = self._last, current
        if last is None:
            return True
        structure_moved = not (last[2] and current[2]) and hash_distance(last[1], current[1]) > self.hash_threshold
        changed = histogram_distance(last[0], current[0]) > self.histogram_threshold or structure_moved
        if not changed:
            self._last = last  # compare with the last *kept* frame
        return changed


class EmbeddingChangeDetector:
    """Keeps a frame when its embedding's cosine distance to the last kept one is large."""

    def __init__(
        self,
        embed: Callable[[Image], Sequence[float] | npt.NDArray[np.floating]],
        *,
        threshold: float = DEFAULT_EMBEDDING_THRESHOLD,
    ) -> None:
        self.embed = embed
        self.threshold = threshold
        self._last: npt.NDArray[np.float64] | None = None

    def reset(self) -> None:
        self._last = None

    def is_new_scene(self, image: Image) -> bool:
        vector = np.asarray(self.embed(image), dtype=np.float64).reshape(-1)
        norm = np.linalg.norm(vector)
        vector = vector / norm if norm else vector
        if self._last is not None and 1.0 - float(vector @ self._last) <= self.threshold:
            return False
        self._last = vector
        return True
