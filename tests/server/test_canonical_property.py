"""Canonical bytes on random documents: ``canonical(value, fast_ok=inspect_value(value))`` is
byte-identical to the RFC 8785 reference (``rfc8785``) whichever path it takes.

The documents mix nested objects and arrays, keys and strings from the whole of Unicode
(astral characters, the code points around the surrogate range, control characters), integers
up to ±(2**53 - 1) and floats drawn to hit the notation boundaries of both serializers (around
1e-7, 1e-6, 1e-5, 1e16, 1e21, whole numbers, subnormals, any bit pattern). CI runs a few
hundred documents; ``AGENTLEDGER_CANONICAL_EXAMPLES=100000`` runs a hundred thousand (with
``--timeout=0``: that takes longer than the suite's per-test timeout).
"""

from __future__ import annotations

import math
import os
import struct
from typing import Any

import rfc8785
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentledger.server._canonical import MAX_SAFE_INTEGER, canonical, inspect_value

EXAMPLES = int(os.environ.get("AGENTLEDGER_CANONICAL_EXAMPLES", "600"))

_BOUNDARIES = [1e-7, 1e-6, 1e-5, 1e-4, 1.0, 2.0**52, 2.0**53, 1e15, 1e16, 1e17, 1e20, 1e21, 1e22]


def _near(value: float, steps: int) -> float:
    for _ in range(abs(steps)):
        value = math.nextafter(value, math.inf if steps > 0 else -math.inf)
    return value


_bit_floats = st.integers(min_value=0, max_value=2**64 - 1).map(
    lambda bits: struct.unpack("<d", struct.pack("<Q", bits))[0]
)
_boundary_floats = st.builds(
    lambda base, steps, sign: sign * _near(base, steps),
    st.sampled_from(_BOUNDARIES),
    st.integers(min_value=-3, max_value=3),
    st.sampled_from([1.0, -1.0]),
)
_scaled_floats = st.builds(
    lambda mantissa, exponent: mantissa * 10.0**exponent,
    st.floats(min_value=-10.0, max_value=10.0, allow_nan=False),
    st.integers(min_value=-330, max_value=300),
)
_floats = (
    st.floats(allow_nan=False, allow_infinity=False)
    | _bit_floats.filter(math.isfinite)
    | _boundary_floats
    | _scaled_floats.filter(math.isfinite)
    | st.integers(min_value=-(2**60), max_value=2**60).map(float)
    | st.sampled_from([0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, 812.345, 0.1])
)
_characters = st.characters(exclude_categories=("Cs",)) | st.sampled_from(
    ["\x00", "\x1f", "\x7f", '"', "\\", "\u2028", "\ud7ff", "\ue000", "\uffff", "\U00010000"]
)
_text = st.text(_characters, max_size=12)
_ints = st.integers(min_value=-MAX_SAFE_INTEGER, max_value=MAX_SAFE_INTEGER)
_scalars = st.none() | st.booleans() | _ints | _text | _floats
_documents = st.dictionaries(
    _text,
    st.recursive(
        _scalars,
        lambda children: (
            st.lists(children, max_size=5) | st.dictionaries(_text, children, max_size=5)
        ),
        max_leaves=25,
    ),
    max_size=6,
)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=EXAMPLES <= 1000,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(_documents)
def test_canonical_bytes_equal_the_reference(document: dict[str, Any]) -> None:
    fast_ok = inspect_value(document, max_depth=64)
    assert canonical(document, fast_ok=fast_ok) == rfc8785.dumps(document)


@settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES <= 1000)
@given(_floats)
def test_every_float_equals_the_reference(value: float) -> None:
    document = {"f": value, "nested": [value]}
    fast_ok = inspect_value(document, max_depth=8)
    assert canonical(document, fast_ok=fast_ok) == rfc8785.dumps(document)
