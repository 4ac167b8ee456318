"""Where LLM settings come from: arguments > OMNIMEM_LLM_* > the [llm] table of a file."""

from __future__ import annotations

from pathlib import Path

import pytest

from omnimem.errors import ConfigError
from omnimem.llm import LLMConfig
from omnimem.llm.config import OPENAI_BASE_URL


def write_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "omnimem.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_nothing_configured_means_no_llm() -> None:
    assert LLMConfig.resolve() is None


def test_arguments_beat_environment_beat_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = write_config(
        tmp_path,
        """
        [llm]
        base_url = "http://file:1/v1"
        model = "file-model"
        api_key = "file-key"
        timeout = 5
        """,
    )
    monkeypatch.setenv("OMNIMEM_CONFIG", str(path))
    monkeypatch.setenv("OMNIMEM_LLM_MODEL", "env-model")
    monkeypatch.setenv("OMNIMEM_LLM_API_KEY", "env-key")

    config = LLMConfig.resolve(api_key="arg-key")

    assert config is not None
    assert config.api_key == "arg-key"  # argument
    assert config.model == "env-model"  # environment
    assert config.base_url == "http://file:1/v1"  # file
    assert config.timeout == 5.0  # file, as a float
    assert config.max_retries == 3  # default


def test_explicit_config_path_needs_no_environment(tmp_path: Path) -> None:
    path = write_config(
        tmp_path, '[llm]\nbase_url = "http://localhost:11434/v1/"\nmodel = "qwen3"\n'
    )
    config = LLMConfig.resolve(config_path=path)
    assert config is not None
    assert (config.base_url, config.model) == ("http://localhost:11434/v1", "qwen3")


def test_numbers_from_the_environment_are_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMNIMEM_LLM_BASE_URL", "http://localhost:8000/v1")
    monkeypatch.setenv("OMNIMEM_LLM_MODEL", "llama")
    monkeypatch.setenv("OMNIMEM_LLM_TIMEOUT", "2.5")
    monkeypatch.setenv("OMNIMEM_LLM_MAX_RETRIES", "0")
    monkeypatch.setenv("OMNIMEM_LLM_CONCURRENCY", "16")

    config = LLMConfig.resolve()

    assert config is not None
    assert (config.timeout, config.max_retries, config.concurrency) == (2.5, 0, 16)


def test_empty_environment_variables_count_as_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMNIMEM_LLM_BASE_URL", "")
    monkeypatch.setenv("OMNIMEM_LLM_MODEL", "")
    assert LLMConfig.resolve() is None


def test_a_model_alone_means_openai() -> None:
    config = LLMConfig.resolve(model="gpt-4o-mini")
    assert config is not None and config.base_url == OPENAI_BASE_URL


def test_an_endpoint_without_a_model_is_an_error() -> None:
    with pytest.raises(ConfigError, match="OMNIMEM_LLM_MODEL"):
        LLMConfig.resolve(base_url="http://localhost:1234/v1")


def test_a_bad_number_names_its_source(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMNIMEM_LLM_TIMEOUT", "soon")
    with pytest.raises(ConfigError, match=r"timeout='soon' from \$OMNIMEM_LLM_TIMEOUT"):
        LLMConfig.resolve(model="m")


@pytest.mark.parametrize(
    ("toml", "words"),
    [
        ('[llm]\nmodle = "typo"\n', "unknown \\[llm\\] keys \\['modle'\\]"),
        ("[llm\n", "not valid TOML"),
        ('[llm]\nmodel = "m"\nmax_retries = true\n', "boolean"),
        ('[llm]\nmodel = "m"\njson_mode = "yaml"\n', "json_mode"),
        ('[llm]\nmodel = "m"\nconcurrency = 0\n', "concurrency must be >= 1"),
    ],
    ids=["unknown-key", "bad-toml", "bool-as-int", "unknown-mode", "zero-concurrency"],
)
def test_invalid_files_are_config_errors(tmp_path: Path, toml: str, words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        LLMConfig.resolve(config_path=write_config(tmp_path, toml))


def test_a_missing_config_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        LLMConfig.resolve(config_path=tmp_path / "nope.toml")


def test_other_tables_in_the_file_are_ignored(tmp_path: Path) -> None:
    path = write_config(tmp_path, '[store]\npath = "x"\n')
    assert LLMConfig.resolve(config_path=path) is None


def test_the_api_key_stays_out_of_repr() -> None:
    config = LLMConfig(base_url="http://x/v1", model="m", api_key="sk-secret")
    assert "sk-secret" not in repr(config)
