"""Write helpers shared by the query tests (everything goes through the HTTP API)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx


async def log(
    client: httpx.AsyncClient, agent: str, event: str, data: dict[str, Any], **fields: Any
) -> dict[str, Any]:
    """POST one event; returns the write result."""
    response = await client.post(
        "/v1/events", json={"agent": agent, "event": event, "data": data, **fields}
    )
    assert response.status_code == 201, response.text
    result: dict[str, Any] = response.json()
    return result


async def batch(client: httpx.AsyncClient, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """POST a batch (<= 500 items) that must fully succeed; returns the per-item results."""
    response = await client.post("/v1/events/batch", json={"events": items})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["failed"] == 0, body
    results: list[dict[str, Any]] = body["results"]
    return results


async def search(client: httpx.AsyncClient, query: str, **fields: Any) -> dict[str, Any]:
    """POST /v1/search that must succeed."""
    response = await client.post("/v1/search", json={"query": query, **fields})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def wait_embedded(client: httpx.AsyncClient, timeout_s: float = 20.0) -> None:
    """Wait until the embedding worker has nothing pending."""
    deadline = time.monotonic() + timeout_s
    while True:
        status = (await client.get("/v1/search/status")).json()
        if status["embeddings"]["pending"] == 0:
            return
        assert time.monotonic() < deadline, status
        await asyncio.sleep(0.05)


def ids(body: dict[str, Any]) -> list[str]:
    """Event ids of a search answer, best first."""
    return [r["event_id"] for r in body["results"]]
