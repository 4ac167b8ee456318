"""Language models for omnimem: one protocol, an OpenAI-compatible provider, a fake.

>>> from omnimem.llm import FakeLLM
>>> FakeLLM("hello").complete([{"role": "user", "content": "hi"}]).text
'hello'
"""

from typing import TYPE_CHECKING

from omnimem.llm.base import LLM, Completion, LLMUsage, Message
from omnimem.llm.config import JsonMode, LLMConfig
from omnimem.llm.errors import (
    LLMAuthError,
    LLMContextLengthError,
    LLMError,
    LLMModelNotFoundError,
    LLMNotConfiguredError,
    LLMResponseFormatError,
    LLMUnavailableError,
)
from omnimem.llm.fake import FakeLLM
from omnimem.llm.registry import create_llm, llm_names, register_llm, resolve_llm
from omnimem.llm.structured import extract_json

if TYPE_CHECKING:
    from omnimem.llm.provider import OpenAICompatibleLLM


def __getattr__(name: str) -> object:
    # The provider imports the openai SDK; load it only when someone asks for it.
    if name == "OpenAICompatibleLLM":
        from omnimem.llm.provider import OpenAICompatibleLLM

        return OpenAICompatibleLLM
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "LLM",
    "Completion",
    "FakeLLM",
    "JsonMode",
    "LLMAuthError",
    "LLMConfig",
    "LLMContextLengthError",
    "LLMError",
    "LLMModelNotFoundError",
    "LLMNotConfiguredError",
    "LLMResponseFormatError",
    "LLMUnavailableError",
    "LLMUsage",
    "Message",
    "OpenAICompatibleLLM",
    "create_llm",
    "extract_json",
    "llm_names",
    "register_llm",
    "resolve_llm",
]
