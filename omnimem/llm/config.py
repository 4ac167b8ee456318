"""Where the LLM settings come from: arguments, then ``OMNIMEM_LLM_*``, then a file.

Every field of :class:`LLMConfig` can be set three ways, and the first one
present wins:

1. a keyword argument to :meth:`LLMConfig.resolve`;
2. the environment variable ``OMNIMEM_LLM_<FIELD>`` (``OMNIMEM_LLM_BASE_URL``,
   ``OMNIMEM_LLM_MODEL``, ``OMNIMEM_LLM_API_KEY``, ``OMNIMEM_LLM_TIMEOUT``, ...);
3. the ``[llm]`` table of a TOML file named by ``config_path=`` or by the
   ``OMNIMEM_CONFIG`` environment variable.

No endpoint and no model anywhere means "no LLM": :meth:`LLMConfig.resolve`
returns ``None`` and omnimem runs its LLM-free paths.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, cast

from omnimem.config import layered, read_config_file
from omnimem.errors import ConfigError

JsonMode = Literal["json_schema", "json_object", "text"]
JSON_MODES: tuple[JsonMode, ...] = ("json_schema", "json_object", "text")

OPENAI_BASE_URL = "https://api.openai.com/v1"
ENV_PREFIX = "OMNIMEM_LLM_"
CONFIG_PATH_ENV = "OMNIMEM_CONFIG"


@dataclass(frozen=True)
class LLMConfig:
    """Settings for one OpenAI-compatible chat endpoint.

    The defaults suit a real server; tests shrink ``timeout`` and the backoff
    so failure paths run in milliseconds.
    """

    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    timeout: float = 60.0
    """Seconds to wait for one HTTP request before it counts as failed."""
    max_retries: int = 3
    """Extra attempts after a 429, a 5xx, a timeout or a refused connection."""
    concurrency: int = 4
    """Most requests in flight at once from one provider (local servers queue badly)."""
    backoff_base: float = 0.5
    """First retry waits about this long; each later one doubles it."""
    backoff_max: float = 20.0
    """Cap on any single wait, including a server's Retry-After."""
    json_mode: JsonMode = "json_schema"
    """Structured-output mode to try first; set it when you know your server."""
    max_tokens: int = 4096
    """Reply cap sent when a caller names none (the enrichment calls); a reply is cut near its cap."""

    def __post_init__(self) -> None:
        problems: list[str] = []
        if not self.base_url:
            problems.append("base_url must not be empty")
        if not self.model:
            problems.append("model must not be empty")
        if self.timeout <= 0:
            problems.append(f"timeout must be > 0, got {self.timeout}")
        if self.max_retries < 0:
            problems.append(f"max_retries must be >= 0, got {self.max_retries}")
        if self.concurrency < 1:
            problems.append(f"concurrency must be >= 1, got {self.concurrency}")
        if self.backoff_base < 0 or self.backoff_max < 0:
            problems.append("backoff_base and backoff_max must be >= 0")
        if self.max_tokens < 1:
            problems.append(f"max_tokens must be >= 1, got {self.max_tokens}")
        if self.json_mode not in JSON_MODES:
            problems.append(f"json_mode must be one of {JSON_MODES}, got {self.json_mode!r}")
        if problems:
            raise ConfigError("invalid LLM settings: " + "; ".join(problems))

    @classmethod
    def resolve(
        cls,
        *,
        base_url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
        concurrency: int | None = None,
        backoff_base: float | None = None,
        backoff_max: float | None = None,
        json_mode: JsonMode | None = None,
        max_tokens: int | None = None,
        config_path: str | os.PathLike[str] | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> LLMConfig | None:
        """Merge arguments > environment > config file; ``None`` if no LLM is set up.

        ``None`` arguments mean "not given", so callers can pass their own
        optional parameters straight through. ``environ`` defaults to
        ``os.environ`` and exists so callers can resolve against a snapshot.

        Only a model, without a base URL, means OpenAI itself. A base URL
        without a model is a :class:`~omnimem.errors.ConfigError`: guessing a
        model name would fail later and further from the cause.
        """
        env = os.environ if environ is None else environ
        arguments: dict[str, object] = {
            "base_url": base_url,
            "model": model,
            "api_key": api_key,
            "timeout": timeout,
            "max_retries": max_retries,
            "concurrency": concurrency,
            "backoff_base": backoff_base,
            "backoff_max": backoff_max,
            "json_mode": json_mode,
            "max_tokens": max_tokens,
        }
        file_values = _read_config_file(config_path or env.get(CONFIG_PATH_ENV) or None)
        found = layered(arguments, arguments=arguments, env_prefix=ENV_PREFIX, file_values=file_values, environ=env)
        merged = {name: _coerce(name, value, "config file [llm]" if source == "config file" else source)
                  for name, (value, source) in found.items()}

        if merged.get("base_url") is None and merged.get("model") is None:
            return None
        if merged.get("model") is None:
            raise ConfigError(
                f"an LLM endpoint is configured ({merged['base_url']}) but no model: "
                f"set {ENV_PREFIX}MODEL, pass model=, or add model to [llm]"
            )
        merged.setdefault("base_url", OPENAI_BASE_URL)
        return cls(**merged)  # type: ignore[arg-type]  # values checked by _coerce


_FIELD_TYPES: dict[str, type[object]] = {
    "base_url": str,
    "model": str,
    "api_key": str,
    "timeout": float,
    "max_retries": int,
    "concurrency": int,
    "backoff_base": float,
    "backoff_max": float,
    "json_mode": str,
    "max_tokens": int,
}


_MINIMUM = {"concurrency": 1, "max_tokens": 1}  # numbers are >= 0, timeout > 0


def _coerce(name: str, value: object, source: str) -> object:
    """Turn a setting from any source into its field's type, naming the source on error."""
    wanted = _FIELD_TYPES[name]
    try:
        if wanted is str:
            if not isinstance(value, str):
                raise TypeError(f"expected a string, got {type(value).__name__}")
            text = value.strip()
            if name == "base_url":
                text = text.rstrip("/")
            if name == "json_mode" and text not in JSON_MODES:
                raise ValueError(f"expected one of {', '.join(JSON_MODES)}")
            return text
        if isinstance(value, bool):  # bool is an int; True retries is a typo
            raise TypeError("expected a number, got a boolean")
        if wanted is int:
            if isinstance(value, float) and not value.is_integer():
                raise ValueError("expected a whole number")
            number: float = int(cast(str | int | float, value))
        else:
            number = float(cast(str | int | float, value))
        low = _MINIMUM.get(name, 0)
        if not math.isfinite(number) or number < low or (name == "timeout" and number <= 0):
            raise ValueError(f"{name} must be {'> 0' if name == 'timeout' else f'>= {low}'} (and finite)")
        return number
    except (TypeError, ValueError, OverflowError) as exc:
        raise ConfigError(f"invalid LLM setting {name}={value!r} from {source}: {exc}") from exc


def _read_config_file(path: str | os.PathLike[str] | None) -> dict[str, object]:
    """Read the ``[llm]`` table; other tables belong to other parts of omnimem."""
    if path is None:
        return {}
    file = Path(path).expanduser()
    document = read_config_file(file)
    table = document.get("llm", {})
    if not isinstance(table, dict):
        raise ConfigError(f"config file {file}: [llm] must be a table")
    unknown = sorted(set(table) - set(_FIELD_TYPES))
    if unknown:
        raise ConfigError(
            f"config file {file}: unknown [llm] keys {unknown}; known: {sorted(_FIELD_TYPES)}"
        )
    return dict(table)
