"""Inputs the JSON-body fuzzing (``tests/server/_json_fuzz.py``) and the probes around it
found mishandled, on both stores: each once answered badly and is pinned here."""

from __future__ import annotations

import uuid

import httpx


async def test_negative_zero_importance_reads_the_same_and_verifies(
    app_client: httpx.AsyncClient,
) -> None:
    """SQLite reads a stored -0.0 back as 0.0 (PostgreSQL keeps -0.0): the stores showed
    different values, and the column seal written over -0.0 no longer matched on SQLite."""
    body = b'{"agent": "zero", "event": "step", "data": {}, "importance": -0.0}'
    response = await app_client.post(
        "/v1/events", content=body, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 201, response.text
    (event,) = (await app_client.get("/v1/events", params={"agent": "zero"})).json()
    assert repr(event["importance"]) == "0.0"
    report = (await app_client.get("/v1/events/chain", params={"agent": "zero"})).json()
    assert report["intact"], report


async def test_an_event_that_supersedes_itself_is_refused(app_client: httpx.AsyncClient) -> None:
    """It was stored and hid itself from search and memory; self-parent and self-cause were
    already refused."""
    event_id = str(uuid.uuid4())
    body = {"agent": "self", "event": "step", "data": {}, "event_id": event_id}
    response = await app_client.post("/v1/events", json={**body, "supersedes": event_id})
    assert response.status_code == 422, response.text
    assert "supersedes" in response.text and "itself" in response.text
    batch = await app_client.post(
        "/v1/events/batch", json={"events": [{**body, "supersedes": event_id.upper()}]}
    )
    assert batch.json()["written"] == 0, batch.text
    assert "supersedes" in batch.json()["results"][0]["error"]
    assert (await app_client.get("/v1/events", params={"agent": "self"})).json() == []
