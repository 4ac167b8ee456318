"""Lazy imports of optional media dependencies, with the extra to install."""

from __future__ import annotations

import importlib
from types import ModuleType

from omnimem.errors import missing_extra


def require(module: str, extra: str) -> ModuleType:
    """Import ``module`` or raise MissingDependencyError naming ``extra``."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise missing_extra(module, extra) from exc
