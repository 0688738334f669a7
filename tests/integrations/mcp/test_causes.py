"""What the MCP proxy's events were computed from, read back through the server's why() and
impact(): each result (or error) closes the ``tools/call`` request it answers, matched by the
JSON-RPC id, and each request hangs off the proxy's session start (the one cause the proxy
knows: what asked the client to call a tool happened in the client, not on the wire).
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters, stdio_client

from _servers import ServerProcess
from agentledger.client import Ledger
from agentledger.client import vocabulary as v

from .test_proxy import SDK_CHILD, ended, proxy_argv, stored_when

pytestmark = pytest.mark.mcp


async def test_why_a_result_holds_the_call_it_answers(
    ledger_server: ServerProcess, agent_name: str, env: dict[str, str], tmp_path: Path
) -> None:
    session = f"proxy-{uuid.uuid4().hex[:8]}"
    argv = proxy_argv(
        ledger_server.url, ledger_server.api_key, agent_name, SDK_CHILD, "--session", session
    )
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=env)
    with open(tmp_path / "proxy-stderr.log", "ab") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            await client.call_tool("add", {"a": 2, "b": 3})
            await client.call_tool("fail", {"message": "card declined"})

    stored = stored_when(ledger_server, agent_name, ended)
    start = stored.one(v.SESSION_START)
    add_call, fail_call = stored.one(v.TOOL_CALL, tool="add"), stored.one(v.TOOL_CALL, tool="fail")
    result, error = stored.one(v.TOOL_RESULT), stored.one(v.TOOL_ERROR)

    with Ledger(
        url=ledger_server.url, api_key=ledger_server.api_key, agent=agent_name, spill_dir=None
    ) as ledger:
        for outcome, call in ((result, add_call), (error, fail_call)):
            why = ledger.why(outcome["event_id"])
            assert why.chain_complete
            assert [e.event_id for e in why.chain] == [
                start["event_id"],
                call["event_id"],
                outcome["event_id"],
            ]
            assert why.causes_of(outcome["event_id"])[0].cause == call["event_id"]
            assert {(e.effect, e.cause, e.kind) for e in why.edges} == {
                (outcome["event_id"], call["event_id"], "closes"),
                (call["event_id"], start["event_id"], "cause"),
            }
            assert why.roots == [start["event_id"]]
        # one call's outcome is not an effect of another call
        impact = ledger.impact(add_call["event_id"])
        assert [e.event_id for e in impact.events] == [result["event_id"]]
