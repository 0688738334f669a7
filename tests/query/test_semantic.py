"""Semantic and hybrid search against a small real embeddings server (hashed bag of words)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from agentledger.server import Settings, create_app
from agentledger.server._settings import EmbeddingConfig

from ._helpers import ids, log, search, wait_embedded
from .conftest import QUERY_KEY, EmbeddingsServer


@pytest.fixture
async def semantic_client(
    query_db: str, embeddings_server: EmbeddingsServer
) -> AsyncIterator[httpx.AsyncClient]:
    embeddings = EmbeddingConfig(url=embeddings_server.url, model="bow-64", batch=8)
    app = create_app(Settings(db=query_db, dev_key=QUERY_KEY, embeddings=embeddings))
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app, raise_app_exceptions=False),
            base_url="http://localhost",
            headers={"Authorization": f"Bearer {QUERY_KEY}"},
        ) as client,
    ):
        yield client


def test_semantic_and_hybrid_on_a_real_server(
    server_factory: Any, embeddings_server: EmbeddingsServer, agent_name: str
) -> None:
    server = server_factory(
        env={
            "AGENTLEDGER_EMBEDDINGS_URL": embeddings_server.url,
            "AGENTLEDGER_EMBEDDINGS_MODEL": "bow-64",
        }
    )
    texts = [
        "customer wants money back for broken blender",
        "money back request approved",
        "weather forecast sunny tomorrow",
        "refunded the blender order",
    ]
    with httpx.Client(base_url=server.url, headers=server.headers(), timeout=30) as client:
        written = []
        for text in texts:
            response = client.post(
                "/v1/events",
                json={"agent": agent_name, "event": "user_message", "data": {"text": text}},
            )
            assert response.status_code == 201
            written.append(response.json()["event_id"])
        deadline = time.monotonic() + 20
        while client.get("/v1/search/status").json()["embeddings"]["pending"]:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        semantic = client.post(
            "/v1/search",
            json={"query": "money back blender", "agent": agent_name, "mode": "semantic"},
        ).json()
        assert semantic["mode"] == "semantic"
        ranked = [r["event_id"] for r in semantic["results"]]
        assert ranked[0] == written[0]  # shares three words
        assert ranked.index(written[2]) == len(ranked) - 1  # shares none
        assert all(-1.0 <= r["score"] <= 1.0 for r in semantic["results"])
        hybrid = client.post(
            "/v1/search", json={"query": "refund blender", "agent": agent_name, "mode": "auto"}
        ).json()
        assert hybrid["mode"] == "hybrid"
        top = [r["event_id"] for r in hybrid["results"][:2]]
        # "refunded" only matches by keyword prefix; "blender" by both lists.
        assert set(top) == {written[0], written[3]}
    assert embeddings_server.requests  # the server's worker called the endpoint


async def test_ingest_never_waits_for_a_failing_endpoint(
    semantic_client: httpx.AsyncClient, embeddings_server: EmbeddingsServer, agent_name: str
) -> None:
    embeddings_server.fail_with = 503
    started = time.monotonic()
    first = await log(semantic_client, agent_name, "user_message", {"text": "pending apples"})
    assert time.monotonic() - started < 2.0
    await asyncio.sleep(0.3)
    status = (await semantic_client.get("/v1/search/status")).json()
    assert status["embeddings"]["configured"] is True and status["embeddings"]["pending"] >= 1
    # Keyword search works meanwhile; the query itself cannot be embedded: 502.
    keyword = await search(semantic_client, "apples", agent=agent_name, mode="keyword")
    assert ids(keyword) == [first["event_id"]]
    failing = await semantic_client.post("/v1/search", json={"query": "apples", "mode": "semantic"})
    assert failing.status_code == 502 and "embeddings endpoint" in failing.json()["detail"]
    embeddings_server.fail_with = None
    await wait_embedded(semantic_client, timeout_s=40)
    found = await search(semantic_client, "apples", agent=agent_name, mode="semantic")
    assert ids(found) == [first["event_id"]] and found["notes"] == []


async def test_semantic_respects_filters_and_superseded(
    semantic_client: httpx.AsyncClient, agent_name: str
) -> None:
    old = await log(semantic_client, agent_name, "state_set", {"key": "k", "value": "red car"})
    new = await log(
        semantic_client,
        agent_name,
        "state_set",
        {"key": "k", "value": "blue car"},
        supersedes=old["event_id"],
    )
    await log(semantic_client, agent_name + "-other", "state_set", {"key": "k", "value": "car"})
    await wait_embedded(semantic_client)
    hits = await search(semantic_client, "car", agent=agent_name, mode="semantic")
    assert ids(hits) == [new["event_id"]]
    both = await search(
        semantic_client, "car", agent=agent_name, mode="semantic", include_superseded=True
    )
    assert set(ids(both)) == {old["event_id"], new["event_id"]}
