"""The body fingerprint that tells a retried event (*duplicate*) from a reused id (*conflict*).

Fingerprints are stored with each event, so they must not change between versions: a client
that retries an event across a server upgrade must get ``duplicate``, not a 409. These values
were computed by the server of 2026-12-06; any change to how the fingerprint is built (what
goes in, in which order, how it is serialised) shows up here.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from agentledger.protocol.redaction import redact
from agentledger.server._ingest import prepare, validate_items

EVENTS: list[dict[str, Any]] = [
    {"agent": "a", "event": "step_start", "data": {"name": "chain", "inputs": {"q": "why?"}}},
    {
        "agent": "a",
        "event": "llm_end",
        "data": {"text": "ok", "duration_ms": 812.3, "token_usage": {"input_tokens": 3}},
        "metadata": {"run": "r1"},
        "session_id": "s1",
        "timestamp": "2026-12-07T01:00:00.000000Z",
    },
    {
        "agent": "a",
        "event": "tool_call",
        "data": {"args": {"api_key": "sk-abc123def456ghi789", "url": "https://u:pw@h/x"}},
        "metadata": {"authorization": "Bearer abc.def"},
    },
    {
        "agent": "a",
        "event": "note",
        "data": {
            "z": [1, 2.5, None, True, {"b": "\u00e9", "a": "\u212aey"}],
            "a": -0.0,
            "m": 1e300,
        },
        "event_id": "0190a000-0000-7000-8000-000000000001",
        "parent_id": "0190A000-0000-7000-8000-000000000002",
        "idempotency_key": "k1",
        "importance": 0.5,
    },
    {
        "agent": "a",
        "event": "note",
        "data": {},
        "caused_by": ["0190a000-0000-7000-8000-000000000003"],
        "scope_id": "0190a000-0000-7000-8000-000000000004",
    },
]

FINGERPRINTS = [
    "dd37c4a2c556eec15e4ed1ad9a2bf7c515c74b10957a7579a14e4063fb93d76c",
    "75580152a99e6eaa10dae0cf6313acd67e870955d6d7a1dc19bda120790ed7e5",
    "2aa0f2752f2e07b3f6ff3d7cf36b748633280c26773adc6115422fd64db91db5",
    "2a82cf3abe898a9632bafea0f7fcff3815eee5bf16228e0e07e0117cd834752a",
    "276f88fd0493df91062b1cc943b500c4191b04afda13934613d5bd9e8622f47b",
]


def _fingerprints(events: list[dict[str, Any]], patterns: tuple[str, ...]) -> list[str]:
    items = validate_items(orjson.loads(orjson.dumps(events)))
    return [
        prepare(
            item, max_depth=64, patterns=patterns, received_at="2026-12-07T02:00:00Z"
        ).fingerprint
        for item in items
    ]


def test_fingerprints_are_those_of_earlier_versions() -> None:
    assert _fingerprints(EVENTS, ()) == FINGERPRINTS


def _as_redacted(event: dict[str, Any], patterns: tuple[str, ...]) -> dict[str, Any]:
    """``event`` with its ``data`` and ``metadata`` as the server stores them."""
    out = dict(event)
    for field in ("data", "metadata"):
        if field in out:
            out[field] = redact(out[field], patterns=patterns)
    return out


@pytest.mark.parametrize(
    ("event", "patterns"),
    [
        (EVENTS[2], ()),  # secret-named keys, a key shape, a URL password
        ({"agent": "a", "event": "note", "data": {"to": "ann@example.com"}}, ("email",)),
    ],
    ids=["secrets", "email-pattern"],
)
def test_the_fingerprint_is_taken_after_redaction(
    event: dict[str, Any], patterns: tuple[str, ...]
) -> None:
    # a retry of an event whose secrets the server redacted is a duplicate: the raw body and
    # the stored (redacted) body fingerprint alike
    redacted = _as_redacted(event, patterns)
    assert redacted != event  # the case does hold something to redact
    raw, stored = _fingerprints([event, redacted], patterns)
    assert raw == stored
