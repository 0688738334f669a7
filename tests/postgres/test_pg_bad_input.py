"""``tests/server/test_bad_input.py`` re-run on PostgreSQL, plus what only PostgreSQL refuses.

PostgreSQL text cannot hold U+0000: an item whose ``event``, ``session_id`` or
``idempotency_key`` holds one is a 422 naming the field (alone, in a batch), never a 500; in
``data`` it is stored (the canonical record is ``bytea``) and read back unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from fastapi import FastAPI

from _stores import reuse_tests
from agentledger.server import Settings, create_app


@pytest.fixture
def small_app(pg_db: str) -> Iterator[FastAPI]:
    app = create_app(Settings(db=pg_db, dev_key=SUITE.KEY, max_body_bytes=64_000))
    yield app
    app.state.store.close()


SUITE = reuse_tests("server/test_bad_input.py", globals())


@pytest.mark.parametrize("field", ["event", "session_id", "idempotency_key"])
async def test_nul_in_indexed_text_is_422_naming_the_field(
    client: httpx.AsyncClient, field: str
) -> None:
    bad = SUITE.body(**{field: "a\x00b"})
    response = await client.post("/v1/events", json=bad)
    assert response.status_code == 422 and field in response.text, response.text
    batch = await client.post(
        "/v1/events/batch",
        json={"events": [SUITE.body(), bad, {**SUITE.body(), "parent_index": 1}, SUITE.body()]},
    )
    results = batch.json()["results"]
    assert [r["ok"] for r in results] == [True, False, False, True]
    assert field in results[1]["error"] and "parent_index" in results[2]["error"]
    assert [r["sequence_no"] for r in results if r["ok"]] == [1, 2]
    chain = (await client.get("/v1/events/chain", params={"agent": SUITE.AGENT})).json()
    assert chain["intact"] and chain["verified"] == 2


async def test_nul_in_data_is_stored_and_read_back(client: httpx.AsyncClient) -> None:
    data = {"text": "a\x00b", "escaped": "\\u0000", "nested": [{"k": "\x00"}]}
    written = (await client.post("/v1/events", json=SUITE.body(data=data))).json()
    got = (await client.get(f"/v1/events/{written['event_id']}")).json()
    assert got["data"] == data and got["checksum"] == written["checksum"]
    chain = (await client.get("/v1/events/chain", params={"agent": SUITE.AGENT})).json()
    assert chain["intact"]
