"""Thin reads over the query routes (search, state at a time, forget, baseline)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from agentledger.client import BaselineReport, vocabulary

from .conftest import Twin, chain_report, maybe, stored_events


async def test_search_at_forget_baseline(
    twin: Twin, ledger_server: Any, agent_name: str, spill_dir: Path
) -> None:
    client = twin.make(ledger_server.url, ledger_server.api_key, agent_name, spill_dir=spill_dir)
    try:
        refunded = client.log("assistant_response", {"text": "I refunded order 42"})
        client.log("assistant_response", {"text": "the weather is fine"})
        client.log(vocabulary.STATE_SET, {"key": "plan", "value": "gold"})
        client.log(vocabulary.STATE_SET, {"key": "email", "value": "a@example.com"})
        client.log(vocabulary.STATE_DELETE, {"key": "plan"})
        assert (await twin.flush(client, 10)).complete

        found = await maybe(client.search("refund", mode="keyword", limit=5))
        assert [hit.event.event_id for hit in found.results] == [refunded.event_id]
        assert found.results[0].score is not None

        now = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1)
        state = await maybe(client.at(now))
        assert state.state == {"email": "a@example.com"}

        dry = await maybe(client.forget("value", "a@example.com", dry_run=True))
        assert dry.deleted_events == 1
        gone = await maybe(client.forget("value", "a@example.com"))
        assert gone.deleted_events == 1

        report = await maybe(client.baseline())
        assert isinstance(report, BaselineReport) and report.verdict
    finally:
        await twin.close(client, 5)
    assert chain_report(ledger_server.url, ledger_server.api_key, agent_name)["intact"] is True
    texts = [
        e["data"].get("value")
        for e in stored_events(ledger_server.url, ledger_server.api_key, agent_name)
    ]
    assert "a@example.com" not in texts


async def test_context_for_and_memory_diff(
    twin: Twin, ledger_server: Any, agent_name: str, spill_dir: Path
) -> None:
    client = twin.make(ledger_server.url, ledger_server.api_key, agent_name, spill_dir=spill_dir)
    try:
        for n in range(3):  # usual sessions: a lookup, then an answer
            sid = f"usual-{n}"
            call = client.log_tool("lookup_order", {"id": n}, session_id=sid)
            client.log(
                "assistant_response", {"text": f"order {n} shipped"}, parent_id=call, session_id=sid
            )
        odd = client.log_tool("issue_refund", {"id": 9}, session_id="odd")
        client.log(
            "tool_error",
            {"tool": "issue_refund", "error": "declined", "type": "E"},
            parent_id=odd,
            session_id="odd",
        )
        assert (await twin.flush(client, 10)).complete

        memory = await maybe(client.context_for("refund for order 9", max_tokens=200))
        assert memory.agent == agent_name and 0 < memory.token_count <= 200
        assert "issue_refund" in memory.context
        assert {s["event_id"] for s in memory.sources} >= {odd.event_id}

        diff = await maybe(client.memory_diff("odd"))
        assert diff.session_id == "odd" and diff.agent == agent_name
        assert diff.has_errors and diff.event_count == 2
        assert "tool_error" in diff.new_event_types
    finally:
        await twin.close(client, 5)
