"""RFC 8785 (JCS) canonical JSON of a stored record, with a fast path (orjson, sorted keys)
for every value whose orjson bytes are provably the RFC 8785 bytes, and :func:`inspect_value`,
which enforces the input limits and decides whether the fast path applies.

Design (why the fast path gives the same bytes): ``docs/design/server-chain.md``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import orjson
import rfc8785

from agentledger.protocol import limits
from agentledger.protocol.errors import LedgerError

__all__ = [
    "MAX_SAFE_INTEGER",
    "InputLimitError",
    "canonical",
    "canonical_fast",
    "canonical_reference",
    "float_fast_ok",
    "inspect_value",
    "key_fast_ok",
]

#: RFC 8785 section 3.2.2.3 / I-JSON: integers beyond ±(2**53 - 1) cannot round-trip.
MAX_SAFE_INTEGER = limits.MAX_SAFE_INTEGER

#: orjson writes ``1e-6 <= |x| < 1e-5`` in exponent form, ECMAScript in fixed form.
_EXPONENT_GAP = (1e-6, 1e-5)
#: The first code point outside the Basic Multilingual Plane: from here on a key's UTF-16
#: code units (RFC 8785's key order) no longer sort like its code points (orjson's order).
_ASTRAL = "\U00010000"


def float_fast_ok(value: float) -> bool:
    """Whether orjson prints the finite float ``value`` exactly as RFC 8785 does.

    Both print the shortest digit string that reads back as the same double (ties to the
    nearer one), so only the notation can differ: RFC 8785 (ECMAScript ``Number::toString``)
    prints whole numbers below 1e21 without a fraction (``2``, ``0`` for -0.0,
    ``10000000000000000`` for 1e16) where orjson writes ``2.0``, ``-0.0``, ``1e+16``; and
    ECMAScript keeps fixed notation down to 1e-6 where orjson switches to an exponent below
    1e-5. Every other float (non-whole, outside ``[1e-6, 1e-5)`` in magnitude) is
    byte-identical; ``tests/server/test_canonical_property.py`` pins it.
    """
    if value.is_integer():
        return False
    low, high = _EXPONENT_GAP
    return not low <= abs(value) < high


def key_fast_ok(key: str) -> bool:
    """Whether an object key sorts the same under RFC 8785 (UTF-16 code units) and orjson
    (code points): every key without a character beyond U+FFFF does."""
    return key.isascii() or max(key) < _ASTRAL


class InputLimitError(LedgerError, ValueError):
    """A JSON value breaks a limit; ``path`` locates the offending node (keys and indexes)."""

    def __init__(self, path: tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


def inspect_value(value: Any, *, max_depth: int) -> bool:
    """Check user JSON against the limits and say whether the fast path applies.

    Args:
        value: a parsed JSON value (dicts, lists, str, int, float, bool, None).
        max_depth: maximum container nesting (the value itself is depth 1 when a container).

    Returns:
        ``True`` when :func:`canonical_fast` is byte-identical to RFC 8785 for this value
        (every float passes :func:`float_fast_ok`, every key :func:`key_fast_ok`).

    Raises:
        InputLimitError: nesting deeper than ``max_depth``, an integer outside
            ±(2**53 - 1), a non-finite float, or a non-string key.
    """
    try:
        return _inspect_fast(value, 1, max_depth)
    except _Recheck:
        return _inspect_slow(value, max_depth)


class _Recheck(Exception):
    """Something unusual: the slow walk decides (and names the path)."""


def _inspect_fast(value: Any, depth: int, max_depth: int) -> bool:
    # Recursive walk over plain dicts/lists; anything unusual defers to _inspect_slow.
    if depth > max_depth:
        raise _Recheck
    fast = True
    kind = type(value)
    if kind is dict:
        children: Any = value.values()
        for key in value:
            if type(key) is not str:
                raise _Recheck
            if not key.isascii() and max(key) >= _ASTRAL:
                fast = False
    elif kind is list:
        children = value
    else:
        raise _Recheck
    for child in children:
        ckind = type(child)
        if ckind is str or ckind is bool or child is None:
            continue
        if ckind is int:
            if not -MAX_SAFE_INTEGER <= child <= MAX_SAFE_INTEGER:
                raise _Recheck
        elif ckind is float:
            if not math.isfinite(child):
                raise _Recheck
            if fast and not float_fast_ok(child):
                fast = False
        elif ckind is dict or ckind is list:
            if not _inspect_fast(child, depth + 1, max_depth):
                fast = False
        else:
            raise _Recheck
    return fast


def _inspect_slow(value: Any, max_depth: int) -> bool:
    fast = True
    stack: list[tuple[Any, int, tuple[str | int, ...]]] = [(value, 1, ())]
    while stack:
        node, depth, path = stack.pop()
        if isinstance(node, Mapping):
            items: Any = node.items()
        elif isinstance(node, list | tuple):
            items = enumerate(node)
        else:
            continue
        if depth > max_depth:
            raise InputLimitError(path, f"nested deeper than {max_depth} levels")
        for key, child in items:
            if isinstance(node, Mapping):
                if not isinstance(key, str):
                    raise InputLimitError(path, "object keys must be strings")
                if fast and not key_fast_ok(key):
                    fast = False
            if isinstance(child, bool) or child is None or isinstance(child, str):
                continue
            if isinstance(child, int):
                if not -MAX_SAFE_INTEGER <= child <= MAX_SAFE_INTEGER:
                    raise InputLimitError(
                        (*path, key),
                        "integer outside ±(2**53 - 1) (RFC 8785 / I-JSON); send it as a string",
                    )
            elif isinstance(child, float):
                if not math.isfinite(child):
                    raise InputLimitError((*path, key), "NaN and Infinity are not JSON")
                if fast and not float_fast_ok(child):
                    fast = False
            elif isinstance(child, Mapping | list | tuple):
                stack.append((child, depth + 1, (*path, key)))
    return fast


def canonical_reference(record: Any) -> bytes:
    """RFC 8785 canonical JSON by the ``rfc8785`` library (the reference)."""
    return bytes(rfc8785.dumps(record))


def canonical_fast(record: Any) -> bytes:
    """orjson with sorted keys: equal to RFC 8785 only for values :func:`inspect_value` cleared."""
    return orjson.dumps(record, option=orjson.OPT_SORT_KEYS)


def canonical(record: Any, *, fast_ok: bool) -> bytes:
    """Canonical JSON of ``record`` (RFC 8785).

    Args:
        record: the stored record (see the wire contract's hash chain section).
        fast_ok: the result of :func:`inspect_value` for the user parts of the record.
    """
    return canonical_fast(record) if fast_ok else canonical_reference(record)
