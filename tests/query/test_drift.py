"""Baselines and drift: GET /v1/agents/{agent}/baseline and /behavior-change."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from ._helpers import batch

FLOW = ["lookup_order", "verify_charge", "issue_refund"]


def session_items(
    agent: str, sid: str, start: datetime, tools: list[str], *, error: bool = False
) -> list[dict[str, Any]]:
    """user_message -> tool_call chain -> llm_end (with usage), each the child of the one before."""
    items: list[dict[str, Any]] = [
        {
            "agent": agent,
            "event": "user_message",
            "session_id": sid,
            "timestamp": start.isoformat(),
            "data": {"text": "refund please"},
        }
    ]
    for tool in tools:
        items.append(
            {
                "agent": agent,
                "event": "tool_call",
                "session_id": sid,
                "timestamp": (start + timedelta(seconds=len(items))).isoformat(),
                "data": {"tool": tool, "args": {}},
                "parent_index": len(items) - 1,
            }
        )
        if error and tool == tools[-1]:
            items.append(
                {
                    "agent": agent,
                    "event": "tool_error",
                    "session_id": sid,
                    "timestamp": (start + timedelta(seconds=len(items))).isoformat(),
                    "data": {"tool": tool, "error": "boom", "type": "RuntimeError"},
                    "parent_index": len(items) - 1,
                }
            )
    items.append(
        {
            "agent": agent,
            "event": "llm_end",
            "session_id": sid,
            "timestamp": (start + timedelta(seconds=len(items))).isoformat(),
            "data": {
                "text": "done",
                "token_usage": {"input_tokens": 100, "output_tokens": 20},
            },
            "parent_index": len(items) - 1,
        }
    )
    return items


async def write_sessions(
    client: httpx.AsyncClient,
    agent: str,
    flows: list[list[str]],
    *,
    start: datetime,
    prefix: str,
    errors: set[int] = frozenset(),  # type: ignore[assignment]
) -> None:
    pending: list[dict[str, Any]] = []
    for index, tools in enumerate(flows):
        items = session_items(
            agent,
            f"{prefix}-{index}",
            start + timedelta(minutes=index),
            tools,
            error=index in errors,
        )
        if len(pending) + len(items) > 500:
            await batch(client, pending)
            pending = []
        offset = len(pending)
        for item in items:
            if "parent_index" in item:
                item["parent_index"] += offset
        pending.extend(items)
    if pending:
        await batch(client, pending)


async def baseline(client: httpx.AsyncClient, agent: str, **params: Any) -> dict[str, Any]:
    response = await client.get(f"/v1/agents/{agent}/baseline", params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_a_skipped_required_step_is_flagged(
    query_client: httpx.AsyncClient, agent_name: str
) -> None:
    t0 = datetime(2025, 3, 1, tzinfo=UTC)
    await write_sessions(query_client, agent_name, [FLOW] * 100, start=t0, prefix="base")
    recent = [FLOW] * 60 + [["lookup_order", "issue_refund"]] * 20
    random.Random(7).shuffle(recent)
    await write_sessions(
        query_client, agent_name, recent, start=t0 + timedelta(days=1), prefix="new"
    )
    report = await baseline(query_client, agent_name, recent_window=80)
    assert report["sessions"] == {"baseline": 100, "recent": 80}
    assert report["verdict"] in ("noticeable_drift", "significant_drift"), report["drift"]
    assert report["p_value"] < 0.01
    missing = [c for c in report["drift"]["step_changes"] if c["kind"] == "missing_step"]
    assert missing and missing[0]["key"] == "tool_call:verify_charge"
    assert missing[0]["baseline_sessions"] == "100/100"
    assert missing[0]["recent_sessions"] == "60/80"
    keys = {c["key"] for c in report["drift"]["biggest_changes"]}
    assert "tool_call:lookup_order -> tool_call:issue_refund" in keys
    assert report["recent"]["transitions"]["tool_call:lookup_order -> tool_call:issue_refund"] > 0
    assert (
        "tool_call:lookup_order -> tool_call:issue_refund" not in report["baseline"]["transitions"]
    )
    assert report["drift_score"] == report["drift"]["score"] > 0
    assert report["baseline"]["tokens_per_session"] == 120


async def test_two_samples_of_one_distribution_are_stable(
    query_client: httpx.AsyncClient, agent_name: str
) -> None:
    rng = random.Random(20250301)

    def one() -> list[str]:
        tools = ["lookup_order"]
        if rng.random() < 0.7:
            tools.append("verify_charge")
        if rng.random() < 0.5:
            tools.append("issue_refund")
        else:
            tools.append("escalate")
        return tools

    t0 = datetime(2025, 3, 1, tzinfo=UTC)
    flows = [one() for _ in range(200)]
    await write_sessions(query_client, agent_name, flows, start=t0, prefix="s")
    report = await baseline(query_client, agent_name, recent_window=80)
    assert report["sessions"] == {"baseline": 120, "recent": 80}
    assert report["verdict"] == "stable", report["drift"]
    assert report["drift"]["step_changes"] == []


async def test_more_errors_are_flagged(query_client: httpx.AsyncClient, agent_name: str) -> None:
    t0 = datetime(2025, 3, 1, tzinfo=UTC)
    await write_sessions(query_client, agent_name, [FLOW] * 60, start=t0, prefix="a")
    await write_sessions(
        query_client,
        agent_name,
        [FLOW] * 40,
        start=t0 + timedelta(days=1),
        prefix="b",
        errors=set(range(0, 40, 2)),
    )
    report = await baseline(query_client, agent_name, recent_window=40)
    assert report["verdict"] != "stable"
    kinds = {c["kind"] for c in report["drift"]["step_changes"]}
    assert "more_errors" in kinds
    assert report["recent"]["error_rate"] == 0.5 and report["baseline"]["error_rate"] == 0


async def test_insufficient_data_says_what_is_needed(
    query_client: httpx.AsyncClient, agent_name: str
) -> None:
    t0 = datetime(2025, 3, 1, tzinfo=UTC)
    await write_sessions(query_client, agent_name, [FLOW] * 12, start=t0, prefix="few")
    report = await baseline(query_client, agent_name, recent_window=5)
    assert report["verdict"] == "insufficient_data" and report["drift_score"] is None
    assert report["needed"]["recent_sessions"] == 10
    assert report["needed"]["have_recent_sessions"] == 5
    assert report["needed"]["have_baseline_sessions"] == 7
    empty = await baseline(query_client, agent_name + "-none")
    assert empty["verdict"] == "insufficient_data"


async def test_time_windows_and_behavior_change(
    query_client: httpx.AsyncClient, agent_name: str
) -> None:
    now = datetime.now(UTC)
    await write_sessions(
        query_client, agent_name, [FLOW] * 30, start=now - timedelta(days=20), prefix="old"
    )
    await write_sessions(
        query_client,
        agent_name,
        [["lookup_order", "issue_refund"]] * 20,
        start=now - timedelta(days=2),
        prefix="new",
    )
    report = await baseline(query_client, agent_name, window="7d")
    assert report["sessions"] == {"baseline": 30, "recent": 20}
    assert report["verdict"] == "significant_drift"
    change = await query_client.get(
        f"/v1/agents/{agent_name}/behavior-change",
        params={
            "from_ts": (now - timedelta(days=3)).isoformat(),
            "to_ts": (now - timedelta(days=1)).isoformat(),
        },
    )
    assert change.status_code == 200, change.text
    body = change.json()
    assert body["sessions"] == {"baseline": 30, "recent": 20}
    assert body["window"]["from_ts"] < body["window"]["to_ts"]
    default = await query_client.get(f"/v1/agents/{agent_name}/behavior-change")
    assert default.json()["sessions"] == {"baseline": 30, "recent": 20}


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [
        ("baseline", {"window": "1y"}, "window"),
        ("baseline", {"recent_window": 0}, "recent_window"),
        ("baseline", {"recent_window": "many"}, "recent_window"),
        ("behavior-change", {"window": "week"}, "window"),
        (
            "behavior-change",
            {"from_ts": "2025-02-01T00:00:00Z", "to_ts": "2025-01-01T00:00:00Z"},
            "from_ts",
        ),
        ("behavior-change", {"from_ts": "yesterday"}, "from_ts"),
    ],
)
async def test_bad_drift_input_is_a_4xx(
    query_client: httpx.AsyncClient, path: str, params: dict[str, Any], field: str
) -> None:
    response = await query_client.get(f"/v1/agents/some-agent/{path}", params=params)
    assert response.status_code == 422, response.text
    assert field in response.text
