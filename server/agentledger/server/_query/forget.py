"""What ``forget`` erases: events whose ``data`` or ``metadata`` holds
``filter_key == filter_value``, and session ids that name the value.

The rule for events: at any depth of ``data`` or ``metadata`` (nested objects and lists), a member
named ``filter_key`` whose value equals ``filter_value``, or is a list holding such a value.
Values compare as text: a string as itself, a number by its RFC 8785 (JCS) form, so ``"42"``
matches ``42`` and ``42.0``; ``true``/``false``/``null`` by their JSON literals.

:func:`prefilters` gives byte substrings that every matching canonical record must contain
(the stored ``record`` is RFC 8785 JSON: no whitespace, fixed escaping), so the store can
narrow candidates with ``LIKE`` before the exact check of :class:`ForgetMatcher` in Python.

The rule for session ids (:func:`agentledger.protocol.subjects.names_value`): the id contains
the value as a whole token, bounded by the ends of the id or by characters that are neither
letters nor digits (``chat-alice@example.com`` names ``alice@example.com``; ``sess-u-23``
does not name ``u-2``).
"""

from __future__ import annotations

import math
from typing import Any

from agentledger.server._canonical import canonical_reference

__all__ = ["SEARCHED", "ForgetMatcher", "prefilters", "value_text"]

#: The parts of a record forget looks into for ``filter_key == filter_value``.
SEARCHED = ("data", "metadata")


def _number_text(text: str) -> str | None:
    """The JCS text of ``text`` read as a JSON number, or ``None``."""
    try:
        number: int | float = int(text)
    except ValueError:
        try:
            number = float(text)
        except ValueError:
            return None
        if not math.isfinite(number):
            return None
    try:
        return canonical_reference(number).decode()
    except (ValueError, TypeError, OverflowError):
        return None


def value_text(value: Any) -> str | None:
    """A JSON scalar as text: strings as is, numbers in JCS form, ``true``/``false``/``null``;
    ``None`` for objects and lists."""
    if isinstance(value, str):
        return value
    if value is None or isinstance(value, bool):
        return "null" if value is None else ("true" if value else "false")
    if isinstance(value, int | float):
        try:
            return canonical_reference(value).decode()
        except (ValueError, TypeError, OverflowError):
            return None
    return None


class ForgetMatcher:
    """Decides whether an event's ``data`` matches a forget filter.

    Args:
        filter_key: the member name to look for (non-empty).
        filter_value: the value, as text (numbers compare by their JCS form).
    """

    def __init__(self, filter_key: str, filter_value: str) -> None:
        self.key = filter_key
        self.value = filter_value
        self._number = _number_text(filter_value)

    def _equal(self, value: Any) -> bool:
        if isinstance(value, list):
            return any(self._equal(item) for item in value if not isinstance(item, list | dict))
        text = value_text(value)
        if text is None:
            return False
        if text == self.value:
            return True
        return (
            self._number is not None
            and isinstance(value, int | float)
            and not isinstance(value, bool)
            and text == self._number
        )

    def matches(self, data: Any) -> bool:
        """Whether ``data`` holds the key with the value at any depth."""
        stack = [data]
        while stack:
            node = stack.pop()
            if isinstance(node, dict):
                for key, value in node.items():
                    if key == self.key and self._equal(value):
                        return True
                    if isinstance(value, dict | list):
                        stack.append(value)
            elif isinstance(node, list):
                stack.extend(item for item in node if isinstance(item, dict | list))
        return False

    def matched_in(self, record: Any) -> list[str]:
        """The parts of a stored record (:data:`SEARCHED`) that hold the key with the value."""
        if not isinstance(record, dict):
            return []
        return [part for part in SEARCHED if self.matches(record.get(part))]


def prefilters(filter_key: str, filter_value: str) -> tuple[bytes, tuple[bytes, ...]]:
    """``(key pattern, value patterns)``: a matching record contains the key pattern and at
    least one value pattern, as bytes of its canonical JSON.

    The key pattern is the JCS form of the key followed by ``:``; the value patterns are the
    JCS string form of the value, plus its JCS number form when it reads as a number.
    """
    key = canonical_reference(filter_key) + b":"
    values = [canonical_reference(filter_value)]
    number = _number_text(filter_value)
    if number is not None:
        values.append(number.encode())
    if filter_value in ("true", "false", "null"):
        values.append(filter_value.encode())
    return key, tuple(values)
