"""Old path of :mod:`agentledger.cases`; every name is re-exported from there on first use."""

from __future__ import annotations

from typing import Any

from agentledger import cases as _cases

__all__ = list(_cases.__all__)


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(_cases, name)
