"""Secret forms the shared redaction table catches, on the function and on a real server.

The cases live in ``tests/_secrets.py`` (shared with the client tests). On the server the events
are sent raw over HTTP, so only the server's redaction stands between them and the store: the
stored record, the export and the checksum must all be computed from the redacted value.
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any

import httpx
import orjson
import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from _secrets import ORDINARY, SECRET_CASES, SECRETS
from agentledger.protocol import redaction
from agentledger.protocol.redaction import (
    SECRET_PATTERN_NAMES,
    SECRET_REGEXES,
    is_secret_key,
    might_hold_secrets,
    redact,
)

_RECORD_FIELDS = (
    "event_id",
    "agent",
    "sequence_no",
    "timestamp",
    "event",
    "data",
    "parent_id",
    "session_id",
    "metadata",
    "supersedes",
)


def _json(value: Any) -> Any:
    return orjson.loads(orjson.dumps(value))  # tuples become lists, as on the wire


def _leaks(value: Any) -> list[str]:
    text = orjson.dumps(value).decode()
    return [secret for secret in SECRETS if secret in text]


@pytest.mark.parametrize(
    ("value", "expected"), [c[1:] for c in SECRET_CASES], ids=[c[0] for c in SECRET_CASES]
)
def test_secret_forms_are_redacted(value: Any, expected: Any) -> None:
    before = copy.deepcopy(value)
    out = redact(value)
    assert out == expected and not _leaks(out)
    assert value == before  # a copy by default
    owned = _json(value)
    assert redact(owned, in_place=True) is owned and owned == _json(expected)


@pytest.mark.parametrize("value", [c[1] for c in ORDINARY], ids=[c[0] for c in ORDINARY])
def test_ordinary_values_are_kept(value: Any) -> None:
    assert redact(value) == _json(value)
    assert redact(value, patterns=["email"]) == _json(value)


@pytest.mark.parametrize(
    "key", ["author", "authority", "authored_by", "auth_method", "credentials_path", "jwt_ttl"]
)
def test_words_that_start_like_secrets_are_not_secret_keys(key: str) -> None:
    assert not is_secret_key(key)


def test_every_secret_shape_has_a_case() -> None:
    text = orjson.dumps([c[1] for c in SECRET_CASES]).decode().replace("\\n", "\n")
    missing = {name for name, rx in SECRET_REGEXES.items() if not rx.search(text)}
    assert not missing and set(SECRET_REGEXES) == SECRET_PATTERN_NAMES


@pytest.mark.parametrize("value", [c[1] for c in SECRET_CASES], ids=[c[0] for c in SECRET_CASES])
def test_the_byte_pre_check_sees_every_secret(value: Any) -> None:
    # the client sends bytes unwalked when this says False: it must never miss a secret
    assert might_hold_secrets(orjson.dumps(value))


def test_the_byte_pre_check_passes_plain_events() -> None:
    plain = {"text": "a valid video, inside", "tool_call_id": "call_1", "run_id": "r", "n": 1}
    assert not might_hold_secrets(orjson.dumps(plain))


#: Text made of trigger words, their halves and case variants, and a few other characters: the
#: pieces a wrong trigger search would stumble on (a missed branch, a prefix taken for a word).
_PIECES = st.sampled_from(
    [w for t in redaction._STRING_TRIGGERS for w in (t, t.upper(), t[:-1], t[1:], t[: len(t) // 2])]
    + ["a", " ", "_", "-", ":", "=", '"', "\u212a", "é", "\n"]
)


@settings(max_examples=2_000, deadline=None)
@given(st.lists(_PIECES, max_size=12))
def test_the_byte_pre_check_is_exactly_a_trigger_substring_test(pieces: list[str]) -> None:
    # the one-search form must say what "any trigger in the lower-cased text" says, and when it
    # says no, redaction (secret rules only) changes nothing
    value = {"".join(pieces[:3]) or "k": "".join(pieces)}
    raw = orjson.dumps(value)
    lowered = raw.decode().lower()
    expected = any(trigger in lowered for trigger in redaction._STRING_TRIGGERS)
    assert might_hold_secrets(raw) is expected
    if not expected:
        assert redact(value) == value


@pytest.fixture(scope="module")
def stored(store_server: Any) -> dict[str, dict[str, Any]]:
    """Every case written raw (no client redaction) and read back, by case id."""
    agent = f"redact-{store_server.port}"
    out: dict[str, dict[str, Any]] = {}
    with httpx.Client(base_url=store_server.url, headers=store_server.headers()) as client:
        for case_id, value, _ in SECRET_CASES:
            written = client.post(
                "/v1/events",
                json={"agent": agent, "event": "tool_result", "data": value, "metadata": value},
            )
            assert written.status_code == 201, written.text
            got = client.get(f"/v1/events/{written.json()['event_id']}")
            out[case_id] = got.json()
        export = client.get("/v1/events/export", params={"agent": agent})
        assert export.status_code == 200
        out["$export"] = {"text": export.text}
    return out


@pytest.mark.parametrize(("case_id", "expected"), [(c[0], c[2]) for c in SECRET_CASES])
def test_the_server_stores_and_hashes_the_redacted_value(
    stored: dict[str, dict[str, Any]], case_id: str, expected: Any
) -> None:
    got = stored[case_id]
    assert got["data"] == _json(expected) and got["metadata"] == _json(expected)
    record = {k: got[k] for k in _RECORD_FIELDS}
    assert hashlib.sha256(rfc8785.dumps(record)).hexdigest() == got["checksum"]


def test_no_secret_reaches_the_store(stored: dict[str, dict[str, Any]]) -> None:
    assert not _leaks(stored)
    assert not [s for s in SECRETS if s in stored["$export"]["text"]]
