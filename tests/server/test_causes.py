"""Causal edges on the write path and in why()/impact() (docs/pages/causal-edges.md).

``parent_id`` is an event's primary cause and ``caused_by`` names further causes; ``scope_id``
is the step it ran inside and is never followed. why() returns the ancestry as a DAG (root
causes first, each event once, edges labelled), impact() the descendants the same way.
These are the promises of the README's opening ("Cause, not containment") and of the causal
edges page.
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from agentledger.protocol import limits


def ev(agent: str, event: str, event_id: str, **fields: Any) -> dict[str, Any]:
    return {"agent": agent, "event": event, "data": {}, "event_id": event_id, **fields}


def ids(*names: str) -> dict[str, str]:
    return {name: str(uuid.uuid4()) for name in names}


async def write(client: httpx.AsyncClient, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    response = await client.post("/v1/events/batch", json={"events": items})
    assert response.status_code == 200, response.text
    results: list[dict[str, Any]] = response.json()["results"]
    return results


def agent_run(agent: str, n: dict[str, str]) -> list[dict[str, Any]]:
    """A model call that asks for two tools, reads both results and answers, inside a graph
    step (scope) that is not a cause of the answer."""
    read = "read"
    return [
        ev(agent, "user_message", n["user"]),
        ev(agent, "step_start", n["graph"], parent_id=n["user"]),
        ev(
            agent,
            "llm_start",
            n["m1"],
            parent_id=n["user"],
            caused_by=[{"event_id": n["user"], "kind": read}],
            scope_id=n["graph"],
        ),
        ev(agent, "llm_end", n["m1e"], parent_id=n["m1"]),
        ev(
            agent,
            "tool_call",
            n["c1"],
            parent_id=n["m1e"],
            caused_by=[{"event_id": n["m1e"], "kind": "requested"}],
        ),
        ev(
            agent,
            "tool_call",
            n["c2"],
            parent_id=n["m1e"],
            caused_by=[{"event_id": n["m1e"], "kind": "requested"}],
        ),
        ev(agent, "tool_result", n["r1"], parent_id=n["c1"], scope_id=n["graph"]),
        ev(agent, "tool_result", n["r2"], parent_id=n["c2"]),
        ev(
            agent,
            "llm_start",
            n["m2"],
            parent_id=n["r2"],
            caused_by=[{"event_id": n["r1"], "kind": read}, {"event_id": n["r2"], "kind": read}],
            scope_id=n["graph"],
        ),
        ev(agent, "llm_end", n["m2e"], parent_id=n["m2"]),
        ev(
            agent,
            "assistant_response",
            n["answer"],
            parent_id=n["m2e"],
            caused_by=[{"event_id": n["m2e"], "kind": "produced"}],
            scope_id=n["graph"],
        ),
        ev(agent, "step_end", n["graph_end"], parent_id=n["graph"]),
    ]


RUN = ("user", "graph", "m1", "m1e", "c1", "c2", "r1", "r2", "m2", "m2e", "answer", "graph_end")


def names_of(n: dict[str, str], events: list[dict[str, Any]]) -> list[str]:
    back = {v: k for k, v in n.items()}
    return [back[e["event_id"]] for e in events]


async def test_caused_by_and_scope_are_stored_in_the_record(app_client: httpx.AsyncClient) -> None:
    n = ids(*RUN)
    await write(app_client, agent_run("c1", n))
    got = (await app_client.get(f"/v1/events/{n['m2']}")).json()
    assert got["parent_id"] == n["r2"] and got["scope_id"] == n["graph"]
    assert got["caused_by"] == [
        {"event_id": n["r1"], "kind": "read"},
        {"event_id": n["r2"], "kind": "read"},
    ]
    plain = (await app_client.get(f"/v1/events/{n['user']}")).json()
    assert "caused_by" not in plain and "scope_id" not in plain  # older records keep their bytes
    chain = (await app_client.get("/v1/events/chain", params={"agent": "c1"})).json()
    assert chain["intact"], chain


async def test_why_of_the_answer_is_its_causal_dag(app_client: httpx.AsyncClient) -> None:
    n = ids(*RUN)
    await write(app_client, agent_run("c2", n))
    why = (await app_client.get(f"/v1/events/{n['answer']}/why")).json()
    got = names_of(n, why["chain"])
    assert set(got) == {"user", "m1", "m1e", "c1", "c2", "r1", "r2", "m2", "m2e", "answer"}
    assert "graph" not in got  # scope is not a cause
    assert got[0] == "user" and got[-1] == "answer" and len(got) == len(set(got))
    position = {name: i for i, name in enumerate(got)}
    back = {v: k for k, v in n.items()}
    kinds = {(back[e["effect"]], back[e["cause"]]): e["kind"] for e in why["edges"]}
    for effect, cause in kinds:
        assert position[cause] < position[effect]  # every cause before its effects
    assert kinds[("m2", "r1")] == "read" and kinds[("m2", "r2")] == "read"
    assert kinds[("c1", "m1e")] == "requested" and kinds[("r1", "c1")] == "closes"
    assert kinds[("answer", "m2e")] == "produced" and kinds[("m1", "user")] == "read"
    assert len(kinds) == 10 and why["roots"] == [n["user"]]
    assert why["chain_complete"] and not why["missing"] and not why["cut_at"]


async def test_impact_follows_causes_forward(app_client: httpx.AsyncClient) -> None:
    n = ids(*RUN)
    await write(app_client, agent_run("c3", n))
    first = (await app_client.get(f"/v1/events/{n['r1']}/impact")).json()
    assert names_of(n, first["events"]) == ["m2", "m2e", "answer"]
    user = (await app_client.get(f"/v1/events/{n['user']}/impact")).json()
    assert set(names_of(n, user["events"])) == set(RUN) - {"user"}
    assert not user["truncated"] and not user["depth_truncated"]
    graph = (await app_client.get(f"/v1/events/{n['graph']}/impact")).json()
    assert names_of(n, graph["events"]) == ["graph_end"]  # what ran inside is not an effect


async def test_depth_cut_says_where(app_client: httpx.AsyncClient) -> None:
    n = ids(*RUN)
    await write(app_client, agent_run("c4", n))
    why = (await app_client.get(f"/v1/events/{n['answer']}/why", params={"depth": 3})).json()
    assert set(names_of(n, why["chain"])) == {"r1", "r2", "m2", "m2e", "answer"}
    assert sorted(why["cut_at"]) == sorted([n["r1"], n["r2"]])
    assert why["depth_truncated"] and not why["chain_complete"] and why["roots"] == []
    impact = (await app_client.get(f"/v1/events/{n['user']}/impact", params={"depth": 1})).json()
    assert set(names_of(n, impact["events"])) == {"graph", "m1"}
    assert impact["depth_truncated"] and sorted(impact["cut_at"]) == sorted([n["graph"], n["m1"]])


async def test_defaults_are_the_shared_limits(app: FastAPI) -> None:
    spec = app.openapi()["paths"]["/v1/events/{event_id}/why"]["get"]["parameters"]
    params = {p["name"]: p["schema"] for p in spec}
    assert params["depth"]["default"] == limits.WHY_DEPTH_DEFAULT
    assert params["depth"]["maximum"] == limits.LINEAGE_DEPTH_MAX
    assert params["limit"]["default"] == limits.LINEAGE_LIMIT_DEFAULT
    assert params["limit"]["maximum"] == limits.LINEAGE_LIMIT_MAX
    schema = app.openapi()["components"]["schemas"]
    assert {"caused_by", "scope_id"} <= set(schema["EventIn"]["properties"])
    assert {"edges", "roots", "missing", "cut_at"} <= set(schema["WhyOut"]["properties"])


async def test_cause_not_stored_yet_then_arrives(app_client: httpx.AsyncClient) -> None:
    n = ids("late", "child")
    await write(app_client, [ev("c5", "child", n["child"], caused_by=[n["late"]])])
    why = (await app_client.get(f"/v1/events/{n['child']}/why")).json()
    assert why["missing"] == [n["late"]] and why["orphan"] and not why["chain_complete"]
    assert why["edges"] == [{"effect": n["child"], "cause": n["late"], "kind": "cause"}]
    await write(app_client, [ev("c5", "parent", n["late"])])
    why = (await app_client.get(f"/v1/events/{n['child']}/why")).json()
    assert names_of(n, why["chain"]) == ["late", "child"] and why["chain_complete"]


@pytest.mark.parametrize(
    ("field", "value", "needle"),
    [
        ("caused_by", ["not-a-uuid"], "caused_by"),
        ("caused_by", [{"event_id": str(uuid.uuid4()), "kind": "Bad Kind"}], "caused_by"),
        ("caused_by", [str(uuid.uuid4()) for _ in range(limits.MAX_CAUSES + 1)], "caused_by"),
        ("caused_by", [{"event_id": str(uuid.uuid4()), "extra": 1}], "caused_by"),
        ("scope_id", "step-1", "scope_id"),
    ],
)
async def test_bad_causes_get_a_422_naming_the_field(
    app_client: httpx.AsyncClient, field: str, value: Any, needle: str
) -> None:
    body = ev("c6", "x", str(uuid.uuid4()), **{field: value})
    response = await app_client.post("/v1/events", json=body)
    assert response.status_code == 422 and needle in response.text
    batch = await app_client.post("/v1/events/batch", json={"events": [body]})
    (result,) = batch.json()["results"]
    assert not result["ok"] and result["status"] == 422 and needle in result["error"]


async def test_no_write_path_closes_a_cycle_through_caused_by(
    app_client: httpx.AsyncClient,
) -> None:
    n = ids("a", "b", "c", "d", "self")
    selfish = await app_client.post(
        "/v1/events", json=ev("c7", "x", n["self"], caused_by=[n["self"]])
    )
    assert selfish.status_code == 422 and "caused_by" in selfish.text
    # a -> b -> c stored (c names a as a further cause, written before a exists)
    await write(app_client, [ev("c7", "c", n["c"], parent_id=n["b"], caused_by=[n["a"]])])
    await write(app_client, [ev("c7", "b", n["b"], caused_by=[n["a"]])])
    single = await app_client.post(
        "/v1/events", json=ev("c7", "a", n["a"], caused_by=[{"event_id": n["c"], "kind": "read"}])
    )
    assert single.status_code == 422 and "caused_by" in single.text and "cycle" in single.text
    # in one batch: d names a; a names d
    (first, second) = await write(
        app_client,
        [ev("c7", "d", n["d"], caused_by=[n["a"]]), ev("c7", "a", n["a"], parent_id=n["d"])],
    )
    assert first["ok"] and not second["ok"] and "parent_id" in second["error"]
    imported = await app_client.post(
        "/v1/events/import",
        json={"events": [ev("c7", "a", n["a"], caused_by=[n["c"]])]},
    )
    assert imported.json()["failed"] == 1 and "cycle" in imported.json()["errors"][0]["detail"]
    assert (await app_client.get(f"/v1/events/{n['a']}")).status_code == 404


async def test_retry_with_the_same_causes_is_a_duplicate(app_client: httpx.AsyncClient) -> None:
    n = ids("x", "cause", "other")
    body = ev("c8", "x", n["x"], caused_by=[{"event_id": n["cause"], "kind": "read"}])
    assert (await app_client.post("/v1/events", json=body)).status_code == 201
    again = await app_client.post("/v1/events", json=body)
    assert again.status_code == 200 and again.json()["duplicate"]
    changed = await app_client.post("/v1/events", json={**body, "caused_by": [n["other"]]})
    assert changed.status_code == 409


async def test_import_keeps_and_renames_causes(app_client: httpx.AsyncClient) -> None:
    n = ids(*RUN)
    await write(app_client, agent_run("c9", n))
    export = await app_client.get("/v1/events/export", params={"agent": "c9"})
    import orjson

    lines = [orjson.loads(line) for line in export.content.splitlines()]
    result = await app_client.post("/v1/events/import", json={"events": lines, "agent": "c9b"})
    assert result.json()["imported"] == len(RUN) and result.json()["parents_dropped"] == 0
    sessions = (await app_client.get("/v1/events", params={"agent": "c9b", "limit": 100})).json()
    answer = next(e for e in sessions if e["event"] == "assistant_response")
    why = (await app_client.get(f"/v1/events/{answer['event_id']}/why")).json()
    assert why["chain_length"] == 10 and why["chain_complete"]
    assert {e["kind"] for e in why["edges"]} == {"read", "requested", "closes", "produced"}


async def test_a_dense_graph_is_bounded(app_client: httpx.AsyncClient) -> None:
    """Every event caused by up to 32 earlier ones: the walk stays within its row budget and
    the answer says it was cut."""
    chain = [str(uuid.uuid4()) for _ in range(400)]
    items = [
        ev("c10", "x", chain[i], caused_by=chain[max(0, i - limits.MAX_CAUSES) : i])
        for i in range(len(chain))
    ]
    for start in range(0, len(items), 200):
        await write(app_client, items[start : start + 200])
    why = (await app_client.get(f"/v1/events/{chain[-1]}/why", params={"limit": 50})).json()
    assert why["chain_length"] == 50 and why["size_truncated"] and why["cut_at"]
    whole = (await app_client.get(f"/v1/events/{chain[-1]}/why")).json()
    assert whole["chain_length"] == 400 and whole["chain_complete"]
    assert whole["roots"] == [chain[0]]


async def make_bound_key(client: httpx.AsyncClient, agent: str) -> str:
    created = await client.post(
        "/v1/keys", json={"name": f"bound-{agent}", "agent": agent, "scope": "read_write"}
    )
    assert created.status_code == 201, created.text
    key: str = created.json()["key"]
    return key


async def test_a_bound_key_cannot_hang_events_under_another_agent(
    app: FastAPI, app_client: httpx.AsyncClient
) -> None:
    n = ids("theirs", "mine", "unknown", "mine2")
    await write(app_client, [ev("other-agent", "x", n["theirs"])])
    key = await make_bound_key(app_client, "bound-a")
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(
        transport=transport,
        base_url="http://localhost",
        headers={"Authorization": f"Bearer {key}"},
    ) as bound:
        refused = await bound.post(
            "/v1/events", json=ev("bound-a", "x", n["mine"], caused_by=[n["theirs"]])
        )
        assert refused.status_code == 422 and "caused_by" in refused.text
        as_parent = await bound.post(
            "/v1/events", json=ev("bound-a", "x", n["mine"], parent_id=n["theirs"])
        )
        assert as_parent.status_code == 422 and "parent_id" in as_parent.text
        unknown = await bound.post(
            "/v1/events", json=ev("bound-a", "x", n["mine2"], caused_by=[n["unknown"]])
        )
        # a bound key names only its own agent's stored events: another agent's id is
        # answered exactly like an id never stored (existence is not revealed)
        assert unknown.status_code == 422
        assert unknown.json() == {
            "detail": refused.json()["detail"].replace(n["theirs"], n["unknown"])
        }
        in_batch = await bound.post(
            "/v1/events/batch",
            json={"events": [ev("bound-a", "x", n["mine"], caused_by=[n["theirs"]])]},
        )
        (result,) = in_batch.json()["results"]
        assert not result["ok"] and result["status"] == 422 and "caused_by" in result["error"]
        imported = await bound.post(
            "/v1/events/import",
            json={"events": [ev("bound-a", "x", n["mine"], parent_id=n["theirs"])]},
        )
        # import drops a cause it may not read, as it drops one that is not stored
        assert imported.json()["imported"] == 1 and imported.json()["parents_dropped"] == 1
        assert (await bound.get(f"/v1/events/{n['mine']}")).json()["parent_id"] is None
        # an unbound writer may link across agents; the bound reader sees such a cause as
        # missing, exactly like an id that was never stored (existence is not revealed)
        both = ids("cross", "nowhere")
        await write(
            app_client,
            [ev("bound-a", "x", both["cross"], caused_by=[n["theirs"], both["nowhere"]])],
        )
        why = (await bound.get(f"/v1/events/{both['cross']}/why")).json()
        assert sorted(why["missing"]) == sorted([n["theirs"], both["nowhere"]])
        assert why["chain_length"] == 1 and why["scoped_agent_limited"]
    impact = (await app_client.get(f"/v1/events/{n['theirs']}/impact")).json()
    assert [e["event_id"] for e in impact["events"]] == [both["cross"]]


async def test_writers_of_two_agents_at_once_cannot_close_a_cycle(
    app_client: httpx.AsyncClient,
) -> None:
    """Each names the other's event before either is stored; whichever commits second must
    see the first's edge (on PostgreSQL the per-agent locks alone do not order them)."""
    import asyncio

    for _ in range(12):
        n = ids("a", "b")
        first, second = await asyncio.gather(
            app_client.post("/v1/events", json=ev("race-a", "x", n["a"], parent_id=n["b"])),
            app_client.post(
                "/v1/events",
                json=ev("race-b", "x", n["b"], caused_by=[{"event_id": n["a"], "kind": "read"}]),
            ),
        )
        codes = sorted([first.status_code, second.status_code])
        assert codes == [201, 422], (first.text, second.text)
        stored = n["a"] if first.status_code == 201 else n["b"]
        why = (await app_client.get(f"/v1/events/{stored}/why")).json()
        assert [e["event_id"] for e in why["chain"]] == [stored]
        assert why["missing"] == [n["b"] if stored == n["a"] else n["a"]]


async def test_an_unlabelled_entry_naming_the_parent_keeps_the_parent_edge_kind(
    app_client: httpx.AsyncClient,
) -> None:
    n = ids("call", "result")
    await write(
        app_client,
        [
            ev("c11", "tool_call", n["call"]),
            ev("c11", "tool_result", n["result"], parent_id=n["call"], caused_by=[n["call"]]),
        ],
    )
    why = (await app_client.get(f"/v1/events/{n['result']}/why")).json()
    assert why["edges"] == [{"effect": n["result"], "cause": n["call"], "kind": "closes"}]
    stored = (await app_client.get(f"/v1/events/{n['result']}")).json()
    assert "caused_by" not in stored  # the entry added nothing


async def test_many_referenced_items_on_one_long_ancestry(app_client: httpx.AsyncClient) -> None:
    """Events named as causes before they exist, then written in one batch on top of a long
    chain: each is checked against the chain's ancestry (read once for the batch), and the one
    that would close a loop is refused alone."""
    loop_id = str(uuid.uuid4())
    chain = [str(uuid.uuid4()) for _ in range(600)]
    items = [ev("c12", "x", chain[0], caused_by=[loop_id])]
    items += [ev("c12", "x", chain[i], parent_id=chain[i - 1]) for i in range(1, len(chain))]
    for start in range(0, len(items), 300):
        await write(app_client, items[start : start + 300])
    late = [str(uuid.uuid4()) for _ in range(40)]
    await write(app_client, [ev("c12", "y", str(uuid.uuid4()), caused_by=late[:30])])
    await write(app_client, [ev("c12", "y", str(uuid.uuid4()), caused_by=late[30:])])
    results = await write(
        app_client,
        [ev("c12", "late", late_id, parent_id=chain[-1]) for late_id in late]
        + [ev("c12", "loop", loop_id, parent_id=chain[-1])],
    )
    assert all(r["ok"] for r in results[:-1])
    assert not results[-1]["ok"] and "cycle" in results[-1]["error"]
    assert "parent_id" in results[-1]["error"]
