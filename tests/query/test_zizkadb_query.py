"""The reference client zizkadb-sdk 0.5.0 against the query routes, unchanged: search, at,
forget, baseline, behavior_change, context_for, context_for_full, memory_diff, on either store
(``store_server``)."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

os.environ.setdefault("ZIZKADB_TELEMETRY", "false")
os.environ.setdefault("ZIZKADB_QUIET", "1")

zizkadb = pytest.importorskip("zizkadb")


@pytest.fixture
def db(store_server: Any) -> Any:
    return zizkadb.ZizkaDB(api_key=store_server.api_key, host=store_server.url)


async def test_reference_client_query_calls(db: Any, agent_name: str) -> None:
    t0 = datetime.now(UTC) - timedelta(days=1)
    written = []
    for i in range(24):
        sid = f"{agent_name}-s{i}"
        root = await db.log(
            agent=agent_name,
            event="user_message",
            data={"text": f"refund request {i}", "user_id": f"u{i % 3}-{agent_name}"},
            session_id=sid,
        )
        written.append(root.event_id)
        await db.log_tool(
            agent_name, "lookup_order", args={"n": i}, parent_id=root.event_id, session_id=sid
        )
    await db.log(agent=agent_name, event="state_set", data={"key": "tier", "value": "gold"})
    hits = await db.search("refunds", agent=agent_name, limit=5)  # stemmed: refund
    assert len(hits) == 5 and all(h.score is not None for h in hits)
    assert {h.event for h in hits} == {"user_message"}
    keyword = await db.search("refund", mode="keyword", limit=3)
    assert len(keyword) >= 1
    state = await db.at(agent_name, datetime.now(UTC) + timedelta(seconds=5))
    assert state.state == {"tier": "gold"} and state.event_count == 49
    assert (await db.at(agent_name, t0)).state == {}
    report = await db.baseline(agent_name, recent_window=10)
    assert report["verdict"] == "stable" and report["drift"]["verdict"] == "stable"
    assert "score" in report["drift"] and "biggest_changes" in report["drift"]
    change = await db.behavior_change(agent_name, window="24h")
    assert change["verdict"] == "insufficient_data"
    context = await db.context_for(agent_name, "customer wants a refund", max_tokens=300)
    assert "refund request" in context
    full = await db.context_for_full(agent_name, "refund", max_tokens=300)
    assert full["token_count"] <= 300 and full["sources"]
    diff = await db.memory_diff(f"{agent_name}-s3")
    assert diff["event_count"] == 2 and diff["has_errors"] is False
    assert diff["summary"].startswith(f"Session with agent '{agent_name}'")
    erased = await db.forget("user_id", f"u1-{agent_name}")  # unique: no agent scope
    assert erased["deleted_events"] == 8
    chain = await db.verify_chain(agent_name)
    assert chain["intact"] is True and chain["erased"] == 8
