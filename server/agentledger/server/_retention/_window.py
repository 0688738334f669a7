"""Retention windows as text: ``30d``, ``12h``, ``90m``, ``45s``, ``2w``.

A window is a whole positive number and one unit (``s``, ``m``, ``h``, ``d``, ``w``); zero,
negative numbers, fractions, other units and anything longer than 100 years are refused with
:class:`WindowError`, whose message names the value.
"""

from __future__ import annotations

import re
from datetime import timedelta

from agentledger.protocol.errors import LedgerError

__all__ = ["MAX_WINDOW", "WindowError", "format_window", "parse_window"]

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_PATTERN = re.compile(r"^([0-9]{1,9})([smhdw])$")
#: The longest window accepted (a typo such as ``30000d`` is refused rather than kept).
MAX_WINDOW = timedelta(days=36_500)


class WindowError(LedgerError, ValueError):
    """A retention window that is not a positive whole number with a unit."""


def parse_window(text: str) -> int:
    """The window ``text`` in seconds.

    Raises:
        WindowError: ``text`` is malformed, zero, negative or longer than :data:`MAX_WINDOW`.
    """
    match = _PATTERN.match(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise WindowError(
            f"keep: {text!r} is not a retention window; use a positive whole number and a "
            "unit s, m, h, d or w (e.g. 30d, 12h)"
        )
    seconds = int(match.group(1)) * _UNITS[match.group(2)]
    if seconds <= 0:
        raise WindowError(f"keep: {text!r} is zero; a retention window must be positive")
    if seconds > MAX_WINDOW.total_seconds():
        raise WindowError(f"keep: {text!r} is longer than {MAX_WINDOW.days} days")
    return seconds


def format_window(seconds: int) -> str:
    """``seconds`` in the largest of ``d``, ``h``, ``m`` that divides it (``30d``, ``90m``)."""
    for unit in ("d", "h", "m"):
        if seconds % _UNITS[unit] == 0:
            return f"{seconds // _UNITS[unit]}{unit}"
    return f"{seconds}s"
