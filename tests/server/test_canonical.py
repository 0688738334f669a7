"""The orjson fast path of canonical JSON is byte-identical to RFC 8785 (``rfc8785``) wherever
``inspect_value`` allows it, and ``canonical`` always equals the reference."""

from __future__ import annotations

from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from agentledger.server._canonical import (
    MAX_SAFE_INTEGER,
    InputLimitError,
    canonical,
    canonical_fast,
    inspect_value,
)

# Every code point except lone surrogates (not representable in JSON text we accept).
_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=20)
_ascii_keys = st.text(st.characters(min_codepoint=0, max_codepoint=127), max_size=8)
_any_keys = _text
_ints = st.integers(min_value=-MAX_SAFE_INTEGER, max_value=MAX_SAFE_INTEGER)
_floats = st.floats(allow_nan=False, allow_infinity=False)


def _json(keys: st.SearchStrategy[str], with_floats: bool) -> st.SearchStrategy[Any]:
    scalars: st.SearchStrategy[Any] = st.none() | st.booleans() | _ints | _text
    if with_floats:
        scalars = scalars | _floats
    return st.recursive(
        scalars,
        lambda children: (
            st.lists(children, max_size=5) | st.dictionaries(keys, children, max_size=5)
        ),
        max_leaves=30,
    )


@settings(max_examples=250, deadline=None)
@given(st.dictionaries(_ascii_keys, _json(_ascii_keys, with_floats=False), max_size=6))
def test_fast_path_equals_rfc8785(value: dict[str, Any]) -> None:
    assert inspect_value(value, max_depth=64) is True
    assert canonical_fast(value) == rfc8785.dumps(value)


@settings(max_examples=250, deadline=None)
@given(st.dictionaries(_any_keys, _json(_any_keys, with_floats=True), max_size=6))
def test_canonical_always_equals_rfc8785(value: dict[str, Any]) -> None:
    fast_ok = inspect_value(value, max_depth=64)
    assert canonical(value, fast_ok=fast_ok) == rfc8785.dumps(value)


@pytest.mark.parametrize(
    "value",
    [
        {"f": 1.0},
        {"f": -0.0},
        {"f": 1e16},
        {"f": 1e21},
        {"f": 1e-6},
        {"f": 9.5e-6},
        {"nested": [{"x": 0.1, "y": 2.0}]},
        {"\U0001f600": 1, "\ufb01": 2},
    ],
)
def test_whole_floats_gap_floats_and_astral_keys_take_the_reference_path(
    value: dict[str, Any],
) -> None:
    assert inspect_value(value, max_depth=64) is False
    assert canonical(value, fast_ok=False) == rfc8785.dumps(value)


@pytest.mark.parametrize(
    "value",
    [
        {"duration_ms": 812.345},
        {"f": 5e-7},
        {"f": 1e-5},
        {"f": -0.5, "g": 5e-324, "h": 1.2345e-300},
        {"nested": [{"x": 0.1}]},
        {"é": 1, "\ue000": 2, "\uffff": 3, "z": 4},
    ],
)
def test_ordinary_floats_and_bmp_keys_take_the_fast_path(value: dict[str, Any]) -> None:
    # The floats integrations send (duration_ms) keep the fast path.
    assert inspect_value(value, max_depth=64) is True
    assert canonical_fast(value) == rfc8785.dumps(value)


def test_astral_keys_sort_by_utf16_code_units() -> None:
    # U+1F600 (surrogates D83D DE00) sorts before U+FB01 in UTF-16, after it in code points.
    value = {"\U0001f600": 1, "\ufb01": 2}
    assert canonical(value, fast_ok=inspect_value(value, max_depth=8)) == rfc8785.dumps(value)
    assert canonical_fast(value) != rfc8785.dumps(value)  # why the fast path must not apply


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"big": MAX_SAFE_INTEGER + 1}, "2**53"),
        ({"small": -MAX_SAFE_INTEGER - 1}, "2**53"),
        ({"nan": float("nan")}, "NaN"),
        ({"inf": [float("inf")]}, "NaN"),
        ({1: "x"}, "keys"),
    ],
)
def test_inspect_rejects_what_json_cannot_carry(value: Any, message: str) -> None:
    with pytest.raises(InputLimitError, match=message.replace("*", r"\*")):
        inspect_value(value, max_depth=64)


def test_inspect_depth_limit_names_the_path() -> None:
    value: dict[str, Any] = {"a": [{"b": [[{"c": {}}]]}]}
    assert inspect_value(value, max_depth=7) is True
    with pytest.raises(InputLimitError) as info:
        inspect_value(value, max_depth=6)
    assert info.value.path == ("a", 0, "b", 0, 0, "c")
