"""Every row of the wire contract's Limits table, checked on a real server of each store.

Each probe sends a value at the limit (accepted) and just beyond it (refused with the row's
status, the detail naming the field). :func:`test_every_documented_limit_has_a_probe` keeps the
table and the probes in step: a row without a probe, or a probe without a row, fails.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentledger.protocol import limits

WIRE_CONTRACT = Path(__file__).parents[2] / "docs" / "pages" / "wire-contract.md"
MIB = 1024 * 1024
TS = "2030-01-01T00:00:00.000000Z"


def documented_limits() -> list[str]:
    """The first cell of every row of the Limits table."""
    text = WIRE_CONTRACT.read_text(encoding="utf-8")
    section = text.split("\n## Limits\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    return [row.split(" | ")[0].removeprefix("| ").strip() for row in rows[1:]]


class Ledger:
    """A real server and a fresh agent on it."""

    def __init__(self, server: Any, agent: str) -> None:
        self.http = httpx.Client(base_url=server.url, headers=server.headers(), timeout=120)
        self.agent = agent

    def event(self, **fields: Any) -> dict[str, Any]:
        return {"agent": self.agent, "event": "note", "data": {}, **fields}

    def post(self, **fields: Any) -> httpx.Response:
        return self.http.post("/v1/events", json=self.event(**fields))

    def get(self, path: str, **params: Any) -> httpx.Response:
        return self.http.get(path, params=params)


def accepted(response: httpx.Response) -> None:
    assert response.status_code in (200, 201), response.text[:500]


def refused(response: httpx.Response, field: str, status: int = 422) -> None:
    assert response.status_code == status, response.text[:500]
    if status == 422:
        assert field in response.text, (field, response.text[:500])


def nested(depth: int) -> dict[str, Any]:
    """A dict of ``depth`` nested levels (the dict itself is level 1)."""
    value: dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def body_limit(ledger: Ledger) -> None:
    filler = "x" * (16 * MIB)  # with the rest of the event, just over 16 MiB
    refused(ledger.post(data={"s": filler}), "body", status=413)


def string_in_data(ledger: Ledger) -> None:
    big = "ab" * 7_500_000  # 15 MB, under the body limit: stored whole
    response = ledger.post(data={"s": big})
    accepted(response)
    stored = ledger.get(f"/v1/events/{response.json()['event_id']}").json()
    assert stored["data"]["s"] == big
    refused(ledger.post(data={"s": "ab" * (8 * MIB + 1)}), "body", status=413)


def nesting(ledger: Ledger) -> None:
    accepted(ledger.post(data=nested(64)))
    refused(ledger.post(data=nested(65)), "data")
    refused(ledger.post(metadata=nested(65)), "metadata")
    # Nested deeper than the standard library's reader goes, with a number long enough to be
    # read exactly: still the depth limit's 422.
    deep = b"[" * 1000 + b"12345678901234567890123" + b"]" * 1000
    raw = b'{"agent": "%s", "event": "e", "data": {"d": %s}}' % (ledger.agent.encode(), deep)
    response = ledger.http.post(
        "/v1/events", content=raw, headers={"Content-Type": "application/json"}
    )
    refused(response, "data")


def integers(ledger: Ledger) -> None:
    top = limits.MAX_SAFE_INTEGER
    accepted(ledger.post(data={"n": top, "m": -top}))
    for value in (top + 1, -top - 1, 2**63, 2**64 - 1, 2**64, -(2**64), 10**30):
        refused(ledger.post(data={"x": [{"n": value}]}), "data.x.0.n")
    # Written out in the body itself: never read as a float.
    raw = b'{"agent": "%s", "event": "e", "data": {"big": 18446744073709551616}}'
    response = ledger.http.post(
        "/v1/events",
        content=raw % ledger.agent.encode(),
        headers={"Content-Type": "application/json"},
    )
    refused(response, "data.big")
    refused(ledger.post(data={}, metadata={"n": 2**70}), "metadata.n")


def agent_name(ledger: Ledger) -> None:
    name = (ledger.agent + "a" * limits.MAX_AGENT_CHARS)[: limits.MAX_AGENT_CHARS]
    accepted(ledger.http.post("/v1/events", json={**ledger.event(), "agent": name}))
    refused(ledger.http.post("/v1/events", json={**ledger.event(), "agent": name + "a"}), "agent")
    refused(ledger.http.post("/v1/events", json={**ledger.event(), "agent": "-a"}), "agent")


def session_and_event(ledger: Ledger) -> None:
    accepted(ledger.post(session_id="s" * 255, event="e" * 255))
    refused(ledger.post(session_id="s" * 256), "session_id")
    refused(ledger.post(event="e" * 256), "event")
    refused(ledger.post(event=""), "event")
    refused(ledger.post(session_id="a\x00b"), "session_id")


def idempotency_key(ledger: Ledger) -> None:
    accepted(ledger.post(idempotency_key="k" * 255))
    refused(ledger.post(idempotency_key="k" * 256), "idempotency_key")
    refused(ledger.post(idempotency_key=""), "idempotency_key")


def causes(ledger: Ledger) -> None:
    ids = [str(uuid.uuid4()) for _ in range(limits.MAX_CAUSES + 1)]
    accepted(ledger.post(caused_by=ids[:-1]))
    refused(ledger.post(caused_by=ids), "caused_by")


def edge_kind(ledger: Ledger) -> None:
    cause = str(uuid.uuid4())
    accepted(ledger.post(caused_by=[{"event_id": cause, "kind": "k" * 32}]))
    refused(ledger.post(caused_by=[{"event_id": cause, "kind": "k" * 33}]), "kind")
    refused(ledger.post(caused_by=[{"event_id": cause, "kind": "Read"}]), "kind")


def batch_items(ledger: Ledger) -> None:
    items = [ledger.event(data={"i": i}) for i in range(501)]
    accepted(ledger.http.post("/v1/events/batch", json={"events": items[:500]}))
    refused(ledger.http.post("/v1/events/batch", json={"events": items}), "events")


def list_paging(ledger: Ledger) -> None:
    accepted(ledger.get("/v1/events", agent=ledger.agent, limit=1000, offset=1_000_000))
    for limit in (0, 1001, 2**64):
        refused(ledger.get("/v1/events", agent=ledger.agent, limit=limit), "limit")
    refused(ledger.get("/v1/events", agent=ledger.agent, offset=1_000_001), "offset")
    refused(ledger.get("/v1/events", agent=ledger.agent, offset=-1), "offset")


def sequence_numbers(ledger: Ledger) -> None:
    top = limits.MAX_SEQUENCE_NO
    accepted(ledger.post())
    accepted(ledger.get("/v1/events", agent=ledger.agent, cursor=f"{TS}|{top}"))
    accepted(ledger.get("/v1/events/chain", agent=ledger.agent, after_seq=str(top)))
    for seq in (top + 1, 2**63, 2**64, -1):
        refused(ledger.get("/v1/events", agent=ledger.agent, cursor=f"{TS}|{seq}"), "cursor")
    for seq in (top + 1, 2**63, 2**64):
        refused(ledger.get("/v1/events/chain", agent=ledger.agent, after_seq=str(seq)), "after_seq")
    refused(ledger.get("/v1/events/chain", agent=ledger.agent, after_seq="-1"), "after_seq")


def lineage(ledger: Ledger) -> None:
    event_id = ledger.post().json()["event_id"]
    for walk in ("why", "impact"):
        path = f"/v1/events/{event_id}/{walk}"
        accepted(ledger.get(path, depth=limits.LINEAGE_DEPTH_MAX, limit=limits.LINEAGE_LIMIT_MAX))
        refused(ledger.get(path, depth=limits.LINEAGE_DEPTH_MAX + 1), "depth")
        refused(ledger.get(path, depth=-1), "depth")
        refused(ledger.get(path, limit=limits.LINEAGE_LIMIT_MAX + 1), "limit")
        refused(ledger.get(path, limit=0), "limit")


def searchable_words(ledger: Ledger) -> None:
    # 300 KiB of distinct words: more than is made searchable, stored whole and not refused.
    words = " ".join(f"w{uuid.uuid4().hex}" for _ in range(9_000))
    response = ledger.post(data={"text": words})
    accepted(response)
    stored = ledger.get(f"/v1/events/{response.json()['event_id']}").json()
    assert stored["data"]["text"] == words


PROBES: dict[str, Callable[[Ledger], None]] = {
    "request body": body_limit,
    "a string inside `data` / `metadata`": string_in_data,
    "nesting of `data` / `metadata`": nesting,
    "an integer inside `data` / `metadata`": integers,
    "`agent`": agent_name,
    "`session_id`, `event`": session_and_event,
    "`idempotency_key`": idempotency_key,
    "`caused_by`": causes,
    "edge kind": edge_kind,
    "items per batch": batch_items,
    "`limit` / `offset` of `GET /v1/events`": list_paging,
    "`sequence_no` in `cursor` and `after_seq`": sequence_numbers,
    "`depth` / `limit` of `why` and `impact`": lineage,
    "words searchable per event (PostgreSQL)": searchable_words,
}


def test_every_documented_limit_has_a_probe() -> None:
    assert documented_limits() == list(PROBES)


@pytest.mark.parametrize("row", list(PROBES))
def test_documented_limit(row: str, store_server: Any, agent_name: str) -> None:
    ledger = Ledger(store_server, re.sub(r"[^A-Za-z0-9._-]", "-", agent_name)[:200])
    with ledger.http:
        PROBES[row](ledger)
        # The refusals left the agent's chain whole.
        chain = ledger.get("/v1/events/chain", agent=ledger.agent).json()
        assert chain["intact"] is True, chain
