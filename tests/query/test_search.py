"""POST /v1/search: keyword (FTS5 BM25, prefixes), filters, superseded, bad input."""

from __future__ import annotations

import httpx
import pytest

from ._helpers import batch, ids, log, search


def letters(agent_name: str) -> str:
    """A word unique to the test, letters only (hex digits can read as numbers to a parser)."""
    return "zq" + "".join(chr(ord("g") + int(c, 16)) for c in agent_name.rsplit("-", 1)[-1])


async def test_keyword_prefix_and_bm25_rank(
    query_client: httpx.AsyncClient, agent_name: str
) -> None:
    both = await log(
        query_client, agent_name, "tool_call", {"tool": "refund", "args": {"note": "card refunded"}}
    )
    one = await log(query_client, agent_name, "user_message", {"text": "was my order refunded?"})
    other = await log(query_client, agent_name, "user_message", {"text": "where is my parcel"})
    body = await search(query_client, "refund card", agent=agent_name, mode="keyword")
    assert body["mode"] == "keyword"
    found = ids(body)
    assert found[:2] == [both["event_id"], one["event_id"]]  # more words matched ranks first
    assert other["event_id"] not in found
    assert all(isinstance(r["score"], float) for r in body["results"])
    assert body["results"][0]["data"]["args"]["note"] == "card refunded"


async def test_event_type_and_nested_strings_are_indexed(
    query_client: httpx.AsyncClient, agent_name: str
) -> None:
    deep = await log(
        query_client,
        agent_name,
        "retrieval",
        {"query": "x", "documents": [{"id": 1, "text": "warranty policy for zebras"}]},
    )
    typed = await log(query_client, agent_name, "interrupted", {"reason": "human review"})
    assert ids(await search(query_client, "zebra", agent=agent_name)) == [deep["event_id"]]
    assert ids(await search(query_client, "interrupted", agent=agent_name)) == [typed["event_id"]]


@pytest.mark.parametrize(
    "query",
    [
        '"refund',
        "refund*",
        "refund OR",
        "NEAR(refund order)",
        "-refund",
        "data:refund",
        "refund)(",
        "'refund'",
        "refund AND NOT ^",
        "{refund}",
    ],
)
async def test_query_syntax_in_user_text_is_searched_not_parsed(
    query_client: httpx.AsyncClient, agent_name: str, query: str
) -> None:
    written = await log(query_client, agent_name, "user_message", {"text": "refund please"})
    body = await search(query_client, query, agent=agent_name, mode="keyword")
    assert ids(body) == [written["event_id"]]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"query": ""}, "query"),
        ({"query": "   "}, "query"),
        ({"query": "x" * 10_000}, "query"),
        ({"query": '"*()^ -'}, "query"),
        ({"query": "a", "mode": "fuzzy"}, "mode"),
        ({"query": "a", "limit": 0}, "limit"),
        ({"query": "a", "agent": "../etc"}, "agent"),
        ({"query": "a", "surprise": 1}, "surprise"),
        ({"query": "a\x00b"}, "query"),
        ({"query": "a", "event_types": ["\x00"]}, "event_types"),
        ({"query": "a", "session_id": "s\x00"}, "session_id"),
        (
            {"query": "a", "from_ts": "2025-02-01T00:00:00Z", "to_ts": "2025-01-01T00:00:00Z"},
            "from_ts",
        ),
    ],
)
async def test_bad_search_input_is_a_4xx_naming_the_field(
    query_client: httpx.AsyncClient, body: dict[str, object], field: str
) -> None:
    response = await query_client.post("/v1/search", json=body)
    assert response.status_code == 422, response.text
    assert field in response.text


async def test_filters_agent_session_types_time_and_limit(
    query_client: httpx.AsyncClient, agent_name: str
) -> None:
    other_agent = agent_name + "-other"
    items = [
        {
            "agent": agent_name,
            "event": "tool_call",
            "session_id": "s1",
            "timestamp": "2025-01-01T00:00:00Z",
            "data": {"tool": "lookup", "args": {"q": "invoice"}},
        },
        {
            "agent": agent_name,
            "event": "user_message",
            "session_id": "s2",
            "timestamp": "2025-01-02T00:00:00Z",
            "data": {"text": "invoice missing"},
        },
        {
            "agent": agent_name,
            "event": "user_message",
            "session_id": "s2",
            "timestamp": "2025-01-03T00:00:00Z",
            "data": {"text": "invoice again"},
        },
        {
            "agent": other_agent,
            "event": "user_message",
            "data": {"text": "invoice elsewhere"},
        },
    ]
    written = [r["event_id"] for r in await batch(query_client, items)]
    mine = set(ids(await search(query_client, "invoice", agent=agent_name)))
    assert mine == set(written[:3])
    assert ids(await search(query_client, "invoice", agent=agent_name, session_id="s1")) == [
        written[0]
    ]
    by_type = await search(query_client, "invoice", agent=agent_name, event_types=["user_message"])
    assert set(ids(by_type)) == set(written[1:3])
    ranged = await search(
        query_client,
        "invoice",
        agent=agent_name,
        from_ts="2025-01-02T00:00:00Z",
        to_ts="2025-01-02T12:00:00Z",
    )
    assert ids(ranged) == [written[1]]
    assert len((await search(query_client, "invoice", agent=agent_name, limit=2))["results"]) == 2
    marker = letters(agent_name)  # unique per test: the store may be shared
    await batch(
        query_client,
        [
            {"agent": agent_name, "event": "note", "data": {"text": f"ledger {marker}"}},
            {"agent": other_agent, "event": "note", "data": {"text": f"ledger {marker}"}},
        ],
    )
    everyone = await search(query_client, marker, limit=50)
    assert {r["agent"] for r in everyone["results"]} == {agent_name, other_agent}


async def test_superseded_events_are_hidden_unless_asked(
    query_client: httpx.AsyncClient, agent_name: str
) -> None:
    old = await log(query_client, agent_name, "state_set", {"key": "plan", "value": "gold tier"})
    new = await log(
        query_client,
        agent_name,
        "state_set",
        {"key": "plan", "value": "gold tier cancelled"},
        supersedes=old["event_id"],
    )
    assert ids(await search(query_client, "gold", agent=agent_name)) == [new["event_id"]]
    both = await search(query_client, "gold", agent=agent_name, include_superseded=True)
    assert set(ids(both)) == {old["event_id"], new["event_id"]}
    # History keeps it: the superseded event is still readable and on the chain.
    assert (await query_client.get(f"/v1/events/{old['event_id']}")).status_code == 200
    chain = (await query_client.get("/v1/events/chain", params={"agent": agent_name})).json()
    assert chain["intact"] and chain["verified"] == 2


async def test_semantic_without_embeddings_says_how_to_switch_them_on(
    query_client: httpx.AsyncClient, agent_name: str
) -> None:
    await log(query_client, agent_name, "user_message", {"text": "hello"})
    for mode in ("semantic", "hybrid"):
        response = await query_client.post("/v1/search", json={"query": "hello", "mode": mode})
        assert response.status_code == 400
        assert "AGENTLEDGER_EMBEDDINGS_URL" in response.json()["detail"]
    auto = await search(query_client, "hello", agent=agent_name)
    assert auto["mode"] == "keyword" and len(auto["results"]) == 1


async def test_agent_bound_key_searches_only_its_agent(
    query_client: httpx.AsyncClient, agent_name: str
) -> None:
    other = agent_name + "-x"
    mine = await log(query_client, agent_name, "user_message", {"text": "bound search"})
    await log(query_client, other, "user_message", {"text": "bound search"})
    created = await query_client.post(
        "/v1/keys", json={"name": "bound", "agent": agent_name, "scope": "read_only"}
    )
    assert created.status_code in (200, 201), created.text
    headers = {"Authorization": f"Bearer {created.json()['key']}"}
    response = await query_client.post("/v1/search", json={"query": "bound"}, headers=headers)
    assert response.status_code == 200 and ids(response.json()) == [mine["event_id"]]
    denied = await query_client.post(
        "/v1/search", json={"query": "bound", "agent": other}, headers=headers
    )
    assert denied.status_code == 403


async def test_reference_client_body_shape_is_accepted(
    query_client: httpx.AsyncClient, agent_name: str
) -> None:
    marker = letters(agent_name)
    written = await log(query_client, agent_name, "user_message", {"text": f"zizka {marker}"})
    # zizkadb-sdk 0.5.0 sends agent: null explicitly and no mode.
    response = await query_client.post(
        "/v1/search", json={"query": marker, "agent": None, "limit": 10}
    )
    assert response.status_code == 200
    assert written["event_id"] in ids(response.json())
