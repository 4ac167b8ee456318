"""The runnable example of each integration's page under docs/ runs as printed."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parents[2]


def example(page: str) -> str:
    """The first python block after the page's "## Runnable example" heading."""
    text = (ROOT / "docs" / page).read_text()
    section = text.split("## Runnable example", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found, f"docs/{page} has no python block under its runnable example"
    return found.group(1)


def run(page: str, tmp_path: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", example(page)], capture_output=True, text=True, timeout=300,
                         cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_opentelemetry_example(tmp_path: Path) -> None:
    out = run("opentelemetry.md", tmp_path)
    assert '"name": "omnimem.search"' in out and '"name": "omnimem.search.dense"' in out
    assert '"name": "agent step"' in out and out.rstrip().endswith("1 hit(s)")


def test_langchain_example(tmp_path: Path) -> None:
    out = run("langchain.md", tmp_path)
    assert "2024-03-02T10:00:00+00:00 True ana: I moved to Lisbon in March." in out
    assert "Human: where did ana move" in out and "System: Answer from these memories:" in out


def test_langgraph_example(tmp_path: Path) -> None:
    assert run("langgraph.md", tmp_path).strip() == "['I am allergic to peanuts']"


def test_openai_agents_example(tmp_path: Path) -> None:
    out = run("openai-agents.md", tmp_path)
    assert out.startswith("From memory: [2024-05-01 12:00]\nana: I am allergic to peanuts.\n")
    assert out.splitlines()[-4:] == ["user", "function_call", "function_call_output", "assistant"]


def test_llamaindex_example(tmp_path: Path) -> None:
    assert run("llamaindex.md", tmp_path).splitlines() == [
        "2024-03-02T10:00:00+00:00 True ana: I moved to Lisbon in March.", "True", "['my dog is called Rex']", "True"]


@pytest.mark.skipif(importlib.util.find_spec("crewai") is None, reason="crewai runs in its own venv: docs/crewai.md")
def test_crewai_example(tmp_path: Path) -> None:
    # crewai's event listener prints its own panels (Memory Saved) from another thread, at times in the middle of
    # the example's line: read the example's words with those panel lines taken out
    shown = " ".join(" ".join(line for line in run("crewai.md", tmp_path).splitlines()
                              if not line.startswith(("╭", "│", "╰"))).split())
    assert "crewai recalls: Ana prefers window seats on long flights /travel ['preference']" in shown
    assert "omnimem finds: Ana prefers window seats on long flights" in shown


def test_pydantic_ai_example(tmp_path: Path) -> None:
    lines = run("pydantic-ai.md", tmp_path).splitlines()
    assert lines[:4] == ["Saved: Remembered", "Memories that may be relevant:", "[2024-05-01 12:00]",
                         "ana: I am allergic to peanuts."]
    assert re.fullmatch(r"\[\d{4}-\d\d-\d\d \d\d:\d\d\]", lines[4]) and lines[5:] == ["ana: My sister is called Rita."]


def installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # its parent package (google) is missing too
        return False


@pytest.mark.skipif(not installed("google.adk"), reason="google-adk runs in its own venv: docs/adk.md")
def test_adk_example(tmp_path: Path) -> None:
    assert run("adk.md", tmp_path).splitlines() == [
        "assistant: Noted.", "assistant: Here is a peanut-free snack.",
        "the model was shown: ['user: I am allergic to peanuts.']", "user I am allergic to peanuts. 1"]


@pytest.mark.skipif(not installed("autogen_core"), reason="autogen runs in its own venv: docs/autogen.md")
def test_autogen_example(tmp_path: Path) -> None:
    assert run("autogen.md", tmp_path).splitlines() == [
        "assistant: Here is a peanut-free snack.",
        "the model was shown: Relevant memory content: ['Ana is allergic to peanuts.', '{\"seat\": \"window\"}']",
        "application/json {'seat': 'window'} 1", "text/plain Ana is allergic to peanuts. 2"]


def test_typescript_example_is_the_tested_file() -> None:
    """The TypeScript client's tests run examples/quickstart.ts against a live server; the page shows that file."""
    shown = re.search(r"```typescript\n(.*?)```", (ROOT / "docs" / "typescript.md").read_text(), re.S)
    assert shown and shown.group(1) == (ROOT / "clients" / "typescript" / "examples" / "quickstart.ts").read_text()
