"""Routes through the in-process app (httpx ASGITransport), read back over the HTTP API."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

import httpx
import orjson
import rfc8785


def ev(agent: str, event: str = "e", **fields: Any) -> dict[str, Any]:
    return {"agent": agent, "event": event, "data": fields.pop("data", {}), **fields}


async def post(client: httpx.AsyncClient, body: dict[str, Any]) -> dict[str, Any]:
    response = await client.post("/v1/events", json=body)
    assert response.status_code in (200, 201), response.text
    result: dict[str, Any] = response.json()
    return result


async def batch(client: httpx.AsyncClient, items: list[dict[str, Any]]) -> dict[str, Any]:
    response = await client.post("/v1/events/batch", json={"events": items})
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


async def test_log_then_get_has_chain_fields(app_client: httpx.AsyncClient) -> None:
    written = await post(app_client, ev("a1", data={"x": 1}, session_id="s1", importance=0.5))
    assert written["sequence_no"] == 1 and written["duplicate"] is False
    got = (await app_client.get(f"/v1/events/{written['event_id']}")).json()
    assert got["data"] == {"x": 1} and got["session_id"] == "s1" and got["importance"] == 0.5
    assert got["checksum"] == written["checksum"] and got["chain_hash"] == written["chain_hash"]
    assert got["received_at"] >= got["timestamp"][:19]


async def test_client_event_id_and_timestamp_are_kept(app_client: httpx.AsyncClient) -> None:
    event_id = str(uuid.uuid4())
    body = ev("a2", event_id=event_id, timestamp="2024-01-02T03:04:05.5Z")
    written = await post(app_client, body)
    assert written["event_id"] == event_id
    assert written["timestamp"] == "2024-01-02T03:04:05.500000+00:00"
    got = (await app_client.get(f"/v1/events/{event_id}")).json()
    assert got["timestamp"] == "2024-01-02T03:04:05.500000+00:00"
    assert got["received_at"] > "2025"


async def test_repeated_event_id_duplicate_or_conflict(app_client: httpx.AsyncClient) -> None:
    event_id = str(uuid.uuid4())
    first = await app_client.post("/v1/events", json=ev("a3", event_id=event_id, data={"v": 1}))
    again = await app_client.post("/v1/events", json=ev("a3", event_id=event_id, data={"v": 1}))
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["duplicate"] is True
    assert again.json()["sequence_no"] == first.json()["sequence_no"]
    other = await app_client.post("/v1/events", json=ev("a3", event_id=event_id, data={"v": 2}))
    assert other.status_code == 409 and "event_id" in other.json()["detail"]
    listed = (await app_client.get("/v1/events", params={"agent": "a3"})).json()
    assert len(listed) == 1


async def test_idempotency_key_is_per_agent(app_client: httpx.AsyncClient) -> None:
    a = await post(app_client, ev("a4", idempotency_key="k"))
    b = await post(app_client, ev("a4b", idempotency_key="k"))
    assert not a["duplicate"] and not b["duplicate"] and a["event_id"] != b["event_id"]


async def test_batch_partial_success_each_item_whole(app_client: httpx.AsyncClient) -> None:
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(100):
        node["n"] = {}
        node = node["n"]
    result = await batch(
        app_client,
        [
            ev("b1", "root"),
            ev("b1", "child", parent_index=0),
            ev("b1", "too-deep", data=deep),
            ev("b1", "orphaned", parent_index=2),
            ev("b1", "bad-index", parent_index=7),
            ev("b1", "both", parent_index=0, parent_id=str(uuid.uuid4())),
            ev("b1", "last", parent_index=1),
        ],
    )
    oks = [r["ok"] for r in result["results"]]
    assert oks == [True, True, False, False, False, False, True]
    assert result["written"] == 3 and result["failed"] == 4
    assert "data.n.n" in result["results"][2]["error"]
    assert "parent_index" in result["results"][3]["error"]
    assert [r["sequence_no"] for r in result["results"] if r["ok"]] == [1, 2, 3]
    listed = (await app_client.get("/v1/events", params={"agent": "b1"})).json()
    assert [e["event"] for e in listed] == ["last", "child", "root"]
    assert listed[0]["parent_id"] == listed[1]["event_id"]
    chain = (await app_client.get("/v1/events/chain", params={"agent": "b1"})).json()
    assert chain["intact"] and chain["chain_head"]["sequence_no"] == 3


async def test_batch_duplicates_and_conflicts_per_item(app_client: httpx.AsyncClient) -> None:
    items = [ev("b2", idempotency_key=f"k{i}", data={"i": i}) for i in range(3)]
    first = await batch(app_client, items)
    assert first["written"] == 3
    items[1]["data"] = {"i": "changed"}
    second = await batch(app_client, [*items, ev("b2", idempotency_key="k0", data={"i": 0})])
    statuses = [(r["ok"], r["duplicate"], r.get("status")) for r in second["results"]]
    dup, conflict = (True, True, None), (False, False, 409)
    assert statuses == [dup, conflict, dup, dup]
    assert second["written"] == 0


async def test_batch_over_500_is_422(app_client: httpx.AsyncClient) -> None:
    response = await app_client.post(
        "/v1/events/batch", json={"events": [ev("b3") for _ in range(501)]}
    )
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "events"]
    assert (await app_client.get("/v1/events", params={"agent": "b3"})).json() == []


async def test_cursor_paging_is_stable_while_writes_continue(
    app_client: httpx.AsyncClient,
) -> None:
    await batch(app_client, [ev("c1", data={"i": i}) for i in range(30)])
    seen: list[int] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"agent": "c1", "limit": 7}
        if cursor:
            params["cursor"] = cursor
        page = (await app_client.get("/v1/events", params=params)).json()
        seen += [e["data"]["i"] for e in page if "i" in e["data"]]
        await post(app_client, ev("c1", data={"late": True}))  # newer rows must not shift pages
        if len(page) < 7:
            break
        cursor = f"{page[-1]['timestamp']}|{page[-1]['sequence_no']}"
    assert seen == list(range(29, -1, -1))


async def test_list_filters(app_client: httpx.AsyncClient) -> None:
    await batch(
        app_client,
        [
            ev("f1", "user_message", session_id="s1", timestamp="2024-01-01T00:00:00Z"),
            ev("f1", "tool_call", session_id="s1", timestamp="2024-01-02T00:00:00Z"),
            ev("f1", "tool_call", session_id="s2", timestamp="2024-01-03T00:00:00Z"),
        ],
    )

    async def events(**params: Any) -> list[str]:
        got = (await app_client.get("/v1/events", params={"agent": "f1", **params})).json()
        return [f"{e['event']}@{e['timestamp'][:10]}" for e in got]

    assert await events(event_type="tool_call") == ["tool_call@2024-01-03", "tool_call@2024-01-02"]
    assert await events(session_id="s1") == ["tool_call@2024-01-02", "user_message@2024-01-01"]
    assert await events(before="2024-01-02T00:00:00Z") == ["user_message@2024-01-01"]
    assert await events(after="2024-01-02T00:00:00Z") == ["tool_call@2024-01-03"]
    assert await events(limit=1, offset=1) == ["tool_call@2024-01-02"]


async def test_sessions_and_replay(app_client: httpx.AsyncClient) -> None:
    await batch(
        app_client,
        [
            ev("s-a", "session_start", session_id="sess-1", timestamp="2024-05-01T00:00:01Z"),
            ev("s-b", "tool_call", session_id="sess-1", timestamp="2024-05-01T00:00:02Z"),
            ev("s-a", "session_end", session_id="sess-1", timestamp="2024-05-01T00:00:03Z"),
            ev("s-a", "session_start", session_id="sess-2", timestamp="2024-05-02T00:00:00Z"),
        ],
    )
    sessions = (await app_client.get("/v1/sessions", params={"agent": "s-a"})).json()
    assert [s["session_id"] for s in sessions] == ["sess-2", "sess-1"]
    one = sessions[1]
    assert one["event_count"] == 3 and one["agents"] == ["s-a", "s-b"]
    assert one["event_types"] == ["session_end", "session_start", "tool_call"]
    assert one["started_at"].startswith("2024-05-01T00:00:01")
    replay = (await app_client.get("/v1/sessions/sess-1/events")).json()
    assert [e["event"] for e in replay["events"]] == ["session_start", "tool_call", "session_end"]
    only_a = (await app_client.get("/v1/sessions/sess-1/events", params={"agent": "s-b"})).json()
    assert [e["event"] for e in only_a["events"]] == ["tool_call"]


async def _chain(client: httpx.AsyncClient, agent: str, n: int) -> list[str]:
    ids = [str(uuid.uuid4()) for _ in range(n)]
    for start in range(0, n, 500):
        await batch(
            client,
            [
                ev(agent, event_id=ids[i], parent_id=ids[i - 1] if i else None)
                for i in range(start, min(n, start + 500))
            ],
        )
    return ids


async def test_why_depth_limits_and_long_chains(app_client: httpx.AsyncClient) -> None:
    ids = await _chain(app_client, "w1", 10_050)
    short = (await app_client.get(f"/v1/events/{ids[20]}/why", params={"depth": 5})).json()
    assert short["chain_length"] == 6 and short["depth_truncated"] and not short["chain_complete"]
    assert [e["event_id"] for e in short["chain"]] == ids[15:21]
    whole = (await app_client.get(f"/v1/events/{ids[20]}/why", params={"depth": 100})).json()
    assert whole["chain_length"] == 21 and whole["chain_complete"] and not whole["orphan"]
    deep = (
        await app_client.get(f"/v1/events/{ids[-1]}/why", params={"depth": 10_000, "limit": 20_000})
    ).json()
    assert deep["chain_length"] == 10_001 and deep["depth_truncated"]
    assert deep["chain"][-1]["event_id"] == ids[-1] and deep["chain"][0]["event_id"] == ids[49]
    assert deep["cut_at"] == [ids[49]] and not deep["size_truncated"]
    # the default size bound (10,000 events) cuts first, and says where
    capped = (await app_client.get(f"/v1/events/{ids[-1]}/why", params={"depth": 10_000})).json()
    assert capped["chain_length"] == 10_000 and capped["size_truncated"]
    assert capped["cut_at"] == [ids[50]] and not capped["chain_complete"]
    too_deep = await app_client.get(f"/v1/events/{ids[-1]}/why", params={"depth": 10_001})
    assert too_deep.status_code == 422


async def test_missing_parent_then_parent_arrives(app_client: httpx.AsyncClient) -> None:
    parent = str(uuid.uuid4())
    child = await post(app_client, ev("m1", "child", parent_id=parent))
    why = (await app_client.get(f"/v1/events/{child['event_id']}/why")).json()
    assert why["missing_parent"] == parent and why["orphan"] and not why["chain_complete"]
    await post(app_client, ev("m1", "parent", event_id=parent))
    why = (await app_client.get(f"/v1/events/{child['event_id']}/why")).json()
    assert why["missing_parent"] is None and why["chain_complete"]
    assert [e["event"] for e in why["chain"]] == ["parent", "child"]


def _ids(n: int) -> list[str]:
    return [str(uuid.uuid4()) for _ in range(n)]


async def test_an_event_cannot_be_its_own_parent(app_client: httpx.AsyncClient) -> None:
    """A self-parent is a 422 naming ``parent_id``, alone and in a batch; nothing is written."""
    (a,) = _ids(1)
    single = await app_client.post("/v1/events", json=ev("cy0", event_id=a, parent_id=a))
    assert single.status_code == 422 and "parent_id" in single.text, single.text
    result = await batch(app_client, [ev("cy0", event_id=a, parent_id=a), ev("cy0")])
    assert [r["ok"] for r in result["results"]] == [False, True]
    assert "parent_id" in result["results"][0]["error"]
    assert (await app_client.get(f"/v1/events/{a}")).status_code == 404


async def test_an_edge_that_closes_a_cycle_is_refused(app_client: httpx.AsyncClient) -> None:
    """A parent may arrive after its child, but an edge that would make an event its own
    ancestor is refused (422 naming ``parent_id``), through stored and same-batch events."""
    a, b, c = _ids(3)
    await post(app_client, ev("cy1", event_id=a, parent_id=b))  # b is not stored yet
    refused = await app_client.post("/v1/events", json=ev("cy1", event_id=b, parent_id=a))
    assert refused.status_code == 422 and "parent_id" in refused.text, refused.text
    # b -> c is fine; then c -> a would close a -> b -> c -> a, across stored and pending rows
    result = await batch(
        app_client, [ev("cy1", event_id=b, parent_id=c), ev("cy1", event_id=c, parent_id=a)]
    )
    assert [r["ok"] for r in result["results"]] == [True, False]
    assert "cycle" in result["results"][1]["error"]
    why = (await app_client.get(f"/v1/events/{a}/why", params={"depth": 10_000})).json()
    assert [e["event_id"] for e in why["chain"]] == [b, a]
    assert why["missing_parent"] == c and not why["depth_truncated"]
    impact = (await app_client.get(f"/v1/events/{b}/impact")).json()
    assert [e["event_id"] for e in impact["events"]] == [a]


async def test_parent_index_and_import_cannot_close_a_cycle(app_client: httpx.AsyncClient) -> None:
    """The same rule on the two other write paths: ``parent_index`` in a batch, and import."""
    x, y = _ids(2)
    result = await batch(
        app_client, [ev("cy2", event_id=x, parent_id=y), ev("cy2", event_id=y, parent_index=0)]
    )
    assert [r["ok"] for r in result["results"]] == [True, False]
    assert "parent_id" in result["results"][1]["error"]
    p, q = _ids(2)
    lines = [
        {**ev("cy3", event_id=p, parent_id=q), "timestamp": "2026-01-01T00:00:00Z"},
        {**ev("cy3", event_id=q, parent_id=p), "timestamp": "2026-01-01T00:00:01Z"},
    ]
    response = await app_client.post("/v1/events/import", json={"events": lines})
    assert response.status_code == 200, response.text
    imported = response.json()
    assert imported["imported"] == 1 and imported["failed"] == 1
    assert imported["errors"][0]["index"] == 1 and "parent_id" in imported["errors"][0]["detail"]


async def test_impact_lists_every_descendant(app_client: httpx.AsyncClient) -> None:
    root = await post(app_client, ev("i1", "root"))
    result = await batch(
        app_client,
        [
            ev("i1", "a", parent_id=root["event_id"]),
            ev("i1", "a.1", parent_index=0),
            ev("i1", "a.2", parent_index=0),
            ev("i1", "a.2.x", parent_index=2),
            ev("i1", "unrelated"),
        ],
    )
    assert result["written"] == 5
    impact = (await app_client.get(f"/v1/events/{root['event_id']}/impact")).json()
    assert impact["count"] == 4 and not impact["truncated"]
    assert sorted(e["event"] for e in impact["events"]) == ["a", "a.1", "a.2", "a.2.x"]
    limited = (
        await app_client.get(f"/v1/events/{root['event_id']}/impact", params={"limit": 2})
    ).json()
    assert limited["count"] == 2 and limited["truncated"]
    leaf = result["results"][3]["event_id"]
    assert (await app_client.get(f"/v1/events/{leaf}/impact")).json()["count"] == 0


async def test_unknown_event_is_404_naming_the_id(app_client: httpx.AsyncClient) -> None:
    missing = str(uuid.uuid4())
    for path in (
        f"/v1/events/{missing}",
        f"/v1/events/{missing}/why",
        f"/v1/events/{missing}/impact",
    ):
        response = await app_client.get(path)
        assert response.status_code == 404 and missing in response.json()["detail"]


async def test_request_id_on_every_response(app_client: httpx.AsyncClient) -> None:
    for response in (
        await app_client.get("/health"),
        await app_client.get("/v1/events", params={"agent": "x"}),
        await app_client.get("/v1/events", params={"agent": "x/y"}),
        await app_client.get("/v1/events", headers={"Authorization": "Bearer nope"}),
        await app_client.get("/nowhere"),
    ):
        assert len(response.headers["x-request-id"]) >= 16
    echoed = await app_client.get("/health", headers={"X-Request-ID": "trace-123"})
    assert echoed.headers["x-request-id"] == "trace-123"


async def test_health_swagger_openapi(app_client: httpx.AsyncClient) -> None:
    health = (await app_client.get("/health", headers={"Authorization": ""})).json()
    assert health["status"] == "ok" and health["version"]
    assert (await app_client.get("/swagger")).status_code == 200
    spec = (await app_client.get("/openapi.json")).json()
    for path in (
        "/v1/events",
        "/v1/events/batch",
        "/v1/events/{event_id}/why",
        "/v1/events/{event_id}/impact",
        "/v1/events/chain",
        "/v1/events/export",
        "/v1/events/import",
        "/v1/sessions",
        "/v1/agents",
        "/v1/keys",
    ):
        assert path in spec["paths"], path


async def test_export_is_ndjson_oldest_first(app_client: httpx.AsyncClient) -> None:
    await batch(app_client, [ev("x1", data={"i": i}) for i in range(5)])
    async with app_client.stream("GET", "/v1/events/export", params={"agent": "x1"}) as response:
        assert response.headers["content-type"].startswith("application/x-ndjson")
        lines = [line async for line in response.aiter_lines() if line]
    rows = [orjson.loads(line) for line in lines]
    assert [r["sequence_no"] for r in rows] == [1, 2, 3, 4, 5]
    assert all(len(r["chain_hash"]) == 64 for r in rows)


async def test_redaction_happens_before_the_checksum(app_client: httpx.AsyncClient) -> None:
    written = await post(
        app_client,
        ev("r1", data={"headers": {"Authorization": "Bearer sk-1"}, "api_key": "x", "n": 1}),
    )
    got = (await app_client.get(f"/v1/events/{written['event_id']}")).json()
    assert got["data"] == {
        "headers": {"Authorization": "[REDACTED]"},
        "api_key": "[REDACTED]",
        "n": 1,
    }
    record = {
        k: got[k]
        for k in (
            "event_id",
            "agent",
            "sequence_no",
            "timestamp",
            "event",
            "data",
            "parent_id",
            "session_id",
            "metadata",
            "supersedes",
        )
    }
    assert hashlib.sha256(rfc8785.dumps(record)).hexdigest() == got["checksum"]
    assert got["chain_hash"] == hashlib.sha256(rfc8785.dumps(record)).hexdigest()
