"""Image, audio and video adds: the media rules that decide what is handed to the writer, and in which batches.

An image is captioned (``enrich="sync"`` with vision captions) and stored
unless it is a near-duplicate of a recent image of its scope, a check the
writer runs under its write lock so no other add slips in between. Audio is
transcribed segment by segment and handed over 16 segments at a time, one
media chain across the batches. A video becomes its event unit, its
scene-change frames and its speech, in one batch.
"""

from __future__ import annotations

from dataclasses import replace

from omnimem.engine.ingest import media
from omnimem.results import MediaResult
from omnimem.engine.ingest.pipeline import Progress
from omnimem.results import AddResult
from omnimem.engine.ingest.prepare import Pending
from omnimem.engine.deps import Deps
from omnimem.engine.writer import Writer
from omnimem.engine.writer.written import Verdict
from omnimem.mau import Modality, Scope
from omnimem.contract.providers import create_provider

AUDIO_BATCH = 16  # speech segments handed to the writer at a time: a long recording is searchable as it goes


def add_image(deps: Deps, writer: Writer, item: Pending, phash: str, data: bytes, captioned: bool) -> AddResult:
    """One image unit, unless it is the same file or a near-duplicate of a recent image of its scope."""
    if not captioned and deps.settings.vision_captions and deps.llm is not None and deps.settings.enrich == "sync":
        captioner = create_provider("captioner", "vision-llm", llm=deps.llm)
        described = captioner.caption(data, str(item.metadata["mime"]))
        item = replace(item, text=described, metadata={**item.metadata, "caption": "vision-llm"})
    return writer.add_unless(item, lambda: near_duplicate(deps, item, phash))


def near_duplicate(deps: Deps, item: Pending, phash: str) -> Verdict | None:
    """Why ``item`` is not stored, if a recent image of its scope looks the same (the very same file is
    left to the write path, which reports it as a duplicate)."""
    if deps.store.find_hashes([item.content_hash]):
        return None
    from omnimem.media import hash_distance, is_near_duplicate

    for unit_id, meta in deps.store.recent_metadata(item.scope, Modality.IMAGE, deps.settings.novelty_window * 5):
        other = meta.get("phash")
        if other and is_near_duplicate(phash, other):
            distance = hash_distance(phash, other)
            return (AddResult(None, False, f"near-duplicate image (phash distance {distance})", None, unit_id),
                    {"image_near_duplicate": 1})
    return None


def add_audio(deps: Deps, writer: Writer, audio: media.Source, time: object, scope: Scope,
              progress: Progress | None) -> MediaResult:
    """Speech segments streamed into units, :data:`AUDIO_BATCH` at a time (see :meth:`Memory.add_audio`)."""
    stats: dict[str, float] = {}
    results: list[AddResult] = []
    batch: list[Pending] = []
    for item in media.audio_items(audio, time=time, scope=scope, tz=deps.tz, stats=stats,
                                  max_seconds=deps.settings.max_media_seconds,
                                  transcriber=create_provider("transcriber", "whisper"),
                                  detector=create_provider("vad", "silero")):
        batch.append(item)
        if len(batch) >= AUDIO_BATCH:
            results.extend(writer.add(batch, progress, keep_chain=bool(results)))
            batch = []
    if batch:
        results.extend(writer.add(batch, progress, keep_chain=bool(results)))
    writer.add_stats({k: v for k, v in stats.items() if k != "speech_segments"})
    return MediaResult(tuple(results), stats)


def add_video(deps: Deps, writer: Writer, video: media.Source, time: object, scope: Scope, fps: float,
              max_frames: int) -> MediaResult:
    """A video event unit, its scene-change frames and its speech (see :meth:`Memory.add_video`)."""
    detector = None
    if deps.clip is not None:  # scene changes judged by CLIP embeddings instead of pixels
        from omnimem.media.scene import EmbeddingChangeDetector

        clip = deps.clip.embedder
        detector = EmbeddingChangeDetector(lambda image: clip.embed_images([image])[0])
    items, stats, event_id = media.video_items(
        video, time=time, scope=scope, tz=deps.tz, fps=fps, max_frames=max_frames, detector=detector,
        max_pixels=deps.settings.max_media_pixels, max_seconds=deps.settings.max_media_seconds,
    )
    results = writer.add(items)
    if not results[0].accepted:  # the same video again: nothing new was stored
        return MediaResult(tuple(results), stats, results[0].duplicate_of)
    writer.add_stats(stats)
    return MediaResult(tuple(results), stats, event_id)
