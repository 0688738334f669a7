"""Malformed requests get a 4xx naming the field: never a 500, never a partial write (on
either store).

PostgreSQL text cannot hold U+0000: there an item whose ``event``, ``session_id`` or
``idempotency_key`` holds one is a 422 naming the field (alone, in a batch), never a 500; in
``data`` it is stored (the canonical record is bytes) and read back unchanged on both stores.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from _stores import POSTGRES_ONLY
from agentledger.server import Settings, create_app

KEY = "bad-input-key"
AGENT = "victim"


def body(**fields: Any) -> dict[str, Any]:
    return {"agent": AGENT, "event": "e", "data": {}, **fields}


def deep_dict(depth: int) -> dict[str, Any]:
    root: dict[str, Any] = {}
    node = root
    for _ in range(depth):
        node["n"] = {}
        node = node["n"]
    return root


def nested(depth: int) -> str:
    return '{"agent":"victim","event":"e","data":' + '{"a":' * depth + "1" + "}" * depth + "}"


@pytest.fixture
def small_app(store_db: str) -> Iterator[FastAPI]:
    app = create_app(Settings(db=store_db, dev_key=KEY, max_body_bytes=64_000))
    yield app
    app.state.store.close()


@pytest.fixture
async def client(small_app: FastAPI) -> Any:
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=small_app),
        base_url="http://localhost",
        headers={"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"},
    ) as c:
        yield c


JSON_CASES: list[tuple[str, Any, str]] = [
    ("unknown field", body(bogus=1), "bogus"),
    ("event too long", body(event="x" * 256), "event"),
    ("event empty", body(event=""), "event"),
    ("agent with slash", body(agent="a/b"), "agent"),
    ("agent with backslash", body(agent="a\\b"), "agent"),
    ("agent dot-dot", body(agent="../etc"), "agent"),
    ("agent empty", body(agent=""), "agent"),
    ("agent 300 chars", body(agent="a" * 300), "agent"),
    ("agent missing", {"event": "e", "data": {}}, "agent"),
    ("data missing", {"agent": AGENT, "event": "e"}, "data"),
    ("data a list", body(data=[1, 2]), "data"),
    ("data a string", body(data="x"), "data"),
    ("metadata a list", body(metadata=[1]), "metadata"),
    ("event_id not uuid", body(event_id="not-a-uuid"), "event_id"),
    ("parent_id not uuid", body(parent_id="123"), "parent_id"),
    ("supersedes not uuid", body(supersedes="x"), "supersedes"),
    ("timestamp garbage", body(timestamp="yesterday"), "timestamp"),
    ("timestamp before year 1 in UTC", body(timestamp="0001-01-01T00:00:00+01:00"), "timestamp"),
    ("timestamp after 9999 in UTC", body(timestamp="9999-12-31T23:59:59-01:00"), "timestamp"),
    ("importance above 1", body(importance=2), "importance"),
    ("importance text", body(importance="high"), "importance"),
    ("session_id too long", body(session_id="s" * 256), "session_id"),
    ("session_id a number", body(session_id=5), "session_id"),
    ("idempotency_key empty", body(idempotency_key=""), "idempotency_key"),
    ("NUL in event", body(event="tool\x00call"), "event"),
    ("NUL in session_id", body(session_id="s\x00"), "session_id"),
    ("NUL in idempotency_key", body(idempotency_key="k\x00"), "idempotency_key"),
    ("integer beyond 2**53", body(data={"big": 2**60}), "data.big"),
    ("nested deeper than the limit", body(data=deep_dict(70)), "data.n.n.n"),
    ("metadata nested too deep", body(metadata=deep_dict(70)), "metadata.n"),
]

RAW_CASES: list[tuple[str, bytes]] = [
    ("invalid JSON", b'{"agent": "victim", "event": '),
    ("NaN", b'{"agent":"victim","event":"e","data":{"x":NaN}}'),
    ("Infinity", b'{"agent":"victim","event":"e","data":{"x":Infinity}}'),
    ("-Infinity", b'{"agent":"victim","event":"e","data":{"x":-Infinity}}'),
    ("lone surrogate", b'{"agent":"victim","event":"e","data":{"x":"\\ud800"}}'),
    ("lone low surrogate in key", b'{"agent":"victim","event":"e","data":{"\\udc00":1}}'),
    ("invalid UTF-8", b'{"agent":"victim","event":"e","data":{"x":"\xff\xfe"}}'),
    ("10,000-deep nesting", nested(10_000).encode()),
    ("100-deep nesting", nested(100).encode()),
    ("empty body", b""),
    ("a JSON array", b"[]"),
    ("trailing garbage", b'{"agent":"victim","event":"e","data":{}} x'),
]


async def assert_nothing_written(client: httpx.AsyncClient) -> None:
    listed = await client.get("/v1/events", params={"agent": AGENT})
    assert listed.status_code == 200 and listed.json() == []


@pytest.mark.parametrize(("name", "payload", "field"), JSON_CASES, ids=[c[0] for c in JSON_CASES])
async def test_bad_json_fields_are_422_naming_the_field(
    client: httpx.AsyncClient, name: str, payload: Any, field: str
) -> None:
    response = await client.post("/v1/events", json=payload)
    assert response.status_code == 422, (name, response.text)
    detail = response.json()["detail"]
    locs = [".".join(str(p) for p in d["loc"][1:]) for d in detail]
    assert any(loc.startswith(field) for loc in locs), (name, detail)
    # the same item inside a batch fails alone, naming the field too
    batch = await client.post("/v1/events/batch", json={"events": [payload]})
    assert batch.status_code == 200
    (result,) = batch.json()["results"]
    assert not result["ok"] and result["status"] == 422 and field in result["error"]
    await assert_nothing_written(client)


@pytest.mark.parametrize(("name", "raw"), RAW_CASES, ids=[c[0] for c in RAW_CASES])
async def test_malformed_bodies_are_4xx(client: httpx.AsyncClient, name: str, raw: bytes) -> None:
    for path in ("/v1/events", "/v1/events/batch", "/v1/events/import", "/v1/keys"):
        response = await client.post(path, content=raw)
        assert 400 <= response.status_code < 500, (name, path, response.text)
        assert "detail" in response.json()
    await assert_nothing_written(client)


async def test_body_over_the_limit_is_413(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/events", json=body(data={"blob": "x" * 70_000}))
    assert response.status_code == 413
    await assert_nothing_written(client)


async def test_batch_over_500_is_422_and_writes_nothing(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/events/batch", json={"events": [body()] * 501})
    assert response.status_code == 422 and "events" in response.text
    empty = await client.post("/v1/events/batch", json={"events": []})
    assert empty.status_code == 422
    await assert_nothing_written(client)


QUERY_CASES: list[tuple[str, dict[str, Any], str]] = [
    ("/v1/events", {}, "agent"),
    ("/v1/events", {"agent": "a/b"}, "agent"),
    ("/v1/events", {"agent": AGENT, "limit": 0}, "limit"),
    ("/v1/events", {"agent": AGENT, "limit": 1001}, "limit"),
    ("/v1/events", {"agent": AGENT, "offset": -1}, "offset"),
    ("/v1/events", {"agent": AGENT, "cursor": "nonsense"}, "cursor"),
    ("/v1/events", {"agent": AGENT, "cursor": "2024-01-01T00:00:00Z|x"}, "cursor"),
    ("/v1/events", {"agent": AGENT, "before": "soon"}, "before"),
    ("/v1/events", {"agent": AGENT, "after": "0001-01-01T00:00:00+01:00"}, "after"),
    ("/v1/events/at", {"agent": AGENT, "timestamp": "9999-12-31T23:59:59-01:00"}, "timestamp"),
    ("/v1/events/chain", {"agent": AGENT, "after_seq": "x"}, "after_seq"),
    ("/v1/events/chain", {"agent": AGENT, "after_seq": "-3"}, "after_seq"),
    ("/v1/events/chain", {"agent": AGENT, "anchor": "zz"}, "anchor"),
    ("/v1/events/not-a-uuid", {}, "event_id"),
    (f"/v1/events/{uuid.uuid4()}/why", {"depth": -1}, "depth"),
    (f"/v1/events/{uuid.uuid4()}/why", {"depth": 10_001}, "depth"),
    (f"/v1/events/{uuid.uuid4()}/impact", {"limit": 0}, "limit"),
    ("/v1/events/export", {"agent": ""}, "agent"),
    ("/v1/sessions", {"limit": "many"}, "limit"),
    ("/v1/events", {"agent": AGENT, "event_type": "tool\x00call"}, "event_type"),
    ("/v1/events", {"agent": AGENT, "session_id": "\x00"}, "session_id"),
    ("/v1/sessions/s%00x/events", {"agent": AGENT}, "path"),
]


@pytest.mark.parametrize(("path", "params", "field"), QUERY_CASES)
async def test_bad_query_parameters_are_422_naming_the_field(
    client: httpx.AsyncClient, path: str, params: dict[str, Any], field: str
) -> None:
    response = await client.get(path, params=params)
    assert response.status_code == 422, response.text
    assert field in str(response.json()["detail"])


async def test_auth_failures_are_401(client: httpx.AsyncClient) -> None:
    for headers in (
        {"Authorization": ""},
        {"Authorization": "Bearer wrong"},
        {"Authorization": "Basic dXNlcjpwYXNz"},
    ):
        response = await client.post("/v1/events", json=body(), headers=headers)
        assert response.status_code == 401, headers
    await assert_nothing_written(client)


async def test_import_bad_lines_fail_alone(client: httpx.AsyncClient) -> None:
    good = {"event_id": str(uuid.uuid4()), **body(timestamp="2024-01-01T00:00:00Z")}
    response = await client.post(
        "/v1/events/import",
        json={"events": [good, {"agent": AGENT, "event": "e", "data": {}}, {**good, "data": 5}]},
    )
    result = response.json()
    assert response.status_code == 200
    assert (result["imported"], result["failed"]) == (1, 2)
    assert [e["index"] for e in result["errors"]] == [1, 2]
    assert "event_id" in result["errors"][0]["detail"] and "data" in result["errors"][1]["detail"]


@POSTGRES_ONLY
@pytest.mark.parametrize("field", ["event", "session_id", "idempotency_key"])
async def test_nul_in_indexed_text_is_422_naming_the_field(
    client: httpx.AsyncClient, field: str
) -> None:
    bad = body(**{field: "a\x00b"})
    response = await client.post("/v1/events", json=bad)
    assert response.status_code == 422 and field in response.text, response.text
    batch = await client.post(
        "/v1/events/batch",
        json={"events": [body(), bad, {**body(), "parent_index": 1}, body()]},
    )
    results = batch.json()["results"]
    assert [r["ok"] for r in results] == [True, False, False, True]
    assert field in results[1]["error"] and "parent_index" in results[2]["error"]
    assert [r["sequence_no"] for r in results if r["ok"]] == [1, 2]
    chain = (await client.get("/v1/events/chain", params={"agent": AGENT})).json()
    assert chain["intact"] and chain["verified"] == 2


async def test_nul_in_data_is_stored_and_read_back(client: httpx.AsyncClient) -> None:
    data = {"text": "a\x00b", "escaped": "\\u0000", "nested": [{"k": "\x00"}]}
    written = (await client.post("/v1/events", json=body(data=data))).json()
    got = (await client.get(f"/v1/events/{written['event_id']}")).json()
    assert got["data"] == data and got["checksum"] == written["checksum"]
    chain = (await client.get("/v1/events/chain", params={"agent": AGENT})).json()
    assert chain["intact"]
