"""The one thing a key bound to an agent learns about another agent's events: an event id is
unique in the whole ledger, so writing an id another agent already stored is refused (409),
whichever key asks (docs/pages/server.md, "What a key may see"). The refusal is the same as for
an id of the key's own agent written again with another body: it names no agent and shows
nothing of the stored event."""

from __future__ import annotations

from typing import Any

import httpx

from _twin_ledgers import SECRET, A, Twins

Body = dict[str, Any]


def line(event_id: str, topic: str) -> Body:
    return {"event_id": event_id, "agent": A, "event": "note", "data": {"topic": topic}}


ROUTES = [
    ("/v1/events", lambda event: event),
    ("/v1/events/batch", lambda event: {"events": [event]}),
    ("/v1/events/import", lambda event: {"events": [event]}),
]


async def test_another_agents_id_is_refused_like_an_own_id_reused(twin: Twins) -> None:
    n = twin.n
    bound = twin.with_b.clients["bound"]
    for route, wrap in ROUTES:
        theirs: httpx.Response = await bound.post(route, json=wrap(line(n["b0"], "x")))
        mine: httpx.Response = await bound.post(route, json=wrap(line(n["a0"], "x")))
        assert theirs.status_code == mine.status_code, route
        assert theirs.text.replace(n["b0"], n["a0"]) == mine.text, route
        assert "already used" in theirs.text and SECRET not in theirs.text
        assert "scope-b" not in theirs.text
    # nothing of B changed
    admin = twin.with_b.clients["admin"]
    stored = (await admin.get(f"/v1/events/{n['b0']}")).json()
    assert stored["agent"] == "scope-b" and stored["data"]["word"] == SECRET


async def test_a_cycle_through_another_agents_events_is_refused_naming_none_of_them(
    twin: Twins,
) -> None:
    """Only an unbound key can link across agents; if it did, a bound key's write that would
    close a cycle through the other agent's events is still refused (the causal graph stays
    acyclic), and the refusal names only the key's own event and the id it wrote."""
    n = twin.n
    x, b_child, a_child = n["n20"], n["n21"], n["n22"]
    admin = twin.with_b.clients["admin"]
    b_event = {"event_id": b_child, "agent": "scope-b", "event": "note", "data": {}}
    assert (await admin.post("/v1/events", json=b_event | {"caused_by": [x]})).status_code == 201
    a_event = {"event_id": a_child, "agent": A, "event": "note", "data": {}, "parent_id": b_child}
    assert (await admin.post("/v1/events", json=a_event)).status_code == 201
    bound = twin.with_b.clients["bound"]
    closing = await bound.post("/v1/events", json=line(x, "x") | {"parent_id": a_child})
    assert closing.status_code == 422, closing.text
    assert closing.json()["detail"] == (
        f"parent_id: {a_child} descends from event {x}; the edge would close a cycle"
    )
