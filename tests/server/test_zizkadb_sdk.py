"""The public reference client zizkadb-sdk 0.5.0 works unchanged against ``agentledger serve``,
on either store (``store_server``)."""

from __future__ import annotations

import os
import re
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

os.environ.setdefault("ZIZKADB_TELEMETRY", "false")
os.environ.setdefault("ZIZKADB_QUIET", "1")

zizkadb = pytest.importorskip("zizkadb")


@pytest.fixture
def db(store_server: Any) -> Any:
    return zizkadb.ZizkaDB(api_key=store_server.api_key, host=store_server.url)


async def test_log_returns_ids_chain_and_sequence(db: Any, agent_name: str) -> None:
    first = await db.log(agent=agent_name, event="user_message", data={"text": "hi"})
    second = await db.log(
        agent=agent_name,
        event="llm_start",
        data={"model": "m"},
        parent_id=first.event_id,
        token_usage={"input_tokens": 10, "output_tokens": 2},
    )
    assert (first.sequence_no, second.sequence_no) == (1, 2)
    assert len(first.checksum) == 64 and second.chain_hash and not second.duplicate
    chain = await db.why(second.event_id)
    assert [e.event_id for e in chain.chain] == [first.event_id, second.event_id]
    assert chain.chain_complete and not chain.orphan
    assert chain.chain[-1].data["token_usage"] == {"input_tokens": 10, "output_tokens": 2}


async def test_idempotency_key_retry_is_a_duplicate(db: Any, agent_name: str) -> None:
    one = await db.log(agent=agent_name, event="e", data={"a": 1}, idempotency_key="k1")
    again = await db.log(agent=agent_name, event="e", data={"a": 1}, idempotency_key="k1")
    assert again.duplicate and again.event_id == one.event_id
    assert again.sequence_no == one.sequence_no
    with pytest.raises(zizkadb.ZizkaDBError) as info:
        await db.log(agent=agent_name, event="e", data={"a": 2}, idempotency_key="k1")
    assert info.value.status_code == 409


async def test_log_tool_and_result(db: Any, agent_name: str) -> None:
    call = await db.log_tool(agent_name, "lookup_order", args={"order_id": "ORD-1"})
    done = await db.log_tool_result(
        agent_name, "lookup_order", result={"ok": True}, parent_id=call.event_id, duration_ms=12.5
    )
    failed = await db.log_tool_result(
        agent_name, "lookup_order", error=ValueError("boom"), parent_id=call.event_id
    )
    events = [e async for e in db.iter_events(agent_name)]
    by_id = {e.event_id: e for e in events}
    assert by_id[call.event_id].event == "tool_call"
    assert by_id[call.event_id].data == {"tool": "lookup_order", "args": {"order_id": "ORD-1"}}
    assert by_id[done.event_id].data["duration_ms"] == 12.5
    assert by_id[failed.event_id].event == "tool_error"
    assert by_id[failed.event_id].data["type"] == "ValueError"


async def test_log_batch_parent_index_and_partial_success(db: Any, agent_name: str) -> None:
    result = await db.log_batch(
        [
            {"agent": agent_name, "event": "user_message", "data": {"text": "q"}},
            {"agent": agent_name, "event": "tool_call", "data": {"tool": "t"}, "parent_index": 0},
            {"agent": "bad/agent", "event": "x", "data": {}},
            {"agent": agent_name, "event": "tool_result", "data": {}, "parent_index": 1},
        ]
    )
    assert (result["written"], result["failed"]) == (3, 1)
    oks = [r["ok"] for r in result["results"]]
    assert oks == [True, True, False, True]
    assert "agent" in result["results"][2]["error"]
    chain = await db.why(result["results"][3]["event_id"])
    assert [e.event for e in chain.chain] == ["user_message", "tool_call", "tool_result"]


async def test_iter_events_pages_by_cursor_without_gaps(db: Any, agent_name: str) -> None:
    batch = [{"agent": agent_name, "event": "e", "data": {"i": i}} for i in range(23)]
    await db.log_batch(batch)
    seen = [e async for e in db.iter_events(agent_name, page_size=5)]
    assert [e.data["i"] for e in seen] == list(range(22, -1, -1))


async def test_export_import_roundtrip_and_rerun_gives_duplicates(db: Any, agent_name: str) -> None:
    root = await db.log(agent=agent_name, event="user_message", data={"text": "a"})
    await db.log(agent=agent_name, event="tool_call", data={"tool": "x"}, parent_id=root.event_id)
    lines = [line async for line in db.export_events(agent_name)]
    assert [line["sequence_no"] for line in lines] == [1, 2]
    target = f"{agent_name}-copy"
    first = await db.import_events(lines, agent=target)
    assert (first["imported"], first["duplicates"], first["failed"]) == (2, 0, 0)
    again = await db.import_events(lines, agent=target)
    assert (again["imported"], again["duplicates"]) == (0, 2)
    copied = [line async for line in db.export_events(target)]
    assert [c["timestamp"] for c in copied] == [line["timestamp"] for line in lines]
    assert copied[1]["parent_id"] == copied[0]["event_id"]
    assert copied[0]["event_id"] != lines[0]["event_id"]
    report = await db.verify_chain(target)
    assert report["intact"], report


async def test_verify_chain_with_anchor_only_sends_empty_after_seq(
    db: Any, agent_name: str
) -> None:
    await db.log(agent=agent_name, event="e", data={})
    head = (await db.verify_chain(agent_name))["chain_head"]
    await db.log(agent=agent_name, event="e", data={})
    with_anchor = await db.verify_chain(agent_name, anchor=head["chain_hash"])
    assert with_anchor["intact"], with_anchor
    both = await db.verify_chain(
        agent_name, after_seq=head["sequence_no"], anchor=head["chain_hash"]
    )
    assert both["intact"] and both["verified"] == 1


async def test_agents_lists_counts(db: Any, agent_name: str) -> None:
    await db.log(agent=agent_name, event="e", data={})
    await db.log(agent=agent_name, event="e", data={})
    info = {a.agent: a for a in await db.agents()}
    assert info[agent_name].event_count == 2
    assert info[agent_name].first_seen <= info[agent_name].last_seen


async def test_wrong_key_is_auth_error(store_server: Any, agent_name: str) -> None:
    db = zizkadb.ZizkaDB(api_key="not-a-key", host=store_server.url)
    with pytest.raises(zizkadb.AuthError):
        await db.log(agent=agent_name, event="e", data={})


async def test_why_reports_missing_parent(db: Any, store_server: Any, agent_name: str) -> None:
    ghost = str(uuid.uuid4())
    child = await db.log(agent=agent_name, event="e", data={}, parent_id=ghost)
    chain = await db.why(child.event_id)
    assert chain.orphan and not chain.chain_complete
    raw = httpx.get(
        f"{store_server.url}/v1/events/{child.event_id}/why", headers=store_server.headers()
    ).json()
    assert raw["missing_parent"] == ghost


# -- every public method ---------------------------------------------------------------------

_SDK_TESTS = (
    Path(__file__),
    Path(__file__).with_name("test_zizkadb_sdk_usage.py"),
    Path(__file__).parents[1] / "query" / "test_zizkadb_query.py",
)


def _public_methods(cls: type) -> set[str]:
    return {
        name
        for name, value in vars(cls).items()
        if not name.startswith("_") and (callable(value) or isinstance(value, property))
    }


def test_every_public_method_of_the_reference_client_is_exercised() -> None:
    """README: Compatibility with zizkadb-sdk. Every public method of the reference client
    (ZizkaDB, its session scope and its lineage context) is called by a test against a real
    server; this test fails when a method is added to the client and no test calls it."""
    from zizkadb.session_scope import SessionScope

    methods = {
        "ZizkaDB": _public_methods(zizkadb.ZizkaDB),
        "SessionScope": _public_methods(SessionScope),
        "LineageContext": _public_methods(zizkadb.LineageContext),
    }
    assert "token_usage" in methods["ZizkaDB"] and "why" in methods["SessionScope"]
    text = "\n".join(path.read_text() for path in _SDK_TESTS)
    missing = {
        f"{owner}.{name}"
        for owner, names in methods.items()
        for name in names
        if not re.search(rf"\.{name}\b", text)
    }
    assert not missing, f"reference client methods no test calls: {sorted(missing)}"


async def test_query_filters_and_log_api_strips_secrets(db: Any, agent_name: str) -> None:
    """README: Compatibility with zizkadb-sdk (query, log_api)."""
    t0 = datetime.now(UTC)
    first = await db.log(agent=agent_name, event="user_message", data={"n": 1}, session_id="s1")
    api = await db.log_api(
        agent_name,
        "post",
        "https://user:pw@api.example.com/v1/charges?token=secret#frag",
        status=502,
        duration_ms=31.5,
        session_id="s1",
    )
    await db.log(agent=agent_name, event="user_message", data={"n": 2}, session_id="s2")
    newest = await db.query(agent_name)
    assert [e.event_id for e in newest][1:] == [api.event_id, first.event_id]
    in_s1 = await db.query(agent_name, session_id="s1", event_type="api_call")
    assert [e.event_id for e in in_s1] == [api.event_id]
    assert in_s1[0].data["url"] == "https://api.example.com/v1/charges"
    assert in_s1[0].data["api"] == "POST api.example.com/v1/charges"
    assert in_s1[0].data["status"] == 502
    assert len(await db.query(agent_name, limit=1)) == 1
    assert await db.query(agent_name, before=t0) == []
    assert len(await db.query(agent_name, after=t0 - timedelta(seconds=1))) == 3


async def test_track_fork_and_session_scope(db: Any, agent_name: str) -> None:
    """README: Compatibility with zizkadb-sdk (track, log_fork, session, LineageContext)."""
    async with db.track(agent_name, session_id="t-1") as ctx:
        root = await db.log(agent=agent_name, event="user_message", data={"text": "q"})
        assert ctx.session_id == "t-1" and ctx.last_event_id == root.event_id
        forked = ctx.fork()
        a = await db.log(agent=agent_name, event="tool_call", data={"tool": "a"})
        b = await db.log(agent=agent_name, event="tool_call", data={"tool": "b"})
        ctx.end_fork()
        both = await db.log_fork(agent_name, [("tool_result", {"r": 1}), ("tool_result", {"r": 2})])
    assert forked == root.event_id
    for child in (a, b):
        chain = await db.why(child.event_id)
        assert [e.event_id for e in chain.chain] == [root.event_id, child.event_id]
    for result in both:
        chain = await db.why(result.event_id)
        assert chain.chain[0].event_id == root.event_id and chain.chain[-1].session_id == "t-1"

    scope = db.session(f"{agent_name}-shared")
    one = await scope.log(agent_name, "user_message", {"text": "hi"})
    other = f"{agent_name}-helper"
    two = await scope.log(
        other, "tool_result", {"ok": True}, parent_id=one.event_id, token_usage={"input_tokens": 3}
    )
    async with scope.track(agent_name) as scoped:
        three = await db.log(agent=agent_name, event="assistant_response", data={"text": "x"})
        assert scoped.session_id == scope.session_id
    chain = await scope.why(two.event_id)
    assert [e.event_id for e in chain.chain] == [one.event_id, two.event_id]
    assert chain.chain_complete and {e.agent for e in chain.chain} == {agent_name, other}
    timeline = await scope.events()
    assert [e.event_id for e in timeline] == [one.event_id, two.event_id, three.event_id]
    assert timeline[1].data["token_usage"] == {"input_tokens": 3}


async def test_state_set_in_the_reference_shape(db: Any, agent_name: str) -> None:
    """README: Compatibility with zizkadb-sdk. ``state_set`` with ``data={"plan": "basic"}``
    (every key of data is set, the reference's shape) and with ``{key, value}`` both show in
    ``at()``; ``state_delete`` removes ``data.key``."""
    await db.log(agent=agent_name, event="state_set", data={"plan": "basic", "seats": 3})
    await db.log(agent=agent_name, event="state_set", data={"key": "tier", "value": "gold"})
    later = datetime.now(UTC) + timedelta(seconds=5)
    state = await db.at(agent_name, later)
    assert state.state == {"plan": "basic", "seats": 3, "tier": "gold"}
    await db.log(agent=agent_name, event="state_set", data={"plan": "pro"})
    await db.log(agent=agent_name, event="state_delete", data={"key": "seats"})
    state = await db.at(agent_name, later.isoformat())
    assert state.state == {"plan": "pro", "tier": "gold"} and state.event_count == 4
