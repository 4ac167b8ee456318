"""LLM providers by name, through the one registry (:mod:`omnimem.contract.providers`).

``create_llm("openai")`` reads settings the usual way (arguments, then
``OMNIMEM_LLM_*``, then the config file); ``create_llm("fake", script=...)``
builds the deterministic fake. Third-party providers call
:func:`register_llm` with their own factory.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from omnimem.llm.base import LLM
from omnimem.llm.config import LLMConfig
from omnimem.llm.errors import LLMNotConfiguredError
from omnimem.contract.providers import providers

if TYPE_CHECKING:  # the provider needs the openai SDK, so it is imported on use
    from omnimem.llm.provider import OpenAICompatibleLLM

LLMFactory = Callable[..., LLM]


def openai_from_settings(config: LLMConfig | None = None, **settings: Any) -> OpenAICompatibleLLM:
    """Build the OpenAI-compatible provider from ``config`` or resolved settings."""
    from omnimem.llm.provider import OpenAICompatibleLLM
    if config is None:
        config = LLMConfig.resolve(**settings)
    if config is None:
        raise LLMNotConfiguredError(
            "no LLM is configured: set OMNIMEM_LLM_BASE_URL and OMNIMEM_LLM_MODEL, "
            "or an [llm] table in the file named by OMNIMEM_CONFIG"
        )
    return OpenAICompatibleLLM(config)


def register_llm(name: str, factory: LLMFactory, *, replace: bool = False) -> None:
    """Make ``create_llm(name, ...)`` call ``factory(...)`` (see :mod:`omnimem.contract.providers`).

    Re-registering a name is an error unless ``replace=True``, so two plugins
    cannot silently shadow each other; the same rule holds for every kind.
    """
    providers.register("llm", name, factory, replace=replace)


def create_llm(name: str, **kwargs: Any) -> LLM:
    """Build the provider registered as ``name`` with ``kwargs``."""
    instance: LLM = providers.create("llm", name, **kwargs)
    return instance


def llm_names() -> list[str]:
    """Registered provider names, sorted."""
    return providers.names("llm")


def resolve_llm(
    llm: LLM | str | None = None, *, config_file: str | os.PathLike[str] | None = None, **settings: Any
) -> LLM | None:
    """What a facade's ``llm=`` argument means, in one place.

    An :class:`LLM` is used as is, a string names a registered provider, and
    ``None`` means "whatever the settings say", which may be no LLM at all.
    """
    if config_file is not None and (llm is None or llm == "openai"):  # Memory(config_file=...): its [llm] table
        settings = {"config_path": config_file, **settings}
    if llm is None:
        config = LLMConfig.resolve(**settings)
        return None if config is None else openai_from_settings(config)
    if isinstance(llm, str):
        return create_llm(llm, **settings)
    return llm
