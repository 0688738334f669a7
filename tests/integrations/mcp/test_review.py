"""Hostile review of ``agentledger mcp`` and ``agentledger mcp-proxy``.

Each test reproduces one finding of the review against real processes: the console scripts,
a real ``agentledger serve`` and, for the proxy, small hostile MCP children written to
``tmp_path``. Tests marked ``xfail(strict=True)`` fail today; when the bug is fixed they pass
and the mark must go.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from _servers import ServerProcess
from agentledger.client import Ledger
from agentledger.client import vocabulary as v

from .conftest import McpFactory, text_of
from .test_proxy import RAW_CHILD, Raw, call, ended, proxy_argv, raw_proxy, stored_when

pytestmark = pytest.mark.mcp


#: A hand-written MCP server: answers ``initialize``; a ``tools/call`` by the mode in argv[1]:
#: ``surrogate`` answers with a text holding a lone surrogate escape (what JavaScript's
#: ``JSON.stringify`` writes for a string cut inside an emoji), ``huge`` with a text of
#: ``arguments.size`` characters on one line. ``grandchild`` forks a process that keeps the
#: child's stdout open for ``GRANDCHILD_S`` seconds (its pid in ``GRANDCHILD_PID_FILE``), then
#: echoes like the other modes.
HOSTILE_CHILD = r"""
import json, os, sys, time
mode = sys.argv[1]
out = sys.stdout.buffer
if mode == "grandchild":
    pid = os.fork()
    if pid == 0:
        os.setsid()
        time.sleep(float(os.environ["GRANDCHILD_S"]))
        os._exit(0)
    with open(os.environ["GRANDCHILD_PID_FILE"], "w") as f:
        f.write(str(pid))
for line in sys.stdin.buffer:
    if not line.strip():
        continue
    m = json.loads(line)
    if "method" not in m or "id" not in m:
        continue
    i = json.dumps(m["id"]).encode()
    if m["method"] == "initialize":
        r = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
             "serverInfo": {"name": "hostile", "version": "1"}}
        out.write(b'{"jsonrpc":"2.0","id":%s,"result":%s}\n' % (i, json.dumps(r).encode()))
    elif mode == "surrogate":
        out.write(b'{"jsonrpc":"2.0","id":%s,"result":{"content":'
                  b'[{"type":"text","text":"cut \\ud83d"}]}}\n' % i)
    elif mode == "huge":
        size = m["params"]["arguments"]["size"]
        out.write(b'{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"'
                  % i + b"x" * size + b'"}]}}\n')
    else:
        args = m["params"]["arguments"]
        r = {"content": [{"type": "text", "text": json.dumps(args)}], "structuredContent": args}
        out.write(b'{"jsonrpc":"2.0","id":%s,"result":%s}\n' % (i, json.dumps(r).encode()))
    out.flush()
"""


@pytest.fixture
def hostile(tmp_path: Path) -> Any:
    """``hostile(mode)``: the argv of :data:`HOSTILE_CHILD` in that mode."""
    script = tmp_path / "hostile_child.py"
    script.write_text(HOSTILE_CHILD)

    def argv(mode: str) -> list[str]:
        return [sys.executable, str(script), mode]

    return argv


# -- agentledger mcp -------------------------------------------------------------------------


async def test_replay_session_takes_any_session_id_the_ledger_stores(
    mcp_client: McpFactory, ledger_server: ServerProcess, agent_name: str
) -> None:
    victim = f"victim-{uuid.uuid4().hex[:6]}"
    async with mcp_client(
        url=ledger_server.url, api_key=ledger_server.api_key, agent=agent_name
    ) as client:
        for session in ("a/b", "a?b", victim):
            logged = await client.call_tool(
                "log_event", {"event": "note", "data": {"s": session}, "session_id": session}
            )
            assert logged.structured_content["stored"] is True, text_of(logged)
        slash = await client.call_tool("replay_session", {"session_id": "a/b"})
        query = await client.call_tool("replay_session", {"session_id": "a?b"})
        traversal = await client.call_tool("replay_session", {"session_id": f"x/../{victim}"})
    assert not traversal.is_error
    # another session's events must never be answered under this name
    assert traversal.structured_content["count"] == 0, text_of(traversal)
    assert not slash.is_error, text_of(slash)
    assert [e["data"] for e in slash.structured_content["events"]] == [{"s": "a/b"}]
    assert not query.is_error, text_of(query)
    assert [e["data"] for e in query.structured_content["events"]] == [{"s": "a?b"}]


async def test_rejected_event_does_not_become_the_next_events_parent(
    mcp_client: McpFactory, ledger_server: ServerProcess, agent_name: str
) -> None:
    async with mcp_client(
        url=ledger_server.url, api_key=ledger_server.api_key, agent=agent_name
    ) as client:
        first = await client.call_tool(
            "log_event", {"event": "user_message", "data": {"text": "hi"}, "session_id": "s"}
        )
        # the server refuses NUL in an event type (422): the tool says it was not stored
        rejected = await client.call_tool(
            "log_event", {"event": "note\x00", "data": {}, "session_id": "s"}
        )
        after = await client.call_tool(
            "log_event", {"event": "assistant_response", "data": {"text": "yo"}, "session_id": "s"}
        )
        why = await client.call_tool("why", {"event_id": after.structured_content["event_id"]})
    assert rejected.is_error and "not store" in text_of(rejected)
    assert after.structured_content["parent_id"] == first.structured_content["event_id"]
    assert why.structured_content["chain_complete"] is True, text_of(why)


async def test_deep_chain_text_grows_linearly(
    mcp_client: McpFactory, ledger_server: ServerProcess, agent_name: str
) -> None:
    count = 1_500
    with Ledger(
        url=ledger_server.url, api_key=ledger_server.api_key, agent=agent_name, spill_dir=None
    ) as ledger:
        parent = None
        for index in range(count):
            parent = ledger.log("note", {"i": index}, session_id="deep", parent_id=parent).event_id
        assert ledger.flush(timeout_s=20).complete
    async with mcp_client(
        url=ledger_server.url, api_key=ledger_server.api_key, agent=agent_name
    ) as client:
        replay = await client.call_tool("replay_session", {"session_id": "deep", "limit": count})
    assert replay.structured_content["count"] == count
    # ~110 characters of content per line; 1,500 lines at depths 0..1,499 add 2.2 M spaces
    assert len(text_of(replay)) < 300 * count


async def test_state_at_out_of_range_time_names_the_field(
    mcp_client: McpFactory, ledger_server: ServerProcess, agent_name: str
) -> None:
    async with mcp_client(
        url=ledger_server.url, api_key=ledger_server.api_key, agent=agent_name
    ) as client:
        results = [
            await client.call_tool("state_at", {"timestamp": when})
            for when in ("0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00")
        ]
    for result in results:
        assert result.is_error
        assert "500" not in text_of(result), text_of(result)
        assert "timestamp" in text_of(result), text_of(result)


# -- agentledger mcp-proxy -------------------------------------------------------------------


def _proxied(
    ledger_server: ServerProcess, agent: str, child: list[str], env: dict[str, str], tmp: Path
) -> Raw:
    peer = Raw(proxy_argv(ledger_server.url, ledger_server.api_key, agent, child), env, tmp)
    peer.initialize()
    return peer


def test_response_with_lone_surrogate_is_logged_as_a_result(
    ledger_server: ServerProcess, agent_name: str, env: dict[str, str], tmp_path: Path, hostile: Any
) -> None:
    peer = _proxied(ledger_server, agent_name, hostile("surrogate"), env, tmp_path / "stderr.log")
    peer.send(call(1, "read", {"path": "x"}))
    line = peer.stdout.readline()  # orjson (Raw.recv) refuses it too; the stdlib reads it
    assert json.loads(line)["result"]["content"][0]["text"] == "cut \ud83d"
    assert peer.close()[0] == 0
    stored = stored_when(ledger_server, agent_name, ended)
    (outcome,) = stored.kids(stored.one(v.TOOL_CALL, tool="read"))
    assert outcome["event"] == v.TOOL_RESULT, outcome["data"]


def test_oversized_response_is_not_logged_as_no_response(
    ledger_server: ServerProcess, agent_name: str, env: dict[str, str], tmp_path: Path, hostile: Any
) -> None:
    size = 17 * 1024 * 1024
    peer = _proxied(ledger_server, agent_name, hostile("huge"), env, tmp_path / "stderr.log")
    peer.send(call(1, "dump", {"size": size}))
    answer = peer.recv()
    assert len(answer["result"]["content"][0]["text"]) == size
    assert peer.close()[0] == 0
    stored = stored_when(ledger_server, agent_name, ended)
    assert stored.one(v.SESSION_END)["data"]["stats"]["unlogged_lines"] == 1
    (outcome,) = stored.kids(stored.one(v.TOOL_CALL, tool="dump"))
    assert outcome["data"].get("type") != "no_response", outcome["data"]
    assert "without answering" not in str(outcome["data"].get("error"))


def test_server_info_recorded_when_initialize_is_not_the_first_response(
    ledger_server: ServerProcess, agent_name: str, env: dict[str, str], tmp_path: Path
) -> None:
    peer = raw_proxy(ledger_server, agent_name, env, tmp_path)
    peer.send({"jsonrpc": "2.0", "id": "probe", "method": "server/discover", "params": {}})
    peer.recv()
    assert peer.initialize()["result"]["serverInfo"]["name"] == "raw-child"
    assert peer.close()[0] == 0
    stored = stored_when(ledger_server, agent_name, ended)
    start = stored.one(v.SESSION_START)
    assert start["data"].get("server") == {"name": "raw-child", "version": "0.0.1"}, start


def test_huge_integer_ids_pair_each_result_with_its_own_call(
    ledger_server: ServerProcess, agent_name: str, env: dict[str, str], tmp_path: Path
) -> None:
    peer = _proxied(ledger_server, agent_name, RAW_CHILD, env, tmp_path / "stderr.log")
    ids = [2**64 + 1, 2**64 + 2]
    for n, ident in enumerate(ids):  # the stdlib writes and reads them exactly; orjson cannot
        peer.stdin.write(json.dumps(call(ident, "echo", {"n": n})).encode() + b"\n")
        peer.stdin.flush()
    assert [json.loads(peer.stdout.readline())["id"] for _ in ids] == ids
    assert peer.close()[0] == 0
    stored = stored_when(ledger_server, agent_name, ended)
    assert {c["data"]["call_id"] for c in stored.of(v.TOOL_CALL)} == {str(i) for i in ids}
    for tool_call in stored.of(v.TOOL_CALL):
        (outcome,) = stored.kids(tool_call)
        assert outcome["event"] == v.TOOL_RESULT, outcome["data"]
        assert outcome["data"]["result"] == tool_call["data"]["args"]


def test_sigterm_ends_proxy_when_grandchild_holds_stdout(
    ledger_server: ServerProcess, agent_name: str, env: dict[str, str], tmp_path: Path, hostile: Any
) -> None:
    pid_file = tmp_path / "grandchild.pid"
    env = {**env, "GRANDCHILD_S": "20", "GRANDCHILD_PID_FILE": str(pid_file)}
    proxy = subprocess.Popen(
        proxy_argv(ledger_server.url, ledger_server.api_key, agent_name, hostile("grandchild")),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    assert proxy.stdin is not None and proxy.stdout is not None
    try:
        proxy.stdin.write(json.dumps(call(1, "echo", {"a": 1})).encode() + b"\n")
        proxy.stdin.flush()
        assert json.loads(proxy.stdout.readline())["id"] == 1
        proxy.stdin.close()  # the child exits; its grandchild still holds the stdout pipe
        time.sleep(0.5)
        proxy.send_signal(signal.SIGTERM)  # what an MCP host sends next
        try:
            proxy.wait(3.0)
        except subprocess.TimeoutExpired:
            pytest.fail("mcp-proxy still running 3 s after SIGTERM; its child had exited")
    finally:
        if proxy.poll() is None:
            proxy.kill()
            proxy.wait()
        if pid_file.exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
    assert ended(stored_when(ledger_server, agent_name, ended, timeout_s=5.0))
