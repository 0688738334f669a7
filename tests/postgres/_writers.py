"""Writer processes for the concurrency tests (spawned; importable by module name)."""

from __future__ import annotations

import time
from typing import Any

import httpx

__all__ = ["write_events"]


def write_events(
    urls: list[str],
    api_key: str,
    agent: str,
    writer: int,
    count: int,
    batch: int,
    start_at: float,
) -> list[tuple[str, int]]:
    """POST ``count`` events of ``agent`` in batches of ``batch``, alternating over ``urls``.

    Waits until the wall clock reaches ``start_at`` so all writers start together. Each event's
    data names the writer and its position (``{"writer": w, "n": i}``).

    Returns:
        ``(event_id, sequence_no)`` per event, in the writer's order.

    Raises:
        RuntimeError: a batch was not fully written.
    """
    delay = start_at - time.time()
    if delay > 0:
        time.sleep(delay)
    clients = [
        httpx.Client(base_url=url, headers={"Authorization": f"Bearer {api_key}"}, timeout=120)
        for url in urls
    ]
    written: list[tuple[str, int]] = []
    try:
        for number, first in enumerate(range(0, count, batch)):
            items: list[dict[str, Any]] = [
                {"agent": agent, "event": "step", "data": {"writer": writer, "n": n}}
                for n in range(first, min(count, first + batch))
            ]
            client = clients[(number + writer) % len(clients)]
            response = client.post("/v1/events/batch", json={"events": items})
            body = response.json()
            if response.status_code != 200 or body["failed"]:
                raise RuntimeError(f"writer {writer}: {response.status_code} {response.text[:300]}")
            written.extend((r["event_id"], r["sequence_no"]) for r in body["results"])
    finally:
        for client in clients:
            client.close()
    return written
