"""The lenient field access every ``from_wire`` shares."""

from __future__ import annotations

from typing import Any

__all__ = ["value_or"]


def value_or(obj: dict[str, Any], key: str, default: Any = None) -> Any:
    """``obj[key]``, or ``default`` when the key is missing or its value is ``None``."""
    value = obj.get(key, default)
    return default if value is None else value
