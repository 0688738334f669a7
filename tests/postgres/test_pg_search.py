"""Keyword search on PostgreSQL: words split and folded as SQLite's FTS5 ``unicode61`` does,
prefixes, operator characters in user text, and forget clearing the index in its transaction.
(The query-feature suite in ``tests/query`` runs on PostgreSQL as well.)"""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import psycopg

from agentledger.server._search.postgres import MAX_VECTOR_BYTES, search_vector, tsquery_text
from agentledger.server._search.stem import light_stem


def test_search_vector_splits_and_folds_like_unicode61() -> None:
    record = orjson.dumps({"data": {"mail": "Ann@Example.com", "n": [{"t": "Café ORD_12"}]}})
    assert search_vector("tool_call", record) == (
        "'tool':1 'call':2 'ann':3 'example':4 'com':5 'cafe':6 'ord':7 '12':8"
    )
    assert search_vector("erased", None) is None


def test_tsquery_text_never_carries_operators() -> None:
    assert tsquery_text(["Café", "a&b", "x:*|!y", "café"]) == "cafe:* | a:* | b:* | x:* | y:*"
    assert tsquery_text(["&|!():*"]) == ""


def test_a_query_word_with_an_english_ending_is_also_searched_by_its_stem() -> None:
    """docs/pages/query.md: English stems match on both stores (``refunds`` finds ``refund``)."""
    assert tsquery_text(["Refunds", "refund"]) == "refunds:* | refund:*"
    forms = {
        "refunds": "refund",
        "refunded": "refund",
        "refunding": "refund",
        "boxes": "box",
        "stopped": "stop",
        "billing": "bill",
        "policies": "polic",
        "tests": "test",
    }
    for word, stem in forms.items():
        assert light_stem(word) == stem, word
    for word in ("is", "bus", "class", "gas", "sing", "red", "bed", "process", "sed"):
        assert light_stem(word) == word


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


def _accepted(pg_db: str, vector: str) -> tuple[int, int]:
    """How many lexemes PostgreSQL's ``tsvector`` input keeps of ``vector``, and their bytes."""
    with psycopg.connect(pg_db) as conn:
        row = conn.execute(
            "SELECT count(*), sum(octet_length(word)) "
            "FROM unnest(tsvector_to_array(CAST(%s AS tsvector))) AS word",
            (vector,),
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def test_search_vector_always_fits_postgres_limits(pg_db: str) -> None:
    """Beyond PostgreSQL's limits (1 MiB of words, 2047-byte words, 256 positions per word,
    positions up to 16383) the vector is cut, never refused; the first words always stay."""
    many = " ".join(f"w{n:06d}x" for n in range(150_000))  # 1.35 MB of distinct words
    one = "again " * 300_000  # 1.8 MB of one word
    long = " ".join(chr(0x4E00 + n) * 682 for n in range(1_000))  # 2046-byte words
    for text in (many, one, long, "a" * 3000 + " kept"):
        vector = search_vector("start", orjson.dumps({"data": {"text": text}}))
        assert vector is not None and len(vector.encode()) > 0
        lexemes, size = _accepted(pg_db, vector)
        assert vector.startswith("'start':1 ")
        assert lexemes == vector.count("'") // 2 and size <= MAX_VECTOR_BYTES
    assert search_vector("e", orjson.dumps({"data": {"t": one}})) == (
        "'e':1 'again':" + ",".join(str(n) for n in range(2, 258))
    )
    cut = search_vector("e", orjson.dumps({"data": {"t": many}}))
    assert cut is not None and "'w000000x':2 " in cut and "w149999x" not in cut
    assert _accepted(pg_db, cut)[1] > MAX_VECTOR_BYTES - 10  # cut at the bound, not before
    assert search_vector("e", orjson.dumps({"data": {"t": "a" * 3000 + " kept"}})) == (
        "'e':1 'kept':3"
    )
