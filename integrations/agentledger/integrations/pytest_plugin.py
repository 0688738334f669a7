"""Old path of :mod:`agentledger.cases.pytest_plugin` (the ``pytest11`` entry point now names
the new one); the same names, re-exported."""

from __future__ import annotations

from typing import Any

from agentledger.cases import pytest_plugin as _plugin
from agentledger.cases.pytest_plugin import (
    LIBRARY_NAMES,
    CaseFailed,
    CaseItem,
    pytest_addoption,
    pytest_collection_modifyitems,
    pytest_unconfigure,
)

__all__ = [
    "LIBRARY_NAMES",
    "CaseFailed",
    "CaseItem",
    "pytest_addoption",
    "pytest_collection_modifyitems",
    "pytest_unconfigure",
]


def __getattr__(name: str) -> Any:
    """The library API (``check``, ``Case``...), as from the new module."""
    return getattr(_plugin, name)
