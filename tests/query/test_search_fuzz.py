"""Any user text is a valid search (never a 5xx), and the FTS5 erase trigger indexes the
same text as the indexer (a contentless FTS5 'delete' needs the very text indexed)."""

from __future__ import annotations

import sqlite3
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentledger.server._search.sqlite import TEXT_OF


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(text=st.text(min_size=1, max_size=200))
def test_any_text_is_a_valid_search(ledger_server: Any, text: str) -> None:
    with httpx.Client(base_url=ledger_server.url, headers=ledger_server.headers()) as client:
        response = client.post(
            "/v1/search", json={"query": text, "agent": "fuzz-agent", "mode": "keyword"}
        )
    assert response.status_code in (200, 422), response.text
    if response.status_code == 422:
        assert "query" in response.text


def test_erase_trigger_uses_the_indexer_text(ledger_server: Any) -> None:
    with sqlite3.connect(ledger_server.db) as db:
        (sql,) = db.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'events_fts_erase'"
        ).fetchone()
    assert TEXT_OF.format(row="old") in sql
