"""GET /v1/events/at (state at a time), POST /v1/memory/context, GET /v1/memory/diff/{sid}."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from ._helpers import batch, log


def state_event(agent: str, kind: str, ts: str, key: str, value: Any = None) -> dict[str, Any]:
    data: dict[str, Any] = {"key": key}
    if kind == "state_set":
        data["value"] = value
    return {"agent": agent, "event": kind, "timestamp": ts, "data": data}


async def at(client: httpx.AsyncClient, agent: str, ts: str) -> dict[str, Any]:
    response = await client.get("/v1/events/at", params={"agent": agent, "timestamp": ts})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_state_at_last_write_per_key_ties_by_sequence(
    query_client: httpx.AsyncClient, agent_name: str
) -> None:
    a = agent_name
    await batch(
        query_client,
        [
            state_event(a, "state_set", "2025-01-01T10:00:00Z", "plan", "free"),
            state_event(a, "state_set", "2025-01-01T10:00:00Z", "mood", {"level": 1}),
            {
                "agent": a,
                "event": "user_message",
                "timestamp": "2025-01-01T10:30:00Z",
                "data": {"text": "upgrade me"},
            },
            state_event(a, "state_set", "2025-01-01T11:00:00Z", "plan", "pro"),
            # Same timestamp: the later sequence number wins.
            state_event(a, "state_set", "2025-01-01T11:00:00Z", "plan", "enterprise"),
            state_event(a, "state_delete", "2025-01-01T12:00:00Z", "mood"),
            state_event(a, "state_set", "2025-01-01T13:00:00Z", "plan", "cancelled"),
        ],
    )
    before = await at(query_client, a, "2025-01-01T09:00:00Z")
    assert before["state"] == {} and before["event_count"] == 0
    first = await at(query_client, a, "2025-01-01T10:45:00Z")
    assert first["state"] == {"plan": "free", "mood": {"level": 1}}
    assert first["event_count"] == 3 and first["truncated"] is False
    tie = await at(query_client, a, "2025-01-01T11:00:00Z")  # inclusive
    assert tie["state"]["plan"] == "enterprise" and tie["event_count"] == 5
    later = await at(query_client, a, "2025-01-01T12:30:00+00:00")
    assert later["state"] == {"plan": "enterprise"}
    assert later["at"] == "2025-01-01T12:30:00.000000+00:00" and later["agent"] == a
    # A time zone offset is honoured: 14:30+02:00 is 12:30 UTC.
    assert (await at(query_client, a, "2025-01-01T14:30:00+02:00"))["state"] == later["state"]
    assert (await at(query_client, a, "2026-01-01T00:00:00Z"))["state"] == {"plan": "cancelled"}


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"agent": "a"}, "timestamp"),
        ({"agent": "a", "timestamp": "noon"}, "timestamp"),
        ({"timestamp": "2025-01-01T00:00:00Z"}, "agent"),
        ({"agent": "a b", "timestamp": "2025-01-01T00:00:00Z"}, "agent"),
    ],
)
async def test_bad_at_input_is_a_4xx(
    query_client: httpx.AsyncClient, params: dict[str, str], field: str
) -> None:
    response = await query_client.get("/v1/events/at", params=params)
    assert response.status_code == 422 and field in response.text


async def test_context_recent_then_relevant_dedup_superseded_budget(
    query_client: httpx.AsyncClient, agent_name: str
) -> None:
    a = agent_name
    old = await log(
        query_client,
        a,
        "state_set",
        {"key": "address", "value": "12 Old Street"},
        timestamp="2025-01-01T00:00:00Z",
        session_id=f"{a}-past",
    )
    await log(
        query_client,
        a,
        "state_set",
        {"key": "address", "value": "99 New Avenue"},
        timestamp="2025-01-02T00:00:00Z",
        session_id=f"{a}-past",
        supersedes=old["event_id"],
    )
    billing = await log(
        query_client,
        a,
        "tool_result",
        {"tool": "billing", "result": "invoice 42 overdue"},
        timestamp="2025-01-03T00:00:00Z",
        session_id=f"{a}-past",
    )
    current = await log(
        query_client,
        a,
        "user_message",
        {"text": "current session invoice question"},
        timestamp="2025-01-04T00:00:00Z",
        session_id=f"{a}-now",
    )
    response = await query_client.post(
        "/v1/memory/context",
        json={
            "agent": a,
            "task": "customer asks about invoice",
            "max_tokens": 500,
            "session_id": f"{a}-now",
        },
    )
    assert response.status_code == 200, response.text
    body = response.json()
    context = body["context"]
    assert "99 New Avenue" in context and "12 Old Street" not in context
    assert "invoice 42 overdue" in context
    assert "current session" not in context
    included = [s["event_id"] for s in body["sources"]]
    assert len(included) == len(set(included))
    assert old["event_id"] not in included and current["event_id"] not in included
    assert billing["event_id"] in included
    assert body["token_count"] <= 500
    assert body["tokenizer"].startswith(("tiktoken:", "estimate:"))
    tight = (
        await query_client.post(
            "/v1/memory/context", json={"agent": a, "task": "invoice", "max_tokens": 30}
        )
    ).json()
    assert tight["token_count"] <= 30 and tight["truncated"] is True
    assert len(tight["sources"]) < len(body["sources"])


async def test_reference_context_body_and_bad_input(
    query_client: httpx.AsyncClient, agent_name: str
) -> None:
    await log(query_client, agent_name, "user_message", {"text": "hello there"})
    ok = await query_client.post(
        "/v1/memory/context",
        json={"agent": agent_name, "task": "greet", "max_tokens": 2000, "session_id": None},
    )
    assert ok.status_code == 200 and "hello there" in ok.json()["context"]
    for body, field in (
        ({"agent": agent_name, "task": ""}, "task"),
        ({"agent": agent_name, "task": "x" * 10_000}, "task"),
        ({"agent": agent_name, "task": "t", "max_tokens": 0}, "max_tokens"),
        ({"task": "t"}, "agent"),
    ):
        response = await query_client.post("/v1/memory/context", json=body)
        assert response.status_code == 422 and field in response.text


async def test_memory_diff_against_usual_sessions(
    query_client: httpx.AsyncClient, agent_name: str
) -> None:
    a = agent_name
    items: list[dict[str, Any]] = []
    for i in range(6):
        sid = f"{a}-usual-{i}"
        items += [
            {
                "agent": a,
                "event": "user_message",
                "session_id": sid,
                "data": {"text": "hi"},
                "timestamp": f"2025-01-0{i + 1}T00:00:00Z",
            },
            {
                "agent": a,
                "event": "tool_call",
                "session_id": sid,
                "data": {"tool": "verify_charge", "args": {}},
                "parent_index": len(items),
                "timestamp": f"2025-01-0{i + 1}T00:00:01Z",
            },
        ]
    odd = len(items)
    items += [
        {
            "agent": a,
            "event": "user_message",
            "session_id": f"{a}-odd",
            "data": {"text": "hi"},
            "timestamp": "2025-01-09T00:00:00Z",
        },
        {
            "agent": a,
            "event": "tool_call",
            "session_id": f"{a}-odd",
            "data": {"tool": "issue_refund", "args": {}},
            "parent_index": odd,
            "timestamp": "2025-01-09T00:00:02Z",
        },
        {
            "agent": a,
            "event": "tool_error",
            "session_id": f"{a}-odd",
            "data": {"tool": "issue_refund", "error": "declined", "type": "CardError"},
            "parent_index": odd + 1,
            "timestamp": "2025-01-09T00:00:04Z",
        },
    ]
    await batch(query_client, items)
    response = await query_client.get(f"/v1/memory/diff/{a}-odd")
    assert response.status_code == 200, response.text
    diff = response.json()
    assert diff["agent"] == a and diff["event_count"] == 3 and diff["causal_depth"] == 3
    assert diff["has_errors"] is True and diff["new_event_types"] == ["tool_error"]
    assert "tool_call:issue_refund" in diff["new_steps"]
    assert diff["missing_steps"] == ["tool_call:verify_charge"]
    assert diff["duration_s"] == 4.0 and diff["compared_to"]["sessions"] == 6
    assert "3 events" in diff["summary"]
    missing = await query_client.get("/v1/memory/diff/no-such-session")
    assert missing.status_code == 404
