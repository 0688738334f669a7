"""The shared redaction function (``agentledger.protocol.redaction``) used at write time."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from agentledger.protocol.redaction import (
    PATTERN_NAMES,
    REDACTED,
    SECRET_KEYS,
    is_secret_key,
    redact,
)


@pytest.mark.parametrize(
    "key",
    [
        "password",
        "PASSWORD",
        "Authorization",
        "X-Api-Key",
        "apiKey",
        "APIKEY",
        "api_key",
        "access_token",
        "refreshToken",
        "db_password",
        "passwd",
        "client_secret",
        "clientSecret",
        "secret_key",
        "private_key",
        "AWS_ACCESS_KEY",
        "set-cookie",
        "Cookie",
        "token",
    ],
)
def test_secret_names_are_redacted(key: str) -> None:
    assert is_secret_key(key)
    assert redact({"outer": [{key: {"nested": "value"}}]}) == {"outer": [{key: REDACTED}]}


@pytest.mark.parametrize(
    "key", ["token_usage", "input_tokens", "max_tokens", "tokenizer", "secretary", "keyword", "id"]
)
def test_ordinary_names_are_kept(key: str) -> None:
    assert not is_secret_key(key)
    assert redact({key: 5}) == {key: 5}


def test_every_listed_secret_key_matches() -> None:
    assert all(is_secret_key(name) for name in SECRET_KEYS)
    assert {"email", "phone", "card", "iban", "ipv4"} == PATTERN_NAMES


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        ("email", "write to ann.lee+x@mail.example.org now", "write to [REDACTED:email] now"),
        ("phone", "call +1 415 555 2671 today", "call [REDACTED:phone] today"),
        ("phone", "on 2026-11-29 at 1732886400", "on 2026-11-29 at 1732886400"),
        ("card", "card 4111 1111 1111 1111", "card [REDACTED:card]"),
        ("card", "card 4111 1111 1111 1112", "card 4111 1111 1111 1112"),  # fails Luhn
        ("iban", "IBAN DE89 3704 0044 0532 0130 00.", "IBAN [REDACTED:iban]."),
        ("iban", "IBAN DE00 3704 0044 0532 0130 00", "IBAN DE00 3704 0044 0532 0130 00"),
        ("ipv4", "from 192.168.1.20.", "from [REDACTED:ipv4]."),
        ("ipv4", "version 1.2.300.4", "version 1.2.300.4"),
    ],
)
def test_patterns(pattern: str, text: str, expected: str) -> None:
    assert redact({"t": [text]}, patterns=[pattern]) == {"t": [expected]}
    assert redact({"t": [text]}) == {"t": [text]}  # patterns are opt-in


def test_copy_by_default_in_place_on_request() -> None:
    value: dict[str, Any] = {"a": {"password": "p", "l": [("x", "a@b.co")]}, "n": 1}
    before = copy.deepcopy(value)
    out = redact(value, patterns=["email"])
    assert value == before and out is not value
    assert out == {"a": {"password": REDACTED, "l": [["x", "[REDACTED:email]"]]}, "n": 1}
    same = redact(value, patterns=["email"], in_place=True)
    assert same is value and value == out


def test_deep_nesting_has_no_recursion_limit() -> None:
    root: list[Any] = []
    node = root
    for _ in range(20_000):
        node.append([])
        node = node[0]
    node.append({"token": "t"})
    for in_place in (False, True):
        out = redact(root, in_place=in_place)
        leaf = out
        while isinstance(leaf, list) and leaf and isinstance(leaf[0], list):
            leaf = leaf[0]
        assert leaf == [{"token": REDACTED}]


def test_unknown_pattern_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown redaction pattern"):
        redact({}, patterns=["ssn"])
