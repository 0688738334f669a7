"""``agentledger mcp``: a real MCP client session (the SDK's stdio client) against the console
script and a real ledger server. Every tool is called and its text and structured content
checked; bad arguments come back as MCP tool errors and the server keeps serving."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from typing import Any

import pytest
from mcp import MCPError

from _events import Stored, read_events
from _servers import ServerProcess, free_port
from agentledger.client import Ledger
from agentledger.client import vocabulary as v
from agentledger.mcp_server import TOOL_NAMES
from agentledger.protocol import limits

from .conftest import McpFactory, text_of

pytestmark = pytest.mark.mcp


@dataclass
class Seeded:
    """A small support session stored under one agent."""

    agent: str
    session: str
    ids: dict[str, str]


@pytest.fixture
def seeded(ledger_server: ServerProcess, agent_name: str) -> Seeded:
    """session_start → user_message → llm_start → llm_end → tool_call → tool_result →
    assistant_response, plus two state_set events."""
    session = f"s-{uuid.uuid4().hex[:8]}"
    ids: dict[str, str] = {}
    with Ledger(
        url=ledger_server.url, api_key=ledger_server.api_key, agent=agent_name, spill_dir=None
    ) as ledger:

        def log(name: str, event: str, data: dict[str, Any], parent: str | None) -> str:
            ids[name] = ledger.log(event, data, session_id=session, parent_id=parent).event_id
            return ids[name]

        root = log("start", v.SESSION_START, {"framework": "test"}, None)
        user = log("user", v.USER_MESSAGE, {"text": "Please refund order 1234"}, root)
        llm = log("llm", v.LLM_START, {"model": "fake", "messages": []}, user)
        said = log("llm_end", v.LLM_END, {"text": "", "token_usage": None}, llm)
        call = log("call", v.TOOL_CALL, {"tool": "issue_refund", "args": {"order": 1234}}, said)
        log("result", v.TOOL_RESULT, {"tool": "issue_refund", "result": {"ok": True}}, call)
        log("answer", v.ASSISTANT_RESPONSE, {"text": "Refund issued for 1234"}, ids["result"])
        log("state1", v.STATE_SET, {"key": "tier", "value": "gold"}, root)
        log("state2", v.STATE_SET, {"key": "refunds", "value": 1}, root)
        assert ledger.flush(timeout_s=20).complete
    return Seeded(agent_name, session, ids)


async def test_lists_every_tool_with_schema_and_description(
    mcp_client: McpFactory, ledger_server: ServerProcess, agent_name: str
) -> None:
    async with mcp_client(
        url=ledger_server.url, api_key=ledger_server.api_key, agent=agent_name
    ) as client:
        tools = (await client.list_tools()).tools
    by_name = {t.name: t for t in tools}
    assert tuple(t.name for t in tools) == TOOL_NAMES
    assert set(TOOL_NAMES) == {
        "why",
        "impact",
        "replay_session",
        "list_sessions",
        "search_events",
        "verify_chain",
        "log_event",
        "get_baseline",
        "state_at",
    }
    for tool in tools:
        assert tool.description and len(tool.description) > 40, tool.name
        assert tool.input_schema["type"] == "object"
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is (tool.name != "log_event")
    assert by_name["why"].input_schema["required"] == ["event_id"]
    assert by_name["search_events"].input_schema["properties"]["mode"]["enum"] == [
        "auto",
        "keyword",
        "semantic",
        "hybrid",
    ]


async def test_lineage_and_replay_tools(
    mcp_client: McpFactory, ledger_server: ServerProcess, seeded: Seeded
) -> None:
    ids = seeded.ids
    async with mcp_client(
        url=ledger_server.url, api_key=ledger_server.api_key, agent=seeded.agent
    ) as client:
        why = await client.call_tool("why", {"event_id": ids["answer"]})
        impact = await client.call_tool("impact", {"event_id": ids["call"]})
        replay = await client.call_tool("replay_session", {"session_id": seeded.session})
        short = await client.call_tool("replay_session", {"session_id": seeded.session, "limit": 3})
        exact = await client.call_tool(
            "replay_session", {"session_id": seeded.session, "limit": len(ids)}
        )
        sessions = await client.call_tool("list_sessions", {"limit": 5})

    assert not why.is_error
    chain = [e["event_id"] for e in why.structured_content["chain"]]
    expected = ["start", "user", "llm", "llm_end", "call", "result", "answer"]
    assert chain == [ids[name] for name in expected]
    assert why.structured_content["chain_complete"] is True
    assert why.structured_content["roots"] == [ids["start"]]
    text = text_of(why)
    assert text.splitlines()[0].endswith("— complete")
    assert text.splitlines()[1].startswith(f"{ids['answer']} assistant_response")
    assert text.index("Refund issued for 1234") < text.index("Please refund order 1234")
    assert f"└─ [cause] {ids['result']} tool_result issue_refund" in text

    assert [e["event_id"] for e in impact.structured_content["events"]] == [
        ids["result"],
        ids["answer"],
    ]
    assert "impact of " + ids["call"] + ": 2 event(s)" in text_of(impact)
    assert text_of(impact).splitlines()[1].startswith(f"{ids['call']} tool_call issue_refund")

    events = replay.structured_content["events"]
    assert replay.structured_content["count"] == len(ids) == len(events)
    assert events[0]["event"] == v.SESSION_START and events[0]["data"] == {"framework": "test"}
    # indented under the causing event: the tool_result sits five levels below the root
    result_line = next(line for line in text_of(replay).splitlines() if ids["result"] in line)
    assert result_line.startswith("  " * 5 + "- ")
    assert short.structured_content["count"] == 3
    assert "raise limit" in text_of(short) and short.structured_content["truncated"] is True
    assert exact.structured_content["count"] == len(ids)
    assert exact.structured_content["truncated"] is False and "raise limit" not in text_of(exact)

    listed = {s["session_id"]: s for s in sessions.structured_content["sessions"]}
    assert listed[seeded.session]["event_count"] == len(ids)
    assert seeded.session in text_of(sessions)


async def test_search_verify_baseline_and_state_tools(
    mcp_client: McpFactory, ledger_server: ServerProcess, seeded: Seeded
) -> None:
    async with mcp_client(
        url=ledger_server.url, api_key=ledger_server.api_key, agent=seeded.agent
    ) as client:
        found = await client.call_tool("search_events", {"query": "refund", "mode": "keyword"})
        verified = await client.call_tool("verify_chain", {})
        head = verified.structured_content["chain_head"]
        anchored = await client.call_tool("verify_chain", {"anchor": head["chain_hash"]})
        wrong_anchor = await client.call_tool("verify_chain", {"anchor": "0" * 64})
        baseline = await client.call_tool("get_baseline", {"window": "7d"})
        now = dt.datetime.now(dt.UTC).isoformat()
        state = await client.call_tool("state_at", {"timestamp": now})
        before = await client.call_tool("state_at", {"timestamp": "2000-01-01T00:00:00Z"})

    hits = {h["event"]["event_id"] for h in found.structured_content["results"]}
    assert {seeded.ids["user"], seeded.ids["answer"]} <= hits
    assert "refund" in text_of(found).lower()

    assert verified.structured_content["intact"] is True
    assert head["sequence_no"] == len(seeded.ids)
    assert "INTACT" in text_of(verified)
    assert anchored.structured_content["intact"] is True
    assert wrong_anchor.is_error or wrong_anchor.structured_content["intact"] is False

    assert not baseline.is_error
    assert baseline.structured_content["agent"] == seeded.agent
    assert "verdict" in baseline.structured_content
    assert seeded.agent in text_of(baseline)

    assert state.structured_content["state"] == {"tier": "gold", "refunds": 1}
    assert 'tier = "gold"' in text_of(state)
    assert before.structured_content["state"] == {}


async def test_log_event_links_parents_explicitly_or_per_session(
    mcp_client: McpFactory, ledger_server: ServerProcess, agent_name: str
) -> None:
    async with mcp_client(
        url=ledger_server.url, api_key=ledger_server.api_key, agent=agent_name
    ) as client:

        async def log(**arguments: Any) -> dict[str, Any]:
            result = await client.call_tool("log_event", arguments)
            assert not result.is_error, text_of(result)
            assert result.structured_content["stored"] is True, text_of(result)
            return dict(result.structured_content)

        a1 = await log(event="user_message", data={"text": "hi"}, session_id="A")
        b1 = await log(event="user_message", data={"text": "hello"}, session_id="B")
        a2 = await log(event="assistant_response", data={"text": "hi back"}, session_id="A")
        b2 = await log(event="assistant_response", data={"text": "hello back"}, session_id="B")
        root = await log(event="note", data={"text": "no session"})
        child = await log(event="note", data={"text": "explicit"}, parent_id=a1["event_id"])
        secret = await log(event="note", data={"api_key": "sk-live-do-not-store"}, session_id="C")

    assert a1["parent_id"] is None and a1["parent_source"] == "none (root)"
    assert a2["parent_id"] == a1["event_id"] and a2["parent_source"] == "previous event in session"
    assert b2["parent_id"] == b1["event_id"]  # sessions do not share a "last event"
    assert root["parent_id"] is None
    assert child["parent_id"] == a1["event_id"] and child["parent_source"] == "explicit"
    assert [a1["sequence_no"], b1["sequence_no"], a2["sequence_no"]] == [1, 2, 3]

    stored = Stored(read_events(ledger_server.url, ledger_server.headers(), agent_name))
    assert stored.by_id[a2["event_id"]]["parent_id"] == a1["event_id"]
    assert stored.by_id[b2["event_id"]]["parent_id"] == b1["event_id"]
    assert stored.by_id[b2["event_id"]]["session_id"] == "B"
    assert stored.by_id[child["event_id"]]["parent_id"] == a1["event_id"]
    assert stored.by_id[secret["event_id"]]["data"]["api_key"] != "sk-live-do-not-store"


#: (tool, arguments, the field the error must name)
BAD_ARGUMENTS: list[tuple[str, dict[str, Any], str]] = [
    ("why", {"event_id": "not-a-uuid"}, "event_id"),
    ("why", {"event_id": str(uuid.uuid4()), "depth": -1}, "depth"),
    ("why", {"event_id": str(uuid.uuid4()), "depth": limits.LINEAGE_DEPTH_MAX + 1}, "depth"),
    ("impact", {"event_id": str(uuid.uuid4()), "limit": 0}, "limit"),
    ("why", {}, "event_id"),
    ("impact", {"event_id": 42}, "event_id"),
    ("search_events", {"query": "x", "mode": "fuzzy"}, "mode"),
    ("search_events", {"query": ""}, "query"),
    ("state_at", {"timestamp": "yesterday"}, "timestamp"),
    ("log_event", {"event": "note", "parent_id": "123"}, "parent_id"),
    ("log_event", {"event": "note", "data": "not an object"}, "data"),
    ("get_baseline", {"window": "1y"}, "window"),
    ("replay_session", {"session_id": "s", "limit": -1}, "limit"),
]


async def test_bad_arguments_are_tool_errors_naming_the_field(
    mcp_client: McpFactory, ledger_server: ServerProcess, agent_name: str
) -> None:
    async with mcp_client(
        url=ledger_server.url, api_key=ledger_server.api_key, agent=agent_name
    ) as client:
        for tool, arguments, named in BAD_ARGUMENTS:
            result = await client.call_tool(tool, arguments)
            assert result.is_error, (tool, arguments)
            assert named in text_of(result), (tool, arguments, text_of(result))
            # the server is still there and answers the next call
            after = await client.call_tool("list_sessions", {})
            assert not after.is_error, (tool, arguments)


async def test_unknown_event_unknown_tool_and_unknown_agent(
    mcp_client: McpFactory, ledger_server: ServerProcess, agent_name: str
) -> None:
    missing = str(uuid.uuid4())
    async with mcp_client(
        url=ledger_server.url, api_key=ledger_server.api_key, agent=agent_name
    ) as client:
        why = await client.call_tool("why", {"event_id": missing})
        try:
            unknown = await client.call_tool("drop_tables", {})
        except MCPError as error:  # a protocol error is as good as a tool error here
            assert "drop_tables" in str(error)
        else:
            assert unknown.is_error and "drop_tables" in text_of(unknown)
        sessions = await client.call_tool("list_sessions", {"agent": "nobody-" + agent_name})
    assert why.is_error and "not found" in text_of(why) and missing in text_of(why)
    assert not sessions.is_error and sessions.structured_content["sessions"] == []


async def test_without_agent_reads_need_one_and_say_so(
    mcp_client: McpFactory, ledger_server: ServerProcess, seeded: Seeded
) -> None:
    async with mcp_client(url=ledger_server.url, api_key=ledger_server.api_key, agent=None) as c:
        nameless = await c.call_tool("verify_chain", {})
        named = await c.call_tool("verify_chain", {"agent": seeded.agent})
        why = await c.call_tool("why", {"event_id": seeded.ids["answer"]})
    assert nameless.is_error and "--agent" in text_of(nameless)
    assert named.structured_content["intact"] is True
    assert not why.is_error  # why needs no agent: the event id names it


async def test_ledger_outage_gives_tool_errors_and_queues_writes(
    mcp_client: McpFactory, agent_name: str, tmp_path: Any
) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    async with mcp_client(url=dead, api_key="any-key-0123456789", agent=agent_name) as client:
        why = await client.call_tool("why", {"event_id": str(uuid.uuid4())})
        logged = await client.call_tool("log_event", {"event": "note", "data": {"n": 1}})
    assert why.is_error and "cannot reach the ledger" in text_of(why)
    assert not logged.is_error
    assert logged.structured_content["stored"] is False
    assert "queued" in text_of(logged)
    spilled = list((tmp_path / "spill").rglob("*"))
    assert any(p.is_file() and p.stat().st_size > 0 for p in spilled)


async def test_wrong_api_key_is_a_tool_error(
    mcp_client: McpFactory, ledger_server: ServerProcess, agent_name: str
) -> None:
    async with mcp_client(url=ledger_server.url, api_key="wrong-key-000000", agent=agent_name) as c:
        result = await c.call_tool("list_sessions", {})
    assert result.is_error and "401" in text_of(result)


async def test_read_only_key_cannot_log_and_is_told_why(
    mcp_client: McpFactory, ledger_server: ServerProcess, agent_name: str
) -> None:
    """Scopes are the server's: a read-only key reads through the MCP tools but its
    ``log_event`` is refused, and the tool says the event was not stored."""
    with Ledger(url=ledger_server.url, api_key=ledger_server.api_key, spill_dir=None) as admin:
        key = admin.create_key("mcp-read-only", agent=agent_name, scope="read_only").key
    assert key
    async with mcp_client(url=ledger_server.url, api_key=key, agent=agent_name) as client:
        logged = await client.call_tool("log_event", {"event": "note", "data": {"n": 1}})
        listed = await client.call_tool("list_sessions", {})
    assert logged.is_error and "not store" in text_of(logged), text_of(logged)
    assert not listed.is_error
    assert read_events(ledger_server.url, ledger_server.headers(), agent_name) == []
