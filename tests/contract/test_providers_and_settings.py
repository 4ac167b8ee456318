"""One provider registry for every kind, and one settings resolver (arguments > OMNIMEM_* > config file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from omnimem import Memory
from omnimem.embed import FakeEmbedder, create_embedder
from omnimem.errors import ConfigError
from omnimem.contract.providers import KINDS, Registry


def test_every_kind_has_built_ins_registered_like_plugins() -> None:
    registry = Registry(plugins=False)
    assert {kind: registry.names(kind) for kind in KINDS} == {
        "embedder": ["all-MiniLM-L6-v2", "all-MiniLM-L6-v2-int8", "fake", "fake-exact", "multilingual-e5-small"],
        "llm": ["fake", "openai"],
        "captioner": ["vision-llm"],
        "transcriber": ["whisper"],
        "vad": ["silero"],
        "graph_extractor": ["llm", "spacy"],
        "clip": ["clip"],
        "signal": [],  # ranking signals come from plugins only (tests/engine/retrieval/test_signal_plugins.py)
    }
    assert registry.canonical("embedder", "minilm") == "all-MiniLM-L6-v2"
    assert registry.create("transcriber", "whisper").name == "whisper"  # the model loads on first use
    assert isinstance(create_embedder("fake"), FakeEmbedder)


@pytest.mark.parametrize("kind", KINDS)
def test_one_duplicate_rule_for_every_kind(kind: str) -> None:
    registry = Registry(plugins=False)
    registry.register(kind, "mine", dict)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="already registered"):
        registry.register(kind, "mine", list)  # type: ignore[arg-type]
    registry.register(kind, "mine", list, replace=True)  # type: ignore[arg-type]
    assert registry.create(kind, "mine") == []  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="unknown .* provider 'nope'; registered: .*mine"):
        registry.create(kind, "nope")  # type: ignore[arg-type]


def test_entry_point_plugins_register_through_the_same_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "omnimem_demo_plugin.py").write_text(
        "from omnimem.embed import FakeEmbedder\n\n"
        "class Demo(FakeEmbedder):\n    name = 'demo-embedder'\n\n"
        "def register(registry):\n    registry.register('embedder', 'demo-embedder', lambda: Demo(dim=8))\n",
        encoding="utf-8")
    info = tmp_path / "omnimem_demo_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: omnimem-demo-plugin\nVersion: 1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[omnimem.providers]\ndemo = omnimem_demo_plugin:register\n",
                                           encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = Registry()
    assert "demo-embedder" in registry.names("embedder")
    assert registry.create("embedder", "demo-embedder").dim == 8


def test_a_config_file_reaches_core_and_llm_settings_with_one_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "omnimem.toml"
    config.write_text('top_k = 7\nbudget = 900\n\n[llm]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "from-file"\n'
                      'timeout = 5\n', encoding="utf-8")
    monkeypatch.setenv("OMNIMEM_BUDGET", "800")
    monkeypatch.setenv("OMNIMEM_LLM_TIMEOUT", "7")
    with Memory(embedder="fake", config_file=config, top_k=5) as m:
        assert (m.settings.top_k, m.settings.budget) == (5, 800)  # argument > environment > file
        assert m.llm is not None and m.llm.config.model == "from-file" and m.llm.config.timeout == 7.0
    with Memory(embedder="fake", config_file=config, llm=False) as m:
        assert m.llm is None


def test_path_and_url_choose_the_engine_and_do_not_mix(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="either path= .* or url="):
        Memory(tmp_path / "m", url="http://127.0.0.1:1")
    with pytest.raises(ConfigError, match="no engine serves"):
        Memory(url="mysql://localhost/db")
