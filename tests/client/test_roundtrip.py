"""Logging and reading back through a real ``agentledger serve``, for both twins."""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agentledger.client import (
    AuthenticationError,
    ConfigurationError,
    Event,
    EventRef,
    NotFoundError,
    TransportError,
    vocabulary,
)

from .conftest import Twin, maybe, stored_events


async def test_log_returns_client_uuid7_and_reads_back(
    twin: Twin, ledger_server: Any, agent_name: str, spill_dir: Path
) -> None:
    client = twin.make(ledger_server.url, ledger_server.api_key, agent_name, spill_dir=spill_dir)
    sid = f"s-{agent_name}"
    try:
        root = client.log(vocabulary.SESSION_START, {"framework": "plain"}, session_id=sid)
        call = client.log_tool("search", {"q": "refund"}, parent_id=root, session_id=sid)
        result = client.log_tool_result(
            "search", result={"hits": 2}, duration_ms=12.5, parent_id=call, session_id=sid
        )
        assert isinstance(root, EventRef)
        assert uuid.UUID(root.event_id).version == 7
        flushed = await twin.flush(client, 10)
        assert flushed.complete and flushed.sent == 3 and flushed.pending == 0

        event = await maybe(client.get_event(result.event_id))
        assert isinstance(event, Event)
        assert event.event_id == result.event_id
        assert event.parent_id == call.event_id
        assert event.data == {"tool": "search", "result": {"hits": 2}, "duration_ms": 12.5}
        assert event.sequence_no == 3 and event.chain_hash

        why = await maybe(client.why(result.event_id, depth=10))
        assert [e.event_id for e in why.chain] == [root.event_id, call.event_id, result.event_id]
        assert why.chain_complete and why.missing_parent is None

        impact = await maybe(client.impact(root.event_id))
        assert {e.event_id for e in impact.events} == {call.event_id, result.event_id}

        replay = await maybe(client.replay(sid))
        assert [e.event for e in replay] == ["session_start", "tool_call", "tool_result"]

        report = await maybe(client.verify_chain())
        assert report.intact and report.chain_head.sequence_no == 3

        sessions = await maybe(client.sessions())
        assert [s.session_id for s in sessions] == [sid]
        assert sessions[0].event_count == 3

        agents = await maybe(client.agents())
        assert agent_name in {a.agent for a in agents}

        page = await maybe(client.list_events(limit=2))
        assert [e.event_id for e in page] == [result.event_id, call.event_id]  # newest first
    finally:
        await twin.close(client, 5)


async def test_iter_events_pages_with_cursor(
    twin: Twin, ledger_server: Any, agent_name: str, spill_dir: Path
) -> None:
    client = twin.make(ledger_server.url, ledger_server.api_key, agent_name, spill_dir=spill_dir)
    try:
        refs = [client.log("step_start", {"i": i}) for i in range(23)]
        assert (await twin.flush(client, 10)).complete
        seen: list[str] = []
        iterator = client.iter_events(page_size=5)
        if twin.kind == "sync":
            seen = [e.event_id for e in iterator]
        else:
            seen = [e.event_id async for e in iterator]
        assert seen == [r.event_id for r in reversed(refs)]
    finally:
        await twin.close(client, 5)


async def test_tool_outcomes_carry_status_type_extra_members_and_time(
    twin: Twin, ledger_server: Any, agent_name: str, spill_dir: Path
) -> None:
    """``log_tool``/``log_tool_result`` with an explicit time, a result status, an error type
    and extra data members (what the MCP proxy records); extra never replaces a member."""
    client = twin.make(ledger_server.url, ledger_server.api_key, agent_name, spill_dir=spill_dir)
    try:
        call = client.log_tool("big", {"n": 1}, call_id="7", timestamp="2026-01-02T03:04:05Z")
        done = client.log_tool_result(
            "big",
            None,
            duration_ms=1.5,
            call_id="7",
            parent_id=call,
            status="too_large",
            extra={"bytes": 17_000_000, "tool": "not this"},
        )
        failed = client.log_tool_result(
            "big",
            error="boom",
            call_id="8",
            parent_id=call,
            error_type="jsonrpc_error",
            extra={"code": -32001},
        )
        assert (await twin.flush(client, 10)).complete
        stored_call = await maybe(client.get_event(call.event_id))
        stored_done = await maybe(client.get_event(done.event_id))
        stored_failed = await maybe(client.get_event(failed.event_id))
    finally:
        await twin.close(client, 5)
    assert stored_call.timestamp.startswith("2026-01-02T03:04:05")
    assert stored_call.data == {"tool": "big", "args": {"n": 1}, "call_id": "7"}
    assert stored_done.data == {
        "tool": "big",
        "result": None,
        "status": "too_large",
        "call_id": "7",
        "duration_ms": 1.5,
        "bytes": 17_000_000,
    }
    assert stored_failed.event == vocabulary.TOOL_ERROR
    assert stored_failed.data == {
        "tool": "big",
        "error": "boom",
        "type": "jsonrpc_error",
        "call_id": "8",
        "code": -32001,
    }


async def test_data_is_snapshotted_and_sanitized(
    twin: Twin, ledger_server: Any, agent_name: str, spill_dir: Path
) -> None:
    """Values are serialized once at log() time (later mutation is not seen) and sanitized
    per the vocabulary doc; no event is dropped (field case H06's rules at the client)."""

    @dataclasses.dataclass
    class Doc:
        title: str
        raw: bytes

    loop: dict[str, Any] = {"name": "loop"}
    loop["self"] = loop
    data: dict[str, Any] = {
        "docs": [Doc("a", b"xyz")],
        "when": dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
        "blob": b"\x00\x01",
        "id": uuid.UUID(int=1),
        "price": decimal.Decimal("9.99"),
        "tags": {"b", "a"},
        "np_scalar": np.float64(1.5),
        "np_array": np.arange(3),
        "loop": loop,
        "long": "x" * 70_000,
        "opaque": object(),
        "api_key": "sk-secret-value",
        # what JavaScript's JSON.stringify writes for a string cut inside an emoji
        "cut_emoji": "cut \ud83d",
        "lone \udc00 key": 1,
        # a 64-bit id (Snowflake-style): beyond 2**53 it is sent as its decimal string
        "snowflake": 2**60 + 1,
        "exact": 2**53 - 1,
    }
    client = twin.make(ledger_server.url, ledger_server.api_key, agent_name, spill_dir=spill_dir)
    try:
        ref = client.log("retrieval", data)
        data["tags"].add("mutated")
        data["docs"].append("mutated")
        await twin.flush(client, 10)
        stored = (await maybe(client.get_event(ref.event_id))).data
    finally:
        await twin.close(client, 5)
    assert stored["docs"] == [
        {"title": "a", "raw": {"$bytes": 3, "sha256": stored["docs"][0]["raw"]["sha256"]}}
    ]
    assert stored["when"].startswith("2026-01-02T03:04:05")
    assert stored["blob"]["$bytes"] == 2
    assert stored["id"] == str(uuid.UUID(int=1))
    assert stored["price"] == "9.99"
    assert stored["tags"] == ["a", "b"]
    assert stored["np_scalar"] == 1.5 and stored["np_array"] == [0, 1, 2]
    assert stored["loop"]["self"] == {"$cycle": "dict"}
    assert stored["cut_emoji"] == "cut \ufffd"  # lone surrogates replaced, nothing else lost
    assert stored["lone \ufffd key"] == 1
    assert stored["snowflake"] == str(2**60 + 1) and stored["exact"] == 2**53 - 1
    assert stored["long"].endswith("…[cut, 70000 chars]") and len(stored["long"]) < 70_100
    assert stored["opaque"].startswith("<object object")
    assert stored["api_key"] == "[REDACTED]"  # redacted before leaving the process


async def test_log_never_raises_and_counts_bad_input(
    twin: Twin, ledger_server: Any, agent_name: str, spill_dir: Path, caplog: Any
) -> None:
    client = twin.make(ledger_server.url, ledger_server.api_key, agent_name, spill_dir=spill_dir)
    try:
        bad_type = client.log("", {"a": 1})
        too_long = client.log("e" * 256, {"a": 1})
        not_a_str = client.log(123, {"a": 1})  # type: ignore[arg-type]
        good = client.log("user_message", "plain text is wrapped")
        flushed = await twin.flush(client, 10)
        stats = client.stats()
        assert stats.failed == 3 and stats.sent == 1 and flushed.complete
        assert all(isinstance(r, EventRef) for r in (bad_type, too_long, not_a_str))
        event = await maybe(client.get_event(good.event_id))
        assert event.data == {"value": "plain text is wrapped"}
        with pytest.raises(NotFoundError) as info:
            await maybe(client.get_event(bad_type.event_id))
        assert info.value.status_code == 404 and info.value.request_id
    finally:
        await twin.close(client, 5)
    assert "event type must be a str" in caplog.text


async def test_errors_are_typed(
    twin: Twin, ledger_server: Any, agent_name: str, closed_url: str
) -> None:
    bad_key = twin.make(ledger_server.url, "not-a-key", agent_name, spill_dir=None)
    try:
        with pytest.raises(AuthenticationError) as info:
            await maybe(bad_key.sessions())
        assert info.value.status_code == 401
    finally:
        await twin.close(bad_key, 0.5)
    nowhere = twin.make(closed_url, "k", agent_name, spill_dir=None)
    try:
        with pytest.raises(TransportError):
            await maybe(nowhere.get_event(str(uuid.uuid4())))
    finally:
        await twin.close(nowhere, 0.5)
    with pytest.raises(ConfigurationError):
        twin.make(ledger_server.url, "k", "bad agent name!", spill_dir=None)


async def test_log_batch_resolves_parent_index(
    twin: Twin, ledger_server: Any, agent_name: str, spill_dir: Path
) -> None:
    client = twin.make(ledger_server.url, ledger_server.api_key, agent_name, spill_dir=spill_dir)
    try:
        refs = client.log_batch(
            [
                {"event": "step_start", "data": {"name": "plan", "kind": "chain"}},
                {"event": "step_end", "data": {"name": "plan", "kind": "chain"}, "parent_index": 0},
            ]
        )
        await twin.flush(client, 10)
        end = await maybe(client.get_event(refs[1].event_id))
        assert end.parent_id == refs[0].event_id
    finally:
        await twin.close(client, 5)


async def test_token_usage_goes_to_data(
    twin: Twin, ledger_server: Any, agent_name: str, spill_dir: Path
) -> None:
    client = twin.make(ledger_server.url, ledger_server.api_key, agent_name, spill_dir=spill_dir)
    usage = {"input_tokens": 120, "output_tokens": 7, "cache_read_tokens": 100, "model": "m"}
    try:
        ref = client.log("llm_end", {"text": "hi"}, token_usage=usage)
        await twin.flush(client, 10)
        assert (await maybe(client.get_event(ref.event_id))).data["token_usage"] == usage
    finally:
        await twin.close(client, 5)
    assert [
        e["event"] for e in stored_events(ledger_server.url, ledger_server.api_key, agent_name)
    ] == ["llm_end"]


def test_environment_fallbacks_and_overrides(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from agentledger.client import Ledger

    monkeypatch.setenv("AGENTLEDGER_URL", "http://127.0.0.1:9/")
    monkeypatch.setenv("AGENTLEDGER_API_KEY", "env-key")
    monkeypatch.setenv("AGENTLEDGER_AGENT", "env-agent")
    monkeypatch.setenv("AGENTLEDGER_SPILL_DIR", str(tmp_path / "env-spill"))
    from_env = Ledger()
    assert (from_env.url, from_env.agent, from_env.spill_dir) == (
        "http://127.0.0.1:9",
        "env-agent",
        tmp_path / "env-spill",
    )
    from_env.close(0)
    explicit = Ledger("http://127.0.0.1:10", "k", "arg-agent", spill_dir=None)
    assert (explicit.url, explicit.agent, explicit.spill_dir) == (
        "http://127.0.0.1:10",
        "arg-agent",
        None,
    )
    explicit.close(0)
    monkeypatch.delenv("AGENTLEDGER_API_KEY")
    with pytest.raises(ConfigurationError, match="AGENTLEDGER_API_KEY"):
        Ledger()


async def test_key_management_and_scopes(
    twin: Twin, ledger_server: Any, agent_name: str, spill_dir: Path
) -> None:
    """Keys made through the client: a read-only key reads but cannot write (its events are
    kept in the spill, not lost); a revoked key gets 401."""
    admin = twin.make(ledger_server.url, ledger_server.api_key, agent_name, spill_dir=None)
    try:
        admin.log("step_start", {"by": "admin"})
        await twin.flush(admin, 10)
        created = await maybe(
            admin.create_key("reader", agent=agent_name, scope="read_only", expires_in_days=1)
        )
        assert created.key and created.scope == "read_only"
        listed = await maybe(admin.list_keys())
        assert created.key_id in {k.key_id for k in listed}
        assert all(k.key is None for k in listed)  # no secrets in listings

        reader = twin.make(ledger_server.url, created.key, agent_name, spill_dir=spill_dir)
        try:
            assert [e.data for e in await maybe(reader.list_events())] == [{"by": "admin"}]
            reader.log("step_start", {"by": "reader"})
            await twin.flush(reader, 3)
            assert reader.stats().sent == 0 and reader.stats().spilled == 1
        finally:
            await twin.close(reader, 1)

        await maybe(admin.revoke_key(created.key_id))
        revoked = twin.make(ledger_server.url, created.key, agent_name, spill_dir=None)
        try:
            with pytest.raises(AuthenticationError):
                await maybe(revoked.list_events())
        finally:
            await twin.close(revoked, 0.5)
        with pytest.raises(NotFoundError):
            await maybe(admin.revoke_key("no-such-key"))
    finally:
        await twin.close(admin, 5)
    assert len(stored_events(ledger_server.url, ledger_server.api_key, agent_name)) == 1


async def test_non_object_data_is_wrapped_and_models_are_objects(
    twin: Twin, ledger_server: Any, agent_name: str, spill_dir: Path
) -> None:
    @dataclasses.dataclass
    class Step:
        name: str
        kind: str

    client = twin.make(ledger_server.url, ledger_server.api_key, agent_name, spill_dir=spill_dir)
    try:
        refs = [
            client.log("step_start", Step("plan", "chain")),
            client.log("user_message", ["a", "b"]),
            client.log("user_message", None),
            client.log("llm_end", "ok", token_usage={"input_tokens": None}),
        ]
        assert (await twin.flush(client, 10)).complete
        stored = [(await maybe(client.get_event(r.event_id))).data for r in refs]
    finally:
        await twin.close(client, 5)
    assert stored == [
        {"name": "plan", "kind": "chain"},
        {"value": ["a", "b"]},
        {},
        {"value": "ok", "token_usage": {"input_tokens": None}},
    ]


async def test_replay_of_a_session_across_agents(
    twin: Twin, ledger_server: Any, agent_name: str, spill_dir: Path
) -> None:
    client = twin.make(ledger_server.url, ledger_server.api_key, agent_name, spill_dir=spill_dir)
    session = f"multi-{agent_name}"
    try:
        ask = client.log("user_message", {"text": "hi"}, session_id=session)
        client.log(
            "assistant_response",
            {"text": "hello"},
            session_id=session,
            parent_id=ask,
            agent=f"{agent_name}-helper",
        )
        assert (await twin.flush(client, 10)).complete
        own = await maybe(client.replay(session))
        both = await maybe(client.replay(session, all_agents=True))
    finally:
        await twin.close(client, 5)
    assert [e.event for e in own] == ["user_message"]
    assert [(e.agent, e.event) for e in both] == [
        (agent_name, "user_message"),
        (f"{agent_name}-helper", "assistant_response"),
    ]


async def test_log_takes_a_caller_event_id(
    twin: Twin, ledger_server: Any, agent_name: str, spill_dir: Path
) -> None:
    """Integrations derive ids from their framework's ids (CrewAI: UUIDv5 of its event id)."""
    client = twin.make(ledger_server.url, ledger_server.api_key, agent_name, spill_dir=spill_dir)
    chosen = uuid.uuid5(uuid.NAMESPACE_URL, f"crewai:{agent_name}")
    try:
        # the child names a parent id that is logged after it: order must not matter
        child = client.log(vocabulary.STEP_END, {"name": "t"}, parent_id=str(chosen))
        at = dt.datetime.now(dt.UTC)
        parent = client.log(vocabulary.STEP_START, {"name": "t"}, event_id=chosen, timestamp=at)
        # the same event again (same body): stored once, answered as a duplicate
        again = client.log(
            vocabulary.STEP_START, {"name": "t"}, event_id=str(chosen).upper(), timestamp=at
        )
        bad = client.log(vocabulary.STEP_START, {"name": "t"}, event_id="not-a-uuid")
        assert parent.event_id == again.event_id == str(chosen)
        assert uuid.UUID(bad.event_id).version == 7
        flushed = await twin.flush(client, 10)
        assert flushed.complete
        stats = client.stats()
        assert stats.failed == 1 and stats.duplicates == 1
        why = await maybe(client.why(child.event_id, depth=10))
        assert [e.event_id for e in why.chain] == [str(chosen), child.event_id]
        events = stored_events(ledger_server.url, ledger_server.api_key, agent_name)
        assert sorted(e["event_id"] for e in events) == sorted([str(chosen), child.event_id])
    finally:
        await twin.close(client, 5)
