"""Helpers of the retention tests: events with chosen times, the chain report, the routes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx


def ago(**delta: float) -> str:
    """An ISO time ``delta`` before now (``ago(days=2)``)."""
    return (datetime.now(UTC) - timedelta(**delta)).isoformat().replace("+00:00", "Z")


def write(client: httpx.Client, agent: str, times: list[str], session: str) -> list[str]:
    """One event per time, all in ``session``; returns their ids."""
    items = [
        {
            "agent": agent,
            "event": "user_message",
            "timestamp": at,
            "session_id": session,
            "data": {"text": f"message {n} of {session}", "user_id": f"user-of-{session}"},
        }
        for n, at in enumerate(times)
    ]
    response = client.post("/v1/events/batch", json={"events": items})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["failed"] == 0, body
    return [r["event_id"] for r in body["results"]]


def chain(client: httpx.Client, agent: str) -> dict[str, Any]:
    response = client.get("/v1/events/chain", params={"agent": agent})
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def erased(client: httpx.Client, event_id: str) -> bool:
    response = client.get(f"/v1/events/{event_id}")
    assert response.status_code == 200, response.text
    return bool(response.json().get("erased"))


def set_keep(client: httpx.Client, agent: str | None, keep: str) -> httpx.Response:
    url = "/v1/retention/default" if agent is None else f"/v1/retention/policies/{agent}"
    return client.put(url, json={"keep": keep})
