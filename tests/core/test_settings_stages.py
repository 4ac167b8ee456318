"""Each setting belongs to one stage (``omnimem.config.STAGES``), and docs/configuration.md documents it there."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

from omnimem.config import STAGES, Settings

PAGE = (Path(__file__).resolve().parents[2] / "docs" / "configuration.md").read_text(encoding="utf-8")


def test_every_setting_is_in_one_stage_in_the_order_of_the_fields() -> None:
    staged = [name for names in STAGES.values() for name in names]
    assert staged == [f.name for f in fields(Settings)]  # each once, and Settings lists them stage by stage


def _sections() -> dict[str, str]:
    """The reference page's ``### Stage`` sections, by heading, up to the next heading."""
    parts = re.split(r"^(#{2,3}) (.+)$", PAGE, flags=re.M)
    return {parts[i + 1].strip(): parts[i + 2] for i in range(1, len(parts) - 2, 3) if parts[i] == "###"}


def test_the_reference_page_has_each_setting_in_its_stages_table_only() -> None:
    sections = _sections()
    assert list(STAGES) == [title for title in sections if title in STAGES]  # in the same order
    for stage, names in STAGES.items():
        rows = re.findall(r"^\| `([a-z_]+)` \|", sections[stage], re.M)
        assert rows == list(names), f"docs/configuration.md, {stage}: {rows} instead of {list(names)}"


def _shown(value: object) -> str:
    """A default as the page writes it: TOML's spelling in backticks, ``none`` where TOML has none."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    return f'`"{value}"`' if isinstance(value, str) else f"`{value}`"


def test_the_reference_pages_defaults_are_the_settings_defaults() -> None:
    defaults = Settings()
    shown = dict(re.findall(r"^\| `([a-z_]+)` \| ([^|]+) \|", PAGE, re.M))
    for f in fields(Settings):
        assert shown[f.name].strip() == _shown(getattr(defaults, f.name)), f"docs/configuration.md: {f.name}"
