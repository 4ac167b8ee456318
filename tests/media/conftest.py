"""Media fixtures: real files generated once per session (see generate.py).

Speech needs espeak-ng. Without it the speech tests skip with a reason,
unless OMNIMEM_REQUIRE_MEDIA_TOOLS=1, which turns the skip into a failure (CI).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import generate as gen


@pytest.fixture(scope="session", autouse=True)
def _offline() -> Iterator[None]:
    """Nothing in the media layer may reach the model hub."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        patch.setenv("TRANSFORMERS_OFFLINE", "1")
        yield


@pytest.fixture(scope="session")
def media_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("media")


@pytest.fixture(scope="session")
def espeak() -> None:
    if gen.have_espeak():
        return
    reason = "espeak-ng is not installed (apt-get install espeak-ng); speech tests need it"
    if os.environ.get("OMNIMEM_REQUIRE_MEDIA_TOOLS") == "1":
        pytest.fail(reason + " and OMNIMEM_REQUIRE_MEDIA_TOOLS=1")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def speech_track(espeak: None, media_dir: Path) -> gen.Track:
    """1 s silence, "purple elephant", 3 s low noise, a pangram, 2 s silence (~11 s)."""
    return gen.compose(
        [
            gen.silence(1.0),
            "purple elephant",
            gen.noise(3.0),
            "the quick brown fox jumps over the lazy dog",
            gen.silence(2.0),
        ],
        media_dir,
    )


@pytest.fixture(scope="session")
def speech_wav(speech_track: gen.Track, media_dir: Path) -> Path:
    path = media_dir / "speech.wav"
    gen.sf.write(path, speech_track.samples, gen.RATE)
    return path


@pytest.fixture(scope="session")
def speech_video(espeak: None, media_dir: Path) -> Path:
    """9 s, 10 fps, cuts at 3 s and 6 s, AAC track saying "my favourite colour is purple"."""
    track = gen.compose(
        [gen.silence(0.5), "my favourite colour is purple", gen.silence(1.0)], media_dir
    )
    return gen.make_video(media_dir / "scenes.mp4", audio=track.samples)


@pytest.fixture(scope="session")
def silent_video(media_dir: Path) -> Path:
    return gen.make_video(media_dir / "silent.mp4")


@pytest.fixture(scope="session")
def tiny_clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A randomly initialised, tiny CLIP checkpoint with a real (tiny) BPE tokenizer.

    It covers the loading and embedding code path; its vectors mean nothing.
    """
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    folder = tmp_path_factory.mktemp("tiny-clip")
    vocab, merges = _tiny_bpe()
    tokenizer = transformers.CLIPTokenizer(vocab=vocab, merges=merges)
    tokenizer.save_pretrained(folder)
    processor_cls = getattr(transformers, "CLIPImageProcessorPil", None) or (
        transformers.CLIPImageProcessor
    )
    processor_cls(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}).save_pretrained(
        folder
    )
    text = dict(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
        vocab_size=len(vocab), max_position_embeddings=77,
        bos_token_id=vocab["<|startoftext|>"], eos_token_id=vocab["<|endoftext|>"],
        pad_token_id=vocab["<|endoftext|>"],
    )
    vision = dict(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
        image_size=32, patch_size=8,
    )
    config = transformers.CLIPConfig(text_config=text, vision_config=vision, projection_dim=16)
    torch.manual_seed(0)
    transformers.CLIPModel(config).save_pretrained(folder)
    return folder


def _tiny_bpe() -> tuple[dict[str, int], list[tuple[str, str]]]:
    """CLIP-style byte-level BPE: every byte, every byte + "</w>", a few merges."""
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    chars, extra = list(printable), 0
    for byte in range(256):
        if byte not in printable:
            chars.append(256 + extra)
            extra += 1
    symbols = [chr(c) for c in chars]  # GPT-2's byte -> unicode symbols
    merges = [("t", "h"), ("th", "e</w>"), ("d", "o"), ("do", "g</w>"), ("c", "a"), ("ca", "t</w>")]
    tokens = ["<|startoftext|>", "<|endoftext|>", *symbols, *(s + "</w>" for s in symbols)]
    tokens += [a + b for a, b in merges]
    return {token: index for index, token in enumerate(tokens)}, merges
