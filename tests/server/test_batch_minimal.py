"""``POST /v1/events/batch`` with ``Prefer: return=minimal`` (RFC 7240), on both stores.

The client's sender asks for it: it needs the counts and what failed, not a receipt per stored
event. The answer must say the preference was applied, list every failed item with its index
and nothing else, and count what it leaves out; what is stored is the same either way.
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from _servers import ServerProcess


def _client(server: ServerProcess) -> httpx.Client:
    return httpx.Client(base_url=server.url, headers=server.headers(), timeout=60)


def _batch(agent: str, session: str) -> tuple[list[dict[str, Any]], str]:
    """Five items: three new, one repeat of the first, one refused (a parent_index ahead)."""
    first = str(uuid.uuid4())
    items: list[dict[str, Any]] = [
        {"event_id": first, "agent": agent, "event": "user_message", "data": {"text": "hi"}},
        {"agent": agent, "event": "llm_call", "data": {"n": 1}, "parent_id": first},
        {"event_id": first, "agent": agent, "event": "user_message", "data": {"text": "hi"}},
        {"agent": agent, "event": "llm_response", "data": {"n": 2}, "parent_index": 4},
        {"agent": agent, "event": "assistant_response", "data": {"text": "ok"}},
    ]
    for item in items:
        item["session_id"] = session
    return items, first


@pytest.mark.parametrize(
    "prefer",
    [
        ["return=minimal"],
        ["Return=Minimal"],
        ["respond-async, return=minimal"],
        ["return = minimal"],
        ["return\t=\tminimal; extra=1"],
        ['return="minimal"'],
        ["respond-async", "return=minimal"],  # two header lines are one list
    ],
)
def test_a_minimal_answer_lists_only_the_failures_and_counts_the_rest(
    store_server: ServerProcess, agent_name: str, prefer: list[str]
) -> None:
    session = f"s-{uuid.uuid4()}"
    items, first = _batch(agent_name, session)
    with _client(store_server) as client:
        response = client.post(
            "/v1/events/batch",
            json={"events": items},
            headers=[("Prefer", value) for value in prefer],
        )
        assert response.status_code == 200, response.text
        assert response.headers["preference-applied"] == "return=minimal"
        body = response.json()
        assert (body["written"], body["duplicates"], body["failed"]) == (3, 1, 1)
        (failure,) = body["results"]
        assert failure["index"] == 3 and failure["ok"] is False and failure["status"] == 422
        assert "parent_index" in failure["error"]
        stored = client.get(
            "/v1/events", params={"agent": agent_name, "session_id": session, "limit": 50}
        ).json()
    assert sorted(e["event"] for e in stored) == ["assistant_response", "llm_call", "user_message"]
    assert first in {e["event_id"] for e in stored}


@pytest.mark.parametrize(
    "prefer",
    [
        None,
        "return=representation",
        "return=minimalist",
        "return=",
        "return=representation, return=minimal",  # of a repeated preference the first counts
    ],
)
def test_without_the_preference_every_item_has_its_receipt(
    store_server: ServerProcess, agent_name: str, prefer: str | None
) -> None:
    items, _ = _batch(agent_name, f"s-{uuid.uuid4()}")
    headers = {} if prefer is None else {"Prefer": prefer}
    with _client(store_server) as client:
        response = client.post("/v1/events/batch", json={"events": items}, headers=headers)
    assert response.status_code == 200, response.text
    assert "preference-applied" not in response.headers
    body = response.json()
    assert [r["index"] for r in body["results"]] == [0, 1, 2, 3, 4]
    assert all(r["sequence_no"] and r["chain_hash"] for r in body["results"] if r["ok"])
    assert (body["written"], body["duplicates"], body["failed"]) == (3, 1, 1)


def test_a_minimal_answer_with_nothing_failed_has_no_results(
    store_server: ServerProcess, agent_name: str
) -> None:
    items = [{"agent": agent_name, "event": "step_start", "data": {"i": i}} for i in range(500)]
    with _client(store_server) as client:
        full = client.post("/v1/events/batch", json={"events": items[:250]})
        minimal = client.post(
            "/v1/events/batch", json={"events": items[250:]}, headers={"Prefer": "return=minimal"}
        )
        chain = client.get("/v1/events/chain", params={"agent": agent_name}).json()
    assert minimal.json() == {"written": 250, "failed": 0, "duplicates": 0, "results": []}
    assert len(minimal.content) * 100 < len(full.content)
    assert chain["intact"] and chain["verified"] == 500, chain
