"""Semantic and hybrid search, memory context and the embedding counts with a key bound to an
agent (docs/pages/server.md, "What a key may see"): run against twin ledgers that differ
only by agent B's events (``_twin_ledgers``), both embedding every event through the real
embeddings server of this suite, a key bound to agent A gets byte-identical answers from
both, while the admin key's answers differ."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from _stores import postgres_database
from _twin_ledgers import SECRET, scrub, twins
from agentledger.server._settings import EmbeddingConfig

from ._helpers import wait_embedded
from .conftest import EmbeddingsServer


@pytest.fixture
def twin_dbs(
    store_kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[tuple[str, str]]:
    if store_kind == "postgres":
        admin = request.getfixturevalue("pg_admin_dsn")
        with postgres_database(admin) as first, postgres_database(admin) as second:
            yield first, second
        return
    yield str(tmp_path / "with-b.db"), str(tmp_path / "without-b.db")


PROBES: list[tuple[str, str, dict[str, Any] | None]] = [
    ("POST", "/v1/search", {"query": SECRET, "mode": "semantic"}),
    ("POST", "/v1/search", {"query": "alpha apples plums", "mode": "semantic", "limit": 50}),
    ("POST", "/v1/search", {"query": "alpha apples", "mode": "hybrid", "limit": 3}),
    ("POST", "/v1/search", {"query": "apples", "limit": 2, "agent": "scope-a"}),
    ("POST", "/v1/memory/context", {"agent": "scope-a", "task": f"alpha apples {SECRET}"}),
    ("GET", "/v1/search/status", None),
]


async def send(client: httpx.AsyncClient, method: str, url: str, body: Any) -> httpx.Response:
    if body is None:
        return await client.request(method, url)
    return await client.request(method, url, json=body)


async def test_semantic_answers_of_a_bound_key_do_not_depend_on_another_agent(
    twin_dbs: tuple[str, str], embeddings_server: EmbeddingsServer
) -> None:
    config = EmbeddingConfig(url=embeddings_server.url, model="bow-64", batch=8)
    async with twins(*twin_dbs, lifespan=True, embeddings=config) as twin:
        for ledger in twin.both:
            await wait_embedded(ledger.clients["admin"])
        differs = False
        for method, url, body in PROBES:
            for key in ("bound", "bound_ro"):
                with_b = await send(twin.with_b.clients[key], method, url, body)
                without_b = await send(twin.without_b.clients[key], method, url, body)
                assert with_b.status_code == 200, with_b.text
                assert scrub(with_b) == scrub(without_b), (key, url, body)
                if SECRET not in repr(body):
                    assert SECRET not in with_b.text
            if url == "/v1/search":
                assert (await send(twin.with_b.clients["bound"], method, url, body)).json()[
                    "mode"
                ] in ("semantic", "hybrid")
            admin_with = await send(twin.with_b.clients["admin"], method, url, body)
            admin_without = await send(twin.without_b.clients["admin"], method, url, body)
            differs = differs or scrub(admin_with) != scrub(admin_without)
        assert differs, "no probe reaches B's events"
        found = await twin.with_b.clients["bound"].post("/v1/search", json=PROBES[1][2])
        agents = {hit["agent"] for hit in found.json()["results"]}
        assert agents == {"scope-a"}, found.text  # semantic hits, A's only
