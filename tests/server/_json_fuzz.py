"""Hypothesis strategies for raw JSON request bodies, and the checks each fuzzed request must
pass, shared by the SQLite and PostgreSQL fuzz modules.

Bodies are built as JSON *text*, not Python values, so they can hold what a Python dict cannot:
duplicate keys, escaped lone surrogates (``"\\ud800"``), integers far beyond 64 bits, exponents
that overflow a double and nesting deeper than any limit. Every answer must be below 500, an
accepted write must read back and verify intact, and a refused one must leave nothing behind.

``AGENTLEDGER_FUZZ_EXAMPLES`` raises the number of examples for a long local hunt (the suite's
default keeps each module well under a minute).
"""

from __future__ import annotations

import json
import os
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

__all__ = [
    "FUZZ_SETTINGS",
    "FuzzedBody",
    "bodies",
    "check_request",
]

#: Examples per fuzz test; raise with ``AGENTLEDGER_FUZZ_EXAMPLES`` for a long local hunt.
EXAMPLES = int(os.environ.get("AGENTLEDGER_FUZZ_EXAMPLES", "200"))

FUZZ_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=EXAMPLES <= 200,
    database=None,
)

AGENT = "fuzzed"

_EDGE_INTS = [
    0,
    -1,
    2**31,
    2**53,
    2**53 + 1,
    -(2**53) - 1,
    2**63 - 1,
    2**63,
    -(2**63),
    -(2**63) - 1,
    2**64,
    10**40,
    -(10**300),
]
_NUMBER_TEXTS = [
    "1e400",
    "-1e400",
    "1e-400",
    "-0",
    "-0.0",
    "0e0",
    "1E+2",
    "123456789012345678901234567890",
    "1234567890123456789.5",
    "12345678901234567890e5",
    "4.9e-324",
    "1.7976931348623157e308",
    "0.1",
    "1" + "0" * 400,
]
_NANISH = [
    "NaN",
    "nan",
    "Infinity",
    "-Infinity",
    "inf",
    "1e400",
    "null",
    "true",
    "undefined",
    "",
    " ",
    "\u2028\u2029",
    "\ufeff",
    "\U0010ffff",
    "\ud800",
    "\udfff",
    "\ud83d\ude00",
    "\x00",
    "a\x00b",
    "\x7f\x1f",
]


def _string_literal(text: str) -> str:
    """``text`` as a JSON string; lone surrogates stay escaped (``\\udXXX``), which a strict
    parser refuses but the body can carry."""
    out = ['"']
    for char in text:
        code = ord(char)
        if char == '"':
            out.append('\\"')
        elif char == "\\":
            out.append("\\\\")
        elif code < 0x20 or 0xD800 <= code <= 0xDFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def _array(items: list[str]) -> str:
    return "[" + ",".join(items) + "]"


def _object(pairs: list[tuple[str, str]]) -> str:
    return "{" + ",".join(f"{_string_literal(k)}:{v}" for k, v in pairs) + "}"


def _deep(depth: int, kind: str) -> str:
    if kind == "array":
        return "[" * depth + "]" * depth
    return '{"d":' * depth + "1" + "}" * depth


class _Json:
    """The strategies of one flavour of body: ``clean`` ones are valid JSON an honest client
    might send (so most are accepted and read back); the others add what must be refused or
    survived: lone surrogates, U+0000, numbers beyond 64 bits or a double, nesting far past
    the limit, NaN-like words, long strings."""

    def __init__(self, nasty: bool) -> None:
        plain = st.one_of(
            st.text(max_size=30),
            st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=20),
        )
        numbers = st.one_of(
            st.integers(-(2**53), 2**53).map(str),
            st.floats(allow_nan=False, allow_infinity=False).map(repr),
        )
        keys = st.one_of(st.text(max_size=8), st.sampled_from(["a", "a", "data", "é", "$index"]))
        depth = st.integers(1, 60)
        if nasty:
            rough = st.one_of(
                st.sampled_from(_NANISH),
                st.text(alphabet=st.characters(codec=None), max_size=20),
                st.integers(0, 70_000).map(lambda n: "x" * n),
                st.integers(0, 3_000).map(lambda n: "\u00e9\U0001f600" * n),
            )
            plain = st.one_of(plain, plain, rough)
            numbers = st.one_of(
                numbers,
                st.integers(-(2**70), 2**70).map(str),
                st.sampled_from(_EDGE_INTS).map(str),
                st.sampled_from(_NUMBER_TEXTS),
            )
            keys = st.one_of(keys, st.sampled_from(["\x00", "\ud800", "__proto__", ""]))
            depth = st.integers(1, 2_000)
        self.texts = plain
        self.numbers = numbers
        scalars = st.one_of(
            st.just("null"),
            st.sampled_from(["true", "false"]),
            numbers,
            plain.map(_string_literal),
        )
        self.scalars = scalars

        def extend(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
            return st.one_of(
                st.lists(children, max_size=4).map(_array),
                # a list of pairs, not a dict: the same key may come twice
                st.lists(st.tuples(keys, children), max_size=4).map(_object),
            )

        self.values = st.recursive(scalars, extend, max_leaves=12)
        deep = st.builds(_deep, depth, st.sampled_from(["array", "object"]))
        #: what goes into ``data`` or ``metadata``: mostly objects, sometimes anything else
        self.containers = st.one_of(
            st.lists(st.tuples(keys, self.values), max_size=5).map(_object),
            st.lists(st.tuples(keys, self.values), max_size=5).map(_object),
            deep.map(lambda v: '{"deep":' + v + "}"),
            self.values,
        )


_CLEAN = _Json(nasty=False)
_NASTY = _Json(nasty=True)


class FuzzedBody:
    """One request: method, path, raw body, and whether it writes events of :data:`AGENT`."""

    def __init__(self, path: str, body: str | bytes, writes: bool, method: str = "POST") -> None:
        self.path = path
        self.body = body
        self.writes = writes
        self.method = method

    def __repr__(self) -> str:
        shown = self.body if len(self.body) < 2_000 else self.body[:2_000] + "..."
        return f"FuzzedBody({self.method} {self.path!r}, {shown!r})"


def _fields(draw: Any, j: _Json) -> list[tuple[str, str]]:
    event = st.one_of(st.just('"step"'), j.texts.filter(bool).map(_string_literal))
    pairs = [("agent", json.dumps(AGENT)), ("event", draw(event)), ("data", draw(j.containers))]
    if draw(st.booleans()):
        pairs.append(("metadata", draw(st.one_of(st.just("null"), j.containers))))
    optional = {
        "session_id": j.texts.map(_string_literal),
        "idempotency_key": j.texts.map(_string_literal),
        "importance": st.one_of(
            st.floats(0, 1).map(repr), j.numbers, st.sampled_from(['"0.5"', "1", "0", "-0.0"])
        ),
        "timestamp": st.one_of(
            st.datetimes().map(lambda d: json.dumps(d.isoformat())),
            j.texts.map(_string_literal),
            j.numbers,
        ),
        "event_id": st.one_of(st.uuids().map(lambda u: json.dumps(str(u))), j.scalars),
        "parent_id": st.one_of(st.uuids().map(lambda u: json.dumps(str(u))), j.scalars),
        "supersedes": st.one_of(st.uuids().map(lambda u: json.dumps(str(u))), j.scalars),
        "parent_index": st.one_of(st.integers(-2, 600).map(str), j.scalars),
        "scope_id": st.one_of(st.uuids().map(lambda u: json.dumps(str(u))), j.scalars),
        "caused_by": st.one_of(
            j.values, st.lists(st.uuids().map(lambda u: json.dumps(str(u)))).map(_array)
        ),
    }
    for name in draw(st.lists(st.sampled_from(sorted(optional)), max_size=3, unique=True)):
        pairs.append((name, draw(optional[name])))
    if draw(st.integers(0, 9)) == 0:  # a duplicate key: the last one counts
        pairs.append(("data", draw(j.containers)))
    return pairs


@st.composite
def bodies(draw: Any) -> FuzzedBody:
    """A fuzzed write: one event, a batch, an import, a forget (mostly a dry run), or a
    search/memory query with nested JSON where an object is expected."""
    kinds = ["event", "batch", "import", "search", "context", "forget", "raw"]
    kind = draw(st.sampled_from(kinds))
    j = _NASTY if draw(st.integers(0, 3)) == 0 else _CLEAN
    if kind == "raw":  # any JSON value, cut short now and then, where an object is expected
        text = draw(j.values)
        cut = draw(st.integers(0, len(text)))
        text = text[:cut] if draw(st.integers(0, 3)) == 0 else text
        path = draw(st.sampled_from(["/v1/events", "/v1/events/batch", "/v1/events/import"]))
        if draw(st.integers(0, 7)) == 0:  # bytes that need not be UTF-8 at all
            return FuzzedBody(path, draw(st.binary(max_size=200)), True)
        return FuzzedBody(path, text, True)
    if kind == "event":
        return FuzzedBody("/v1/events", _object(_fields(draw, j)), True)
    if kind in {"batch", "import"}:
        items = [_object(_fields(draw, j)) for _ in range(draw(st.integers(1, 4)))]
        if kind == "batch":
            return FuzzedBody("/v1/events/batch", _object([("events", _array(items))]), True)
        lines = []
        for item in items:  # export-shaped lines: stored-only fields are ignored
            extras = [
                ("event_id", json.dumps(str(draw(st.uuids())))),
                ("sequence_no", draw(j.numbers)),
                ("chain_hash", draw(j.scalars)),
                ("received_at", draw(j.scalars)),
                ("erased", draw(st.sampled_from(["true", "false", "null"]))),
            ]
            lines.append(item[:-1] + "," + _object(extras)[1:])
        pairs = [("events", _array(lines))]
        if draw(st.booleans()):  # renamed on import: ids are mapped to new ones
            pairs.append(("agent", json.dumps(AGENT)))
        return FuzzedBody("/v1/events/import", _object(pairs), True)
    text = draw(st.one_of(st.just('"step"'), j.texts.map(_string_literal)))
    if kind == "forget":  # a real forget now and then: tombstones must keep the chain intact
        pairs = [
            ("filter_key", draw(j.texts.map(_string_literal))),
            ("filter_value", draw(j.values)),
            ("agent", json.dumps(AGENT)),
            ("dry_run", draw(st.sampled_from(["true", "true", "false"]))),
        ]
        return FuzzedBody("/v1/memory/forget", _object(pairs), False, "DELETE")
    if kind == "search":
        pairs = [("query", text), ("agent", json.dumps(AGENT)), ("event_types", draw(j.values))]
        return FuzzedBody("/v1/search", _object(pairs), False)
    pairs = [
        ("task", text),
        ("agent", json.dumps(AGENT)),
        ("max_tokens", draw(st.one_of(st.integers(16, 9_000).map(str), j.numbers))),
    ]
    return FuzzedBody("/v1/memory/context", _object(pairs), False)


def _count(client: Any, headers: dict[str, str]) -> int:
    response = client.get("/v1/agents", headers=headers)
    assert response.status_code == 200, response.text
    return sum(a["event_count"] for a in response.json() if a["agent"] == AGENT)


def check_request(client: Any, headers: dict[str, str], body: FuzzedBody) -> None:
    """Send ``body`` (raw bytes) and check: no 5xx, a refusal names a field and writes nothing,
    and after any write the agent's events read back, export and verify intact."""
    before = _count(client, headers) if body.writes else 0
    response = client.request(
        body.method,
        body.path,
        content=body.body if isinstance(body.body, bytes) else body.body.encode("utf-8"),
        headers={**headers, "Content-Type": "application/json"},
    )
    assert response.status_code < 500, (body, response.status_code, response.text)
    if not body.writes:
        if body.method == "DELETE" and response.status_code == 200:
            chain = client.get("/v1/events/chain", params={"agent": AGENT}, headers=headers)
            assert chain.json()["intact"], (body, chain.text)
        return
    answer = response.json()
    if response.status_code >= 400:
        assert answer.get("detail"), (body, response.text)
        assert _count(client, headers) == before, (body, response.text)
        return
    written = answer.get("written", answer.get("imported", 0 if answer.get("duplicate") else 1))
    assert _count(client, headers) == before + written, (body, response.text)
    for path in ("/v1/events", "/v1/events/export", "/v1/events/chain"):
        read = client.get(path, params={"agent": AGENT, "limit": 5}, headers=headers)
        assert read.status_code == 200, (body, path, read.text)
    chain = client.get("/v1/events/chain", params={"agent": AGENT}, headers=headers).json()
    assert chain["intact"], (body, chain)
