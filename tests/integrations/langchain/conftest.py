"""Fixtures: a real client against the session's real server, and a reader of stored events.

Assertions read events back over the HTTP API (``GET /v1/events``), never from the handler.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from agentledger.client import Ledger
from agentledger.integrations.langchain import LedgerCallbackHandler


def read_events(url: str, headers: dict[str, str], agent: str) -> list[dict[str, Any]]:
    """Every stored event of ``agent``, oldest first (pages with the wire ``cursor``)."""
    events: list[dict[str, Any]] = []
    params: dict[str, Any] = {"agent": agent, "limit": 1000}
    with httpx.Client(base_url=url, headers=headers, timeout=30.0) as http:
        while True:
            response = http.get("/v1/events", params=params)
            response.raise_for_status()
            page = response.json()
            events.extend(page)
            if len(page) < 1000:
                break
            last = page[-1]
            params["cursor"] = f"{last['timestamp']}|{last['sequence_no']}"
    events.sort(key=lambda e: e["sequence_no"])
    return events


@dataclass
class Stored:
    """Stored events with tree helpers."""

    events: list[dict[str, Any]]
    by_id: dict[str, dict[str, Any]] = field(init=False)
    children: dict[str | None, list[dict[str, Any]]] = field(init=False)

    def __post_init__(self) -> None:
        self.by_id = {e["event_id"]: e for e in self.events}
        self.children = {}
        for event in self.events:
            self.children.setdefault(event["parent_id"], []).append(event)

    def of(self, event_type: str, **data: Any) -> list[dict[str, Any]]:
        """Events of a type whose ``data`` has all the given items."""
        return [
            e
            for e in self.events
            if e["event"] == event_type and all(e["data"].get(k) == v for k, v in data.items())
        ]

    def one(self, event_type: str, **data: Any) -> dict[str, Any]:
        found = self.of(event_type, **data)
        assert len(found) == 1, f"expected one {event_type} {data}, got {len(found)}"
        return found[0]

    def parent(self, event: dict[str, Any]) -> dict[str, Any]:
        assert event["parent_id"] is not None, f"{event['event']} has no parent"
        return self.by_id[event["parent_id"]]

    def kids(self, event: dict[str, Any], event_type: str | None = None) -> list[dict[str, Any]]:
        found = self.children.get(event["event_id"], [])
        return [e for e in found if event_type is None or e["event"] == event_type]

    def roots(self) -> list[dict[str, Any]]:
        return self.children.get(None, [])

    def shape(self, event: dict[str, Any]) -> tuple[Any, ...]:
        """A canonical, id-free shape of the subtree under ``event`` (for parity checks)."""
        label = (event["event"], event["data"].get("name") or event["data"].get("tool"))
        return (label, tuple(sorted(self.shape(k) for k in self.kids(event))))

    def types(self) -> Counter[str]:
        return Counter(e["event"] for e in self.events)


@pytest.fixture
def ledger(ledger_server: Any, agent_name: str) -> Iterator[Ledger]:
    client = Ledger(
        url=ledger_server.url, api_key=ledger_server.api_key, agent=agent_name, spill_dir=None
    )
    yield client
    client.close(timeout_s=10.0)


@pytest.fixture
def handler(ledger: Ledger) -> LedgerCallbackHandler:
    return LedgerCallbackHandler(ledger)


@pytest.fixture
def stored(ledger: Ledger, ledger_server: Any, agent_name: str) -> Callable[[], Stored]:
    """Flush the client, then read this test's events back from the server."""

    def read() -> Stored:
        result = ledger.flush(timeout_s=20.0)
        assert result is not None
        return Stored(read_events(ledger_server.url, ledger_server.headers(), agent_name))

    return read
