"""Images, audio and video through Memory: units, cold tier, filters, level 3."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

import generate as gen
from omnimem import InvalidInputError, Memory, Modality
from omnimem.media.errors import CorruptMediaError, EmptyMediaError


@pytest.fixture
def disk(tmp_path: Path):
    with Memory(tmp_path / "mem", embedder="fake") as mem:
        yield mem


def cold_files(mem: Memory) -> list[Path]:
    assert mem.path is not None
    return [p for p in (mem.path / "cold").rglob("*") if p.is_file()]


def test_image_with_caption_is_searchable_and_its_bytes_come_back_at_level_3(disk: Memory, tmp_path: Path):
    path = tmp_path / "boat.jpg"
    path.write_bytes(gen.encode(gen.photo(1), "JPEG"))
    res = disk.add_image(path, "a red fishing boat in the harbour", user_id="u", time="2024-03-16T09:30")
    unit = disk.get(res.id)
    assert unit.modality is Modality.IMAGE and unit.summary == "a red fishing boat in the harbour"
    assert unit.metadata["filename"] == "boat.jpg" and unit.metadata["mime"] == "image/jpeg"
    assert (disk.path / "cold" / unit.raw_ref[:2] / unit.raw_ref).read_bytes() == path.read_bytes()
    ctx = disk.search("red fishing boat", user_id="u")
    hit = ctx.hits[0]
    assert hit.unit.id == res.id and hit.level == 3
    assert hit.raw is not None and hit.raw.data == path.read_bytes() and hit.raw.mime == "image/jpeg"
    assert "<image image/jpeg 320x240" in ctx.render() and ctx.tokens <= ctx.budget
    tight = disk.search("red fishing boat", user_id="u", budget=30)
    assert tight.hits[0].level < 3 and tight.hits[0].raw is None  # the image does not fit in 30 tokens


def test_image_without_caption_uses_exif_time_and_place(disk: Memory):
    data = gen.jpeg_with_exif(gen.photo(2), taken="2021:06:05 14:30:00", lat=(48, 51, 30.24), lon=(2, 17, 40.2))
    res = disk.add_image(data, user_id="u")
    unit = disk.get(res.id)
    assert unit.event_time == datetime(2021, 6, 5, 14, 30, tzinfo=timezone.utc)
    assert "taken 2021-06-05 14:30" in unit.summary and unit.metadata["location"][0] == pytest.approx(48.8584, abs=1e-3)
    explicit = disk.add_image(gen.jpeg_with_exif(gen.photo(6), taken="2021:06:05 14:30:00"), time="2022-01-01", user_id="u")
    assert disk.get(explicit.id).event_time == datetime(2022, 1, 1, tzinfo=timezone.utc)  # the caller wins over EXIF


def test_same_image_is_stored_once_and_near_duplicates_are_dropped(disk: Memory):
    data = gen.encode(gen.photo(3), "PNG")
    first = disk.add_image(data, "sunset over the bay", user_id="u")
    again = disk.add_image(data, "sunset over the bay", user_id="u")
    assert not again.accepted and again.duplicate_of == first.id
    near = disk.add_image(gen.near_duplicate(data), "another shot of the sunset", user_id="u")
    assert not near.accepted and "near-duplicate" in near.reason and near.duplicate_of == first.id
    other = disk.add_image(gen.encode(gen.photo(4), "PNG"), "a cat on a sofa", user_id="u")
    assert other.accepted
    assert len(cold_files(disk)) == 2
    filters = disk.stats()["filters"]
    assert filters["image_stored"] == 2 and filters["image_duplicate"] == 1 and filters["image_near_duplicate"] == 1


def test_bad_images_are_typed_errors_and_store_nothing(disk: Memory, tmp_path: Path):
    with pytest.raises(CorruptMediaError):
        disk.add_image(gen.encode(gen.photo(5), "PNG")[:200])
    with pytest.raises(EmptyMediaError):
        disk.add_image(b"")
    with pytest.raises(InvalidInputError):
        disk.add_image(tmp_path / "missing.png")
    assert disk.stats()["units"] == 0 and cold_files(disk) == []


def test_audio_keeps_only_speech_as_linked_segments(disk: Memory, speech_wav: Path, speech_track):
    res = disk.add_audio(speech_wav, user_id="u", time=datetime(2024, 5, 1, 9, 0, tzinfo=timezone.utc))
    units = [disk.get(i) for i in res.ids]
    assert len(units) >= 2 and all(u.modality is Modality.AUDIO for u in units)
    said = " ".join(u.summary.lower() for u in units)
    assert "purple" in said and "fox" in said
    assert units[1].links.prev_id == units[0].id and units[0].links.next_id == units[1].id
    first_span = speech_track.speech_spans[0]
    assert units[0].metadata["start_s"] <= first_span[1] and units[0].event_time.second >= 0
    assert res.stats["speech_seconds"] < res.stats["audio_seconds"]
    assert res.stats["silence_dropped_seconds"] > 3.0  # 1 s + 3 s noise + 2 s silence minus padding
    stats = disk.stats()["filters"]
    assert stats["audio_seconds"] == pytest.approx(speech_track.duration_s, abs=0.1)
    ctx = disk.search("quick brown fox lazy dog", user_id="u")
    top = ctx.hits[0]
    assert "fox" in top.unit.summary.lower() and top.level == 3 and top.raw.data[:4] == b"RIFF"
    again = disk.add_audio(speech_wav, user_id="u")
    assert not any(r.accepted for r in again.results)  # idempotent


def test_zero_length_audio_is_an_error(disk: Memory, tmp_path: Path):
    empty = tmp_path / "empty.wav"
    gen.sf.write(empty, gen.np.zeros(0, dtype="float32"), gen.RATE)
    with pytest.raises(InvalidInputError):
        disk.add_audio(empty)
    assert disk.stats()["units"] == 0


def test_video_event_frames_and_speech_are_linked(disk: Memory, speech_video: Path):
    res = disk.add_video(speech_video, user_id="u", time="2024-06-01T12:00")
    event = disk.get(res.event_id)
    assert event.modality is Modality.VIDEO and "3 scene(s)" in event.summary and "purple" in event.summary.lower()
    children = [disk.get(i) for i in res.ids if i != res.event_id]
    frames = [u for u in children if u.modality is Modality.IMAGE]
    speech = [u for u in children if u.modality is Modality.AUDIO]
    assert [f.metadata["timestamp_s"] for f in frames] == [0.0, 3.0, 6.0]
    assert all(u.metadata["parent_id"] == res.event_id for u in children)
    assert frames[1].links.prev_id == frames[0].id
    assert frames[1].event_time == datetime(2024, 6, 1, 12, 0, 3, tzinfo=timezone.utc)
    assert speech and "purple" in speech[0].summary.lower()
    assert res.stats["frames_sampled"] == 9 and res.stats["frames_kept"] == 3
    assert disk.stats()["filters"]["frames_kept"] == 3
    again = disk.add_video(speech_video, user_id="u")
    assert again.event_id == res.event_id and not any(r.accepted for r in again.results)


def test_forget_removes_media_from_the_cold_tier(disk: Memory, speech_video: Path):
    disk.add_video(speech_video, user_id="gone")
    disk.add_image(gen.encode(gen.photo(7), "PNG"), "kept photo", user_id="stays")
    disk.forget(user_id="gone")
    assert len(cold_files(disk)) == 1
    assert all(h.unit.user_id == "stays" for h in disk.search("purple frame video").hits)


def test_cli_media_commands(tmp_path: Path, speech_wav: Path, monkeypatch):
    import json

    from typer.testing import CliRunner

    from omnimem.cli.commands import app

    monkeypatch.setenv("OMNIMEM_EMBEDDER", "fake")
    store = str(tmp_path / "mem")
    image = tmp_path / "kayak.png"
    image.write_bytes(gen.encode(gen.photo(8), "PNG"))
    runner = CliRunner()
    res = runner.invoke(app, ["add-image", str(image), "--caption", "a red kayak", "--store", store, "--json"])
    assert res.exit_code == 0, res.output and json.loads(res.stdout)["accepted"]
    res = runner.invoke(app, ["add-audio", str(speech_wav), "--store", store, "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["stats"]["speech_segments"] >= 2
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"not an image")
    res = runner.invoke(app, ["add-image", str(bad), "--store", store])
    assert res.exit_code != 0 and res.stderr.startswith("error: ")
    stats = json.loads(runner.invoke(app, ["stats", "--store", store, "--json"]).stdout)
    assert stats["by_modality"]["image"] == 1 and stats["filters"]["speech_seconds"] > 0
