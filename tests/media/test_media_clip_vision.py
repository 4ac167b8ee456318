"""CLIP text-to-image search (tiny random checkpoint: covers the code path, not quality)
and vision-LLM captions through the real openai client over HTTP."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import generate as gen
from omnimem import Memory

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llm"))
from fake_openai import FakeOpenAIServer, chat  # noqa: E402


def test_clip_vectors_are_stored_searched_and_forgotten(tmp_path: Path, tiny_clip: Path, speech_video: Path):
    # shallow retrieval (two candidates per retriever, union) so that images only CLIP finds can show
    with Memory(tmp_path / "mem", embedder="fake", clip_model=str(tiny_clip), fusion="union", depth=2,
                neighbours=0) as mem:
        a = mem.add_image(gen.encode(gen.photo(11), "PNG"), "holiday snapshot one", user_id="u").id
        b = mem.add_image(gen.encode(gen.photo(12), "PNG"), "holiday snapshot two", user_id="u").id
        mem.add("a text note about dogs", user_id="u")
        rids, vectors = mem.store.clip_vectors(mem.clip.embedder.name)
        assert len(rids) == 2 and vectors.shape == (2, 16)
        ctx = mem.search("a dog", user_id="u")
        found_by_clip = {h.unit.id for h in ctx.hits if "clip" in h.sources}
        assert found_by_clip and found_by_clip <= {a, b}  # images the text retrievers did not bring
        assert mem.search("a dog", user_id="other").hits == ()  # scope filter applies to CLIP too
        video = mem.add_video(speech_video, user_id="u")  # scene changes judged by CLIP vectors
        assert video.stats["frames_kept"] >= 1
        mem.forget(user_id="u")
        assert len(mem.store.clip_vectors(mem.clip.embedder.name)[0]) == 0


@pytest.fixture(scope="module")
def vision_server():
    server = FakeOpenAIServer()
    server.start()
    yield server
    server.stop()


def test_vision_llm_captions_uncaptioned_images(tmp_path: Path, vision_server: FakeOpenAIServer):
    from omnimem.llm import LLMConfig, OpenAICompatibleLLM

    vision_server.reset()
    vision_server.push(chat("A red fishing boat moored in a small harbour."))
    llm = OpenAICompatibleLLM(LLMConfig(base_url=vision_server.url, model="vision", max_retries=0, timeout=5))
    with Memory(tmp_path / "mem", embedder="fake", llm=llm, vision_captions=True, enrich="sync") as mem:
        data = gen.encode(gen.photo(13), "JPEG")
        uid = mem.add_image(data, user_id="u").id
        unit = mem.get(uid)
        assert unit.summary == "A red fishing boat moored in a small harbour."
        assert unit.metadata["caption"] == "vision-llm"
        content = vision_server.requests[0]["messages"][0]["content"]
        assert content[1]["image_url"]["url"].startswith("data:image/jpeg;base64,")
        given = mem.add_image(gen.encode(gen.photo(14), "JPEG"), "my own caption", user_id="u")
        assert mem.get(given.id).summary == "my own caption" and len(vision_server.requests) == 1
    llm.close()


def test_vision_captions_are_queued_and_land_as_a_new_version(tmp_path: Path, vision_server: FakeOpenAIServer):
    from omnimem.llm import LLMConfig, OpenAICompatibleLLM

    vision_server.reset()
    vision_server.push(chat("A red fishing boat moored in a small harbour.", delay=0.3))
    llm = OpenAICompatibleLLM(LLMConfig(base_url=vision_server.url, model="vision", max_retries=0, timeout=5))
    with Memory(tmp_path / "mem", embedder="fake", llm=llm, vision_captions=True) as mem:
        uid = mem.add_image(gen.encode(gen.photo(13), "JPEG"), user_id="u").id
        assert mem.get(uid).metadata["caption"] is False  # stored at once with its offline description
        assert mem.flush(timeout=30)
        version = mem.get(mem.get(uid).superseded_by or "")
        assert version.summary == "A red fishing boat moored in a small harbour."
        assert version.metadata["caption"] == "vision-llm" and version.raw_ref == mem.get(uid).raw_ref
        assert [h.unit.id for h in mem.search("fishing boat harbour", user_id="u").hits] == [version.id]
    llm.close()
