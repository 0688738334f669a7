"""Keyword search ranks on both stores (BM25 on SQLite's FTS5, an IDF-weighted ``ts_rank`` on
PostgreSQL): a rare word outranks a common one, more matched words and more occurrences rank
higher, and every hit has a positive score, best first (docs: Query features, "Search")."""

from __future__ import annotations

import httpx

from ._helpers import batch, ids, search


def _events(agent: str, texts: list[str], session: str) -> list[dict[str, object]]:
    return [
        {"agent": agent, "event": "llm_end", "session_id": session, "data": {"text": t}}
        for t in texts
    ]


async def test_a_rare_word_outranks_a_common_one(
    query_client: httpx.AsyncClient, agent_name: str
) -> None:
    paris = [f"Paris today: warm and sunny, {n} degrees, light wind" for n in range(20, 32)]
    oslo = ["Oslo today: cold and cloudy, 3 degrees, light wind"]
    await batch(query_client, _events(agent_name, paris, "paris"))
    [oslo_id] = ids_of(await batch(query_client, _events(agent_name, oslo, "oslo")))
    body = await search(query_client, "warm Oslo", agent=agent_name, limit=3, mode="keyword")
    assert ids(body)[0] == oslo_id, body["results"]
    scores = [r["score"] for r in body["results"]]
    assert all(score > 0 for score in scores), scores
    assert scores[0] > scores[1], scores
    # the same for the words in the other order, and for a question
    again = await search(query_client, "what is the weather in Oslo", agent=agent_name, limit=3)
    assert ids(again)[0] == oslo_id


async def test_more_matched_words_and_more_occurrences_rank_higher(
    query_client: httpx.AsyncClient, agent_name: str
) -> None:
    texts = [
        "invoice sent to the customer by mail",  # invoice only
        "refund issued, invoice corrected for the customer",  # refund and invoice
        "refund refund refund: the customer asked three times",  # refund thrice
        "refund requested by the customer at the counter",  # refund once
        "parcel delivered to the customer at the door",  # neither
    ]
    written = ids_of(await batch(query_client, _events(agent_name, texts, "s")))
    both = await search(query_client, "refund invoice", agent=agent_name, mode="keyword")
    assert ids(both)[0] == written[1]
    assert written[4] not in ids(both)
    counts = await search(query_client, "refund", agent=agent_name, mode="keyword")
    order = ids(counts)
    assert order.index(written[2]) < order.index(written[3]), counts["results"]
    scores = [r["score"] for r in counts["results"]]
    assert scores == sorted(scores, reverse=True) and all(s > 0 for s in scores)


def ids_of(results: list[dict[str, object]]) -> list[str]:
    return [str(r["event_id"]) for r in results]
