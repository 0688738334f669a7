"""What a key may do to other agents' events, route by route, with bound, read-only and admin
keys: ``supersedes`` replaces only an event of its own agent (any key); a key bound to one
agent names as a cause only its own agent's events, and another agent's id is answered
exactly like an id never stored, on writes and in why()/impact() (docs/pages/causal-edges.md,
docs/design/server-lineage.md)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

A, B = "scope-a", "scope-b"


def ev(agent: str, event_id: str | None = None, **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"agent": agent, "event": "note", "data": fields.pop("data", {})}
    if event_id is not None:
        body["event_id"] = event_id
    return body | fields


def new_id() -> str:
    return str(uuid.uuid4())


@asynccontextmanager
async def keyed(
    app: FastAPI, admin: httpx.AsyncClient, *, agent: str | None, scope: str
) -> AsyncIterator[httpx.AsyncClient]:
    created = await admin.post(
        "/v1/keys", json={"name": f"k-{agent}-{scope}", "agent": agent, "scope": scope}
    )
    assert created.status_code == 201, created.text
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://ledger.test",
        headers={"Authorization": f"Bearer {created.json()['key']}"},
    ) as client:
        yield client


async def post(client: httpx.AsyncClient, body: dict[str, Any]) -> httpx.Response:
    return await client.post("/v1/events", json=body)


async def search_ids(client: httpx.AsyncClient, agent: str, query: str) -> set[str]:
    found = await client.post("/v1/search", json={"query": query, "agent": agent, "limit": 50})
    assert found.status_code == 200, found.text
    return {r["event_id"] for r in found.json()["results"]}


def swap(text: str, old: str, new: str) -> str:
    return text.replace(old, new)


# -- supersedes ------------------------------------------------------------------------------


async def test_supersedes_across_agents_is_refused_for_every_key(
    app: FastAPI, app_client: httpx.AsyncClient
) -> None:
    theirs = (await post(app_client, ev(B, data={"plan": "gold tier"}))).json()["event_id"]
    assert theirs in await search_ids(app_client, B, "gold")
    # the admin key (unbound) on every write route
    single = await post(app_client, ev(A, supersedes=theirs, data={"plan": "gold cancelled"}))
    assert single.status_code == 422 and "supersedes" in single.text
    batch = await app_client.post("/v1/events/batch", json={"events": [ev(A, supersedes=theirs)]})
    (item,) = batch.json()["results"]
    assert not item["ok"] and item["status"] == 422 and "supersedes:" in item["error"]
    imported = await app_client.post(
        "/v1/events/import", json={"events": [ev(A, new_id(), supersedes=theirs)]}
    )
    assert imported.json()["failed"] == 1 and "supersedes" in imported.text
    # within one batch: the earlier item is another agent's
    first = new_id()
    mixed = await app_client.post(
        "/v1/events/batch", json={"events": [ev(B, first), ev(A, supersedes=first)]}
    )
    assert [r["ok"] for r in mixed.json()["results"]] == [True, False]
    async with keyed(app, app_client, agent=A, scope="read_write") as bound:
        refused = await post(bound, ev(A, supersedes=theirs))
        unknown_id = new_id()
        unknown = await post(bound, ev(A, supersedes=unknown_id))
        assert refused.status_code == unknown.status_code == 422
        assert swap(refused.text, theirs, unknown_id) == unknown.text
        assert "supersedes" in refused.text
    async with keyed(app, app_client, agent=None, scope="read_only") as read_only:
        assert (await post(read_only, ev(A, supersedes=theirs))).status_code == 403
    assert theirs in await search_ids(app_client, B, "gold")  # B's search is unchanged
    memory = await app_client.post("/v1/memory/context", json={"agent": B, "task": "gold plan"})
    if memory.status_code == 200:
        assert "gold tier" in memory.text


async def test_supersedes_within_an_agent_still_replaces(
    app: FastAPI, app_client: httpx.AsyncClient
) -> None:
    old = (await post(app_client, ev(A, data={"plan": "silver tier"}))).json()["event_id"]
    async with keyed(app, app_client, agent=A, scope="read_write") as bound:
        new = await post(bound, ev(A, supersedes=old, data={"plan": "silver cancelled"}))
        assert new.status_code == 201, new.text
        # an earlier item of the same batch may be replaced too
        first = new_id()
        batch = await bound.post(
            "/v1/events/batch",
            json={"events": [ev(A, first, data={"w": "x"}), ev(A, supersedes=first)]},
        )
        assert [r["ok"] for r in batch.json()["results"]] == [True, True], batch.text
    assert await search_ids(app_client, A, "silver") == {new.json()["event_id"]}


async def test_a_supersedes_named_before_its_target_hides_nothing_of_another_agent(
    app_client: httpx.AsyncClient,
) -> None:
    """An unbound key may name an id not stored yet; if that id is later stored under another
    agent, that agent's search still finds it."""
    later = new_id()
    assert (await post(app_client, ev(A, supersedes=later))).status_code == 201
    assert (await post(app_client, ev(B, later, data={"plan": "bronze"}))).status_code == 201
    assert later in await search_ids(app_client, B, "bronze")


# -- cause edges -----------------------------------------------------------------------------

EdgeBody = Callable[[str], dict[str, Any]]
EDGES: list[tuple[str, EdgeBody]] = [
    ("parent_id", lambda cause: ev(A, parent_id=cause)),
    ("caused_by", lambda cause: ev(A, caused_by=[cause])),
    ("caused_by", lambda cause: ev(A, caused_by=[{"event_id": cause, "kind": "read"}])),
]


@pytest.mark.parametrize(("field", "body"), EDGES)
async def test_a_bound_keys_edge_to_another_agent_is_answered_like_an_unknown_id(
    app: FastAPI, app_client: httpx.AsyncClient, field: str, body: EdgeBody
) -> None:
    theirs = (await post(app_client, ev(B))).json()["event_id"]
    unknown = new_id()
    async with keyed(app, app_client, agent=A, scope="read_write") as bound:
        for route, wrap in [
            ("/v1/events", lambda item: item),
            ("/v1/events/batch", lambda item: {"events": [item]}),
        ]:
            to_theirs = await bound.post(route, json=wrap(body(theirs)))
            to_unknown = await bound.post(route, json=wrap(body(unknown)))
            assert to_theirs.status_code == to_unknown.status_code, route
            assert swap(to_theirs.text, theirs, unknown) == to_unknown.text, route
            assert field in to_theirs.text and "422" in f"{to_theirs.status_code}{to_theirs.text}"
        # import drops a cause it may not read exactly as one that is not stored
        line = body(theirs) | {"event_id": new_id()}
        other_line = body(unknown) | {"event_id": new_id()}
        via_theirs = (await bound.post("/v1/events/import", json={"events": [line]})).json()
        via_unknown = (await bound.post("/v1/events/import", json={"events": [other_line]})).json()
        assert via_theirs == via_unknown
    impact = (await app_client.get(f"/v1/events/{theirs}/impact")).json()
    assert impact["count"] == 0  # nothing hangs under B's event


async def test_a_bound_key_links_its_own_events(
    app: FastAPI, app_client: httpx.AsyncClient
) -> None:
    async with keyed(app, app_client, agent=A, scope="read_write") as bound:
        root = (await post(bound, ev(A))).json()["event_id"]
        child = await post(bound, ev(A, parent_id=root, caused_by=[root]))
        assert child.status_code == 201, child.text
        first = new_id()
        batch = await bound.post(
            "/v1/events/batch",
            json={"events": [ev(A, first), ev(A, caused_by=[first]), ev(A, parent_index=0)]},
        )
        assert [r["ok"] for r in batch.json()["results"]] == [True] * 3, batch.text
        impact = (await bound.get(f"/v1/events/{root}/impact")).json()
        assert [e["event_id"] for e in impact["events"]] == [child.json()["event_id"]]


async def test_an_admin_key_links_and_walks_across_agents(
    app: FastAPI, app_client: httpx.AsyncClient
) -> None:
    theirs = (await post(app_client, ev(B))).json()["event_id"]
    mine = await post(app_client, ev(A, parent_id=theirs))
    assert mine.status_code == 201
    async with keyed(app, app_client, agent=None, scope="read_only") as reader:
        for client in (app_client, reader):  # an unbound key reads across agents
            impact = (await client.get(f"/v1/events/{theirs}/impact")).json()
            assert [e["event_id"] for e in impact["events"]] == [mine.json()["event_id"]]
            why = (await client.get(f"/v1/events/{mine.json()['event_id']}/why")).json()
            assert why["chain_complete"] and [e["event_id"] for e in why["chain"]] == [
                theirs,
                mine.json()["event_id"],
            ]
        refused = await post(reader, ev(A, parent_id=theirs))
        assert refused.status_code == 403  # read_only: before any lookup of the cause


# -- reading lineage with a bound key --------------------------------------------------------


VOLATILE = ("timestamp", "received_at", "sequence_no", "checksum", "chain_hash")


def scrub(body: dict[str, Any], ids: dict[str, str]) -> str:
    """The answer with the given ids replaced by placeholders."""
    text = httpx.Response(200, json=body).text
    for name, value in ids.items():
        text = text.replace(value, name)
    return text


async def write_pair(client: httpx.AsyncClient, cause: str) -> dict[str, str]:
    """A's event ``x`` caused by ``cause``; ``cause``'s own cause ``c0`` is A's; B's event
    ``bx`` and A's ``ax`` are effects of ``x`` (written by the admin key)."""
    n = {"x": new_id(), "bx": new_id(), "ax": new_id(), "c0": new_id()}
    items = [
        ev(A, n["c0"]),
        ev(A, n["x"], caused_by=[{"event_id": cause, "kind": "read"}]),
        ev(B, n["bx"], parent_id=n["x"]),
        ev(A, n["ax"], parent_id=n["x"]),
    ]
    response = await client.post("/v1/events/batch", json={"events": items})
    assert all(r["ok"] for r in response.json()["results"]), response.text
    return n


@pytest.mark.parametrize("scope", ["read_write", "read_only"])
async def test_why_and_impact_of_a_bound_key_never_reveal_another_agents_events(
    app: FastAPI, app_client: httpx.AsyncClient, scope: str
) -> None:
    theirs, unknown = new_id(), new_id()
    seen = await write_pair(app_client, theirs)
    # B's event (stored after it was named) has an A cause of its own
    await app_client.post("/v1/events", json=ev(B, theirs, parent_id=seen["c0"]))
    ghost = await write_pair(app_client, unknown)
    async with keyed(app, app_client, agent=A, scope=scope) as bound:
        answers = []
        for n, cause in ((seen, theirs), (ghost, unknown)):
            why = await bound.get(f"/v1/events/{n['x']}/why")
            impact = await bound.get(f"/v1/events/{n['x']}/impact")
            assert why.status_code == impact.status_code == 200
            bodies = (why.json(), impact.json())
            for body in bodies:
                for event in body.get("chain", body.get("events", [])):
                    assert event["agent"] == A
                    for volatile in VOLATILE:  # differ between any two writes
                        event.pop(volatile)
            assert n["bx"] not in impact.text and n["c0"] not in why.text
            names = {"X": n["x"], "BX": n["bx"], "AX": n["ax"], "C0": n["c0"], "CAUSE": cause}
            answers.append(tuple(scrub(body, names) for body in bodies))
        assert answers[0] == answers[1]
        # an id of another agent is as unknown as a random one, on every lineage route
        for route in ("", "/why", "/impact"):
            got = await bound.get(f"/v1/events/{theirs}{route}")
            nowhere = await bound.get(f"/v1/events/{unknown}{route}")
            assert got.status_code == nowhere.status_code == 404
            assert swap(got.text, theirs, unknown) == nowhere.text
    impact = (await app_client.get(f"/v1/events/{seen['x']}/impact")).json()
    assert {e["event_id"] for e in impact["events"]} == {seen["bx"], seen["ax"]}
    why = (await app_client.get(f"/v1/events/{seen['x']}/why")).json()
    assert why["chain_complete"] and {e["event_id"] for e in why["chain"]} == {
        seen["c0"],
        theirs,
        seen["x"],
    }
