"""Keyword search on PostgreSQL: words split and folded as SQLite's FTS5 ``unicode61`` does,
prefixes, operator characters in user text, and forget clearing the index in its transaction.
(The query-feature suite in ``tests/query`` runs on PostgreSQL as well.)"""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import psycopg

from agentledger.server._search.postgres import search_vector, tsquery_text


def test_search_vector_splits_and_folds_like_unicode61() -> None:
    record = orjson.dumps({"data": {"mail": "Ann@Example.com", "n": [{"t": "Café ORD_12"}]}})
    assert search_vector("tool_call", record) == (
        "'tool':1 'call':2 'ann':3 'example':4 'com':5 'cafe':6 'ord':7 '12':8"
    )
    assert search_vector("erased", None) is None


def test_tsquery_text_never_carries_operators() -> None:
    assert tsquery_text(["Café", "a&b", "x:*|!y", "café"]) == "cafe:* | a:* | b:* | x:* | y:*"
    assert tsquery_text(["&|!():*"]) == ""


async def _search(client: httpx.AsyncClient, query: str, agent: str) -> list[str]:
    response = await client.post(
        "/v1/search", json={"query": query, "agent": agent, "mode": "keyword"}
    )
    assert response.status_code == 200, response.text
    return [hit["event_id"] for hit in response.json()["results"]]


async def test_search_and_forget_on_postgres(
    app_client: httpx.AsyncClient, pg_db: str, agent_name: str
) -> None:
    written: list[dict[str, Any]] = []
    for data in (
        {"note": "Refunded the Café order", "email": "ann@example.com"},
        {"note": "courier lost the parcel"},
    ):
        response = await app_client.post(
            "/v1/events", json={"agent": agent_name, "event": "user_message", "data": data}
        )
        written.append(response.json())
    first = written[0]["event_id"]
    assert await _search(app_client, "refund", agent_name) == [first]
    assert await _search(app_client, "cafe example", agent_name) == [first]
    assert await _search(app_client, "PARCEL's & (courier)", agent_name) == [written[1]["event_id"]]
    response = await app_client.request(
        "DELETE",
        "/v1/memory/forget",
        json={"filter_key": "email", "filter_value": "ann@example.com", "agent": agent_name},
    )
    assert response.status_code == 200 and response.json()["deleted_events"] == 1
    assert await _search(app_client, "refund", agent_name) == []
    with psycopg.connect(pg_db) as conn:
        row = conn.execute(
            "SELECT record, data, search FROM events WHERE event_id = %s", (first,)
        ).fetchone()
    assert row == (None, None, None)
