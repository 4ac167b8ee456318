"""The README's install line is true here and says how to get the CPU torch elsewhere; the sample it names ships."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _prose() -> str:
    return " ".join(README.split())


def test_the_readme_says_how_to_get_the_cpu_build_of_the_torch_it_pins() -> None:
    first = re.search(r"```bash\n(.*?)```", README, re.S)
    assert first is not None
    pinned = re.search(r"pip install (torch==\S+)", first.group(1))
    assert pinned is not None  # the command that is true on this machine stays as it is
    said = _prose()
    assert f"{pinned.group(1)} --index-url https://download.pytorch.org/whl/cpu" in said
    assert "PyPI's `torch` is the multi-GB CUDA build" in said
    assert "pip's configured index serves the CPU wheel" in said
    assert "takes the local CPU wheel" not in said  # the old claim, true only here


def test_the_sample_the_readme_names_ships_in_the_wheel() -> None:
    named = re.search(r"`(omnimem/[^`]*sample_conversation\.jsonl)`", README)
    assert named is not None and (ROOT / named.group(1)).is_file()
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-data"]
    package, name = named.group(1).rsplit("/", 1)
    assert name in data[package.replace("/", ".")]
