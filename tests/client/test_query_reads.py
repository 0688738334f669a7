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
