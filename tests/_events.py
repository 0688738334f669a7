"""Reading events back over the HTTP API, and a small tree view of them.

Shared by the integration suites (LangChain, CrewAI, LiveKit): their assertions read what the
server stored (``GET /v1/events`` with the wire ``cursor``), never what a handler held.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx

PAGE = 1000


def read_events(url: str, headers: dict[str, str], agent: str) -> list[dict[str, Any]]:
    """Every stored event of ``agent``, in storage order (``sequence_no``), paging by cursor."""
    events: list[dict[str, Any]] = []
    params: dict[str, Any] = {"agent": agent, "limit": PAGE}
    with httpx.Client(base_url=url, headers=headers, timeout=30.0) as http:
        while True:
            response = http.get("/v1/events", params=params)
            response.raise_for_status()
            page = response.json()
            events.extend(page)
            if len(page) < PAGE:
                break
            last = page[-1]
            params["cursor"] = f"{last['timestamp']}|{last['sequence_no']}"
    events.sort(key=lambda e: e["sequence_no"])
    return events


@dataclass
class Stored:
    """Stored events of one agent with tree helpers (children by ``parent_id``)."""

    events: list[dict[str, Any]]
    by_id: dict[str, dict[str, Any]] = field(init=False)
    children: dict[str | None, list[dict[str, Any]]] = field(init=False)

    def __post_init__(self) -> None:
        self.by_id = {e["event_id"]: e for e in self.events}
        self.children = {}
        for event in self.events:
            self.children.setdefault(event["parent_id"], []).append(event)

    def of(self, event_type: str, **data: Any) -> list[dict[str, Any]]:
        """Events of a type whose ``data`` has all the given items, in storage order."""
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

    def ancestors(self, event: dict[str, Any]) -> list[str]:
        """Event types from the root down to ``event``'s parent."""
        chain: list[str] = []
        while event["parent_id"] is not None:
            event = self.by_id[event["parent_id"]]
            chain.append(event["event"])
        return chain[::-1]

    def label(self, event: dict[str, Any]) -> tuple[Any, ...]:
        """What :meth:`shape` compares of one event (subclasses may look at more)."""
        return (event["event"], event["data"].get("name") or event["data"].get("tool"))

    def shape(self, event: dict[str, Any]) -> tuple[Any, ...]:
        """An id-free canonical shape of the subtree under ``event`` (tree comparisons)."""
        return (self.label(event), tuple(sorted(self.shape(k) for k in self.kids(event))))

    def types(self) -> Counter[str]:
        return Counter(e["event"] for e in self.events)
