"""Property tests of the causal graph against a real server on each store.

Random graphs of causes (loops and self-causes included) are written in random orders, causes
after or before their effects, through random write paths (single, batch, import). Whatever the
server accepts must be acyclic, and why()/impact() of every stored event must equal a plain
Python traversal of the stored edges (docs/pages/causal-edges.md).
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _servers import ServerProcess

MAX_NODES = 12


@st.composite
def graphs(draw: st.DrawFn) -> tuple[list[list[int]], list[int], list[str], list[str | None]]:
    """Per node its causes (any nodes, itself included), a write order, a write path per
    position, and per node an optional edge kind for its first cause."""
    size = draw(st.integers(min_value=1, max_value=MAX_NODES))
    causes = [
        draw(st.lists(st.integers(0, size - 1), max_size=3, unique=True)) for _ in range(size)
    ]
    order = draw(st.permutations(list(range(size))))
    paths = [draw(st.sampled_from(["single", "batch", "import"])) for _ in range(size)]
    kinds = [draw(st.sampled_from([None, "read", "requested"])) for _ in range(size)]
    return causes, list(order), paths, kinds


def _write(client: httpx.Client, agent: str, items: list[dict[str, Any]], path: str) -> list[bool]:
    if path == "single":
        return [client.post("/v1/events", json=item).status_code == 201 for item in items]
    if path == "batch":
        body = client.post("/v1/events/batch", json={"events": items}).json()
        return [bool(r["ok"]) for r in body["results"]]
    body = client.post("/v1/events/import", json={"events": items}).json()
    failed = {e["index"] for e in body["errors"]}
    return [i not in failed for i in range(len(items))]


def _reach(start: str, step: dict[str, set[str]]) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        node = todo.pop()
        for nxt in step.get(node, ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def _acyclic(nodes: set[str], causes: dict[str, set[str]]) -> bool:
    return all(node not in _reach(node, causes) for node in nodes)


@pytest.mark.slow
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=graphs())
def test_random_graphs_match_a_reference_traversal(
    store_server: ServerProcess,
    case: tuple[list[list[int]], list[int], list[str], list[str | None]],
) -> None:
    causes, order, paths, kinds = case
    agent = f"prop-{uuid.uuid4().hex[:10]}"
    ids = [str(uuid.uuid4()) for _ in causes]
    headers = {"Authorization": f"Bearer {store_server.api_key}"}
    with httpx.Client(base_url=store_server.url, headers=headers, timeout=30) as client:
        position = 0
        while position < len(order):
            path = paths[position]
            group = order[position : position + (2 if path != "single" else 1)]
            items = []
            for node in group:
                named = [ids[c] for c in causes[node]]
                item: dict[str, Any] = {
                    "agent": agent,
                    "event": f"n{node}",
                    "data": {},
                    "event_id": ids[node],
                }
                if named:
                    item["parent_id"] = named[0]
                    rest: list[Any] = named[1:]
                    if kinds[node] is not None:
                        rest.insert(0, {"event_id": named[0], "kind": kinds[node]})
                    if rest:
                        item["caused_by"] = rest
                items.append(item)
            _write(client, agent, items, path)
            position += len(group)
        stored = client.get("/v1/events", params={"agent": agent, "limit": 1000}).json()
        by_id = {e["event_id"]: e for e in stored}
        cause_of: dict[str, set[str]] = {}
        effect_of: dict[str, set[str]] = {}
        for event in stored:
            named = {c["event_id"] for c in event.get("caused_by") or []}
            if event["parent_id"]:
                named.add(event["parent_id"])
            cause_of[event["event_id"]] = named
            for cause in named:
                effect_of.setdefault(cause, set()).add(event["event_id"])
        assert _acyclic(set(by_id), cause_of), "a write path stored a cycle"
        for event_id in by_id:
            ancestors = _reach(event_id, cause_of)
            why = client.get(f"/v1/events/{event_id}/why").json()
            assert {e["event_id"] for e in why["chain"]} == (ancestors & set(by_id)) | {event_id}
            assert set(why["missing"]) == ancestors - set(by_id)
            assert why["chain"][-1]["event_id"] == event_id
            seen: set[str] = set()
            for entry in why["chain"]:  # every cause before its effects, each event once
                assert entry["event_id"] not in seen
                assert cause_of[entry["event_id"]] & set(by_id) <= seen | {entry["event_id"]}
                seen.add(entry["event_id"])
            expected_edges = {
                (effect, cause)
                for effect in (ancestors & set(by_id)) | {event_id}
                for cause in cause_of[effect]
            }
            assert {(e["effect"], e["cause"]) for e in why["edges"]} == expected_edges
            impact = client.get(f"/v1/events/{event_id}/impact").json()
            descendants = _reach(event_id, effect_of)
            assert {e["event_id"] for e in impact["events"]} == descendants
            assert why["chain_complete"] == (not why["missing"])
