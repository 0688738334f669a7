"""The MCP proxy (``agentledger mcp-proxy``) between a real MCP client
and a real MCP server child (``proxy_child.py``), logging to a real ``agentledger serve``.

Checked: the logged tree (every outcome the child of its own call, by JSON-RPC id, also for
concurrent calls, batches, ids reused by server requests, cancellation, ids and values orjson
cannot read exactly, last lines without a newline), the server's name and version whichever
response carries them, byte-exact forwarding (a 2 MB non-ASCII result), unchanged latency
while the ledger server is down, the child's stderr drained, clear exits when the child
cannot start, exits early or leaves a grandchild holding its stdout, undelivered events
reported at exit, and the logging-side limits (queue full, oversized lines, pending-call cap)
never touching forwarding, with the calls they hide closed truthfully.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import logging
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from mcp import Client, StdioServerParameters, stdio_client

from _events import Stored, read_events
from _servers import ServerProcess, agentledger_executable, free_port
from agentledger.client import Ledger
from agentledger.client import vocabulary as v
from agentledger.mcp_proxy import McpProxy

pytestmark = pytest.mark.mcp

CHILD = str(Path(__file__).with_name("proxy_child.py"))
SDK_CHILD = [sys.executable, CHILD, "sdk"]
RAW_CHILD = [sys.executable, CHILD, "raw"]


def proxy_argv(url: str, api_key: str, agent: str, child: list[str], *options: str) -> list[str]:
    return [
        agentledger_executable(),
        "mcp-proxy",
        "--url",
        url,
        "--api-key",
        api_key,
        "--agent",
        agent,
        *options,
        "--",
        *child,
    ]


def stored_when(
    server: ServerProcess, agent: str, done: Callable[[Stored], bool], timeout_s: float = 20.0
) -> Stored:
    """Read the agent's events until ``done`` holds (the proxy flushes as it exits)."""
    deadline = time.monotonic() + timeout_s
    while True:
        stored = Stored(read_events(server.url, server.headers(), agent))
        if done(stored) or time.monotonic() > deadline:
            return stored
        time.sleep(0.1)


def ended(stored: Stored) -> bool:
    return bool(stored.of(v.SESSION_END))


class Raw:
    """A stdio peer (the child alone, or the proxy) driven with raw JSON-RPC lines.

    Every read has a watchdog: if the peer hangs, it is killed and the read returns EOF.
    """

    def __init__(self, argv: list[str], env: dict[str, str], stderr: Path) -> None:
        with open(stderr, "ab") as err:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=env
            )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin = self.proc.stdin
        self.stdout = self.proc.stdout
        self.received = bytearray()
        self._deadline: float | None = None  # monotonic; set while a read waits
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self) -> None:
        """One watchdog per peer (a timer per read would add a thread start to each
        measured round trip)."""
        while self.proc.poll() is None:
            deadline = self._deadline
            if deadline is not None and time.monotonic() > deadline:
                self.proc.kill()
                return
            time.sleep(0.1)

    def _read(self, read: Callable[[], bytes], timeout_s: float) -> bytes:
        self._deadline = time.monotonic() + timeout_s
        try:
            return read()
        finally:
            self._deadline = None

    def send(self, message: Any, *, split: bool = False) -> None:
        data = orjson.dumps(message) + b"\n"
        if split:  # one line in two writes: the proxy must not care where reads end
            half = len(data) // 2
            self.stdin.write(data[:half])
            self.stdin.flush()
            time.sleep(0.02)
            data = data[half:]
        self.stdin.write(data)
        self.stdin.flush()

    def recv(self, timeout_s: float = 30.0) -> Any:
        return orjson.loads(self.recv_line(timeout_s))

    def recv_line(self, timeout_s: float = 30.0) -> bytes:
        """The next line as sent (for what orjson cannot read: the stdlib reads it)."""
        line = self._read(self.stdout.readline, timeout_s)
        assert line, f"EOF from {self.proc.args!r} (exit {self.proc.poll()})"
        self.received += line
        return line

    def initialize(self) -> Any:
        self.send(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "raw-test", "version": "1"},
                },
            }
        )
        answer = self.recv()
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer

    def terminate(self, timeout_s: float = 15.0) -> tuple[int, float]:
        """SIGTERM; (exit code, seconds until exit). Killed when still running after
        ``timeout_s`` (the wait raises ``TimeoutExpired`` then)."""
        started = time.monotonic()
        self.proc.terminate()
        try:
            code = self.proc.wait(timeout=timeout_s)
        finally:
            self.proc.kill()
        return code, time.monotonic() - started

    def close(self, timeout_s: float = 30.0) -> tuple[int, float, bytes]:
        """Close our end; (exit code, seconds until exit, bytes still sent after)."""
        started = time.monotonic()
        self.stdin.close()
        rest = self._read(self.stdout.read, timeout_s)
        code = self.proc.wait(timeout_s)
        return code, time.monotonic() - started, rest


def raw_proxy(
    server: ServerProcess, agent: str, env: dict[str, str], tmp_path: Path, *options: str
) -> Raw:
    """The proxy around the raw child, logging to ``server`` as ``agent`` (stderr in
    ``tmp_path/stderr.log``)."""
    argv = proxy_argv(server.url, server.api_key, agent, RAW_CHILD, *options)
    return Raw(argv, env, tmp_path / "stderr.log")


def call(ident: Any, tool: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": ident,
        "method": "tools/call",
        "params": {"name": tool, "arguments": args or {}},
    }


# -- 1. the logged tree, SDK client and SDK server ----------------------------------------


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_tree_of_calls_results_and_errors(
    mode: str,
    ledger_server: ServerProcess,
    agent_name: str,
    env: dict[str, str],
    tmp_path: Path,
) -> None:
    """``auto`` speaks the 2026-07-28 protocol (``server/discover``, server info in each
    result's ``_meta``), ``legacy`` the ``initialize`` handshake."""
    session = f"proxy-{uuid.uuid4().hex[:8]}"
    argv = proxy_argv(
        ledger_server.url, ledger_server.api_key, agent_name, SDK_CHILD, "--session", session
    )
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=env)
    with open(tmp_path / "proxy-stderr.log", "ab") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode=mode) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            added = await client.call_tool("add", {"a": 2, "b": 3})
            failed = await client.call_tool("fail", {"message": "card declined"})
            unknown = await client.call_tool("no_such_tool", {})
            slow_a, slow_b = await asyncio.gather(
                client.call_tool("slow", {"seconds": 0.3, "tag": "A"}),
                client.call_tool("slow", {"seconds": 0.02, "tag": "B"}),
            )
    # What the client got is what the server answered (the proxy changes nothing).
    assert tools == {"add", "fail", "slow", "big"}
    assert added.structured_content == {"sum": 5} and not added.is_error
    assert failed.is_error and "card declined" in failed.content[0].text
    # The SDK answers an unknown tool with an isError result, not a JSON-RPC error.
    assert unknown.is_error and "no_such_tool" in unknown.content[0].text
    assert slow_a.structured_content == {"result": "A"}
    assert slow_b.structured_content == {"result": "B"}

    stored = stored_when(ledger_server, agent_name, ended)
    assert {e["session_id"] for e in stored.events} == {session}
    (root,) = stored.roots()
    assert root["event"] == v.SESSION_START
    assert root["data"] == {
        "framework": "mcp",
        "command": os.path.basename(sys.executable),
        "args": 2,
        "server": {"name": "proxy-child", "version": "9.8.7"},
    }
    calls = stored.of(v.TOOL_CALL)
    assert [c["data"]["tool"] for c in calls][:3] == ["add", "fail", "no_such_tool"]
    assert sorted(c["data"]["tool"] for c in calls[3:]) == ["slow", "slow"]
    outcome: dict[str, dict[str, Any]] = {}
    for c in calls:
        assert stored.parent(c) is root
        (kid,) = stored.kids(c)
        assert kid["data"]["call_id"] == c["data"]["call_id"]
        assert kid["data"]["tool"] == c["data"]["tool"]
        assert kid["data"]["duration_ms"] >= 0
        outcome[c["data"]["args"].get("tag") or c["data"]["tool"]] = kid
    add_call = stored.one(v.TOOL_CALL, tool="add")
    assert add_call["data"]["args"] == {"a": 2, "b": 3}
    assert outcome["add"]["event"] == v.TOOL_RESULT
    assert outcome["add"]["data"]["result"] == {"sum": 5}
    assert outcome["add"]["data"]["status"] == "ok"
    assert outcome["fail"]["event"] == v.TOOL_ERROR
    assert outcome["fail"]["data"]["type"] == "tool_error"
    assert "card declined" in outcome["fail"]["data"]["error"]
    assert outcome["no_such_tool"]["event"] == v.TOOL_ERROR
    assert "no_such_tool" in outcome["no_such_tool"]["data"]["error"]
    # Concurrent calls: each result under its own call (B answered first).
    assert outcome["A"]["data"]["result"] == {"result": "A"}
    assert outcome["B"]["data"]["result"] == {"result": "B"}
    assert outcome["A"]["data"]["duration_ms"] >= 250 > outcome["B"]["data"]["duration_ms"]
    assert outcome["B"]["sequence_no"] < outcome["A"]["sequence_no"]
    end = stored.one(v.SESSION_END)
    assert stored.parent(end) is root
    assert end["data"]["stats"] == {
        "calls": 5,
        "errors": 2,
        "exit_code": 0,
        "unlogged_chunks": 0,
        "unlogged_lines": 0,
    }
    assert stored.types() == {
        v.SESSION_START: 1,
        v.TOOL_CALL: 5,
        v.TOOL_RESULT: 3,
        v.TOOL_ERROR: 2,
        v.SESSION_END: 1,
    }


# -- 2. byte-exact forwarding ----------------------------------------------------------


def test_bytes_are_forwarded_unchanged(
    ledger_server: ServerProcess, agent_name: str, env: dict[str, str], tmp_path: Path
) -> None:
    """The client receives exactly the bytes the child sends when it runs without the proxy:
    a ~4 MB line (a 2 MB non-ASCII result, text and structured), split requests included."""
    text = "ünïcødé ✓ 日本 "
    script = [
        call(1, "big", {"size": 2_000_000, "text": text}),
        call(2, "add", {"a": 1, "b": 1}),
        call(3, "fail", {"message": "nö"}),
        call(4, "big", {"size": 10, "text": "é"}),
    ]

    def exchange(argv: list[str]) -> bytes:
        peer = Raw(argv, env, tmp_path / "stderr.log")
        peer.initialize()
        for index, message in enumerate(script):
            peer.send(message, split=index % 2 == 1)
            assert peer.recv()["id"] == message["id"]
        code, _, rest = peer.close()
        assert code == 0
        return bytes(peer.received) + rest

    direct = exchange(SDK_CHILD)
    proxied = exchange(proxy_argv(ledger_server.url, ledger_server.api_key, agent_name, SDK_CHILD))
    assert len(direct) > 4_000_000
    assert text.encode() in direct  # raw UTF-8 on the wire, not \u escapes
    assert proxied == direct

    stored = stored_when(ledger_server, agent_name, ended)
    big = stored.of(v.TOOL_CALL, tool="big")[0]
    assert big["data"]["args"] == {"size": 2_000_000, "text": text}
    (result,) = stored.kids(big)
    assert result["event"] == v.TOOL_RESULT and result["data"]["status"] == "ok"
    assert result["data"]["result"]["result"].startswith(text)  # the client cut it to size
    assert stored.one(v.SESSION_END)["data"]["stats"]["calls"] == 4


# -- 3. ledger server outage: latency unchanged ----------------------------------------


def test_server_outage_does_not_slow_messages(
    ledger_server: ServerProcess, agent_name: str, env: dict[str, str], tmp_path: Path
) -> None:
    """Per-call round trips through the proxy with the ledger server up vs a port nothing
    listens on (spill on, as in production) vs no proxy, interleaved in rounds.

    Measured on this 2-core shared machine (300 calls each, raw echo child, three runs):
    median direct 0.07-0.10 ms, proxied 0.28-0.32 ms with the server up and 0.29-0.30 ms
    with it down; p90 0.44-0.84 ms up vs 0.47-0.49 ms down. The bound below is generous for
    noise.
    """
    dead = f"http://127.0.0.1:{free_port()}"
    stderr = tmp_path / "stderr.log"
    peers = {
        "direct": Raw(RAW_CHILD, env, stderr),
        "up": Raw(
            proxy_argv(ledger_server.url, ledger_server.api_key, agent_name, RAW_CHILD), env, stderr
        ),
        "down": Raw(proxy_argv(dead, "dev-key-x", f"{agent_name}-down", RAW_CHILD), env, stderr),
    }
    latencies: dict[str, list[float]] = {name: [] for name in peers}
    for peer in peers.values():
        peer.initialize()
    ident = 0
    rounds, per_round = 20, 15
    for index in range(rounds):
        names = list(peers)
        names = names[index % 3 :] + names[: index % 3]
        for name in names:
            for _ in range(per_round):
                ident += 1
                started = time.perf_counter()
                peers[name].send(call(ident, "echo", {"n": ident, "pad": "x" * 200}))
                answer = peers[name].recv()
                latencies[name].append(time.perf_counter() - started)
                assert answer["id"] == ident
                assert answer["result"]["structuredContent"]["n"] == ident
    exits = {name: peer.close() for name, peer in peers.items()}

    def p90(values: list[float]) -> float:
        return sorted(values)[int(0.9 * len(values))]

    summary = {
        name: (statistics.median(lat) * 1e3, p90(lat) * 1e3) for name, lat in latencies.items()
    }
    up_median, down_median = summary["up"][0], summary["down"][0]
    print(f"median / p90 ms: {summary}")
    assert down_median <= 2 * up_median + 2.0, summary
    for name, (code, seconds, rest) in exits.items():
        assert code == 0 and rest == b"", (name, code, rest)
        # flush_timeout_s (1 s) at most after the child exited, plus start-up noise
        assert seconds < 6.0, (name, seconds)

    n_calls = rounds * per_round
    stored = stored_when(ledger_server, agent_name, ended)
    assert stored.types()[v.TOOL_CALL] == n_calls
    assert stored.types()[v.TOOL_RESULT] == n_calls


# -- 4. the child's stderr is drained ---------------------------------------------------


def test_child_stderr_is_drained(
    ledger_server: ServerProcess, agent_name: str, env: dict[str, str], tmp_path: Path
) -> None:
    """A child that writes 2 MB to stderr before serving (a pipe holds 64 KiB) still
    answers, and its stderr reaches ours."""
    child = [*SDK_CHILD, "--stderr-bytes", "2000000"]
    stderr = tmp_path / "proxy-stderr.log"
    peer = Raw(proxy_argv(ledger_server.url, ledger_server.api_key, agent_name, child), env, stderr)
    assert peer.initialize()["result"]["serverInfo"]["name"] == "proxy-child"
    peer.send(call(1, "add", {"a": 20, "b": 22}))
    assert peer.recv()["result"]["structuredContent"] == {"sum": 42}
    code, _, _ = peer.close()
    assert code == 0
    noise = stderr.read_bytes()
    assert len(noise) >= 2_000_000 and noise.count(b"child stderr noise") >= 100_000


# -- 5. the child cannot start or exits early ------------------------------------------


def run_proxy_cli(argv: list[str], env: dict[str, str], timeout_s: float = 20.0) -> Any:
    return subprocess.run(
        argv, stdin=subprocess.PIPE, capture_output=True, env=env, timeout=timeout_s
    )


def test_command_not_found_exits_127(
    ledger_server: ServerProcess, agent_name: str, env: dict[str, str], tmp_path: Path
) -> None:
    missing = str(tmp_path / "no-such-mcp-server")
    started = time.monotonic()
    done = run_proxy_cli(
        proxy_argv(ledger_server.url, ledger_server.api_key, agent_name, [missing, "--x"]), env
    )
    assert time.monotonic() - started < 15
    assert done.returncode == 127
    assert done.stdout == b""
    assert b"cannot start MCP server" in done.stderr and b"not found" in done.stderr


def test_command_not_executable_exits_126(
    ledger_server: ServerProcess, agent_name: str, env: dict[str, str], tmp_path: Path
) -> None:
    script = tmp_path / "server.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o644)
    done = run_proxy_cli(
        proxy_argv(ledger_server.url, ledger_server.api_key, agent_name, [str(script)]), env
    )
    assert done.returncode == 126
    assert done.stdout == b"" and b"permission denied" in done.stderr


def test_usage_errors_exit_2(env: dict[str, str]) -> None:
    base = [agentledger_executable(), "mcp-proxy"]
    no_command = run_proxy_cli([*base, "--agent", "a", "--api-key", "k"], env)
    assert no_command.returncode == 2 and b"Missing argument" in no_command.stderr
    no_agent = run_proxy_cli([*base, "--api-key", "k", "--", sys.executable], env)
    assert no_agent.returncode == 2 and b"--agent" in no_agent.stderr
    assert no_command.stdout == no_agent.stdout == b""


def test_child_exiting_early_ends_the_proxy_with_its_code(
    ledger_server: ServerProcess, agent_name: str, env: dict[str, str], tmp_path: Path
) -> None:
    """The child exits at once while the client keeps our stdin open: the proxy returns the
    child's exit code promptly and still logs the session."""
    child = [sys.executable, "-c", "import sys; sys.stderr.write('bye\\n'); sys.exit(3)"]
    stderr = tmp_path / "stderr.log"
    peer = Raw(proxy_argv(ledger_server.url, ledger_server.api_key, agent_name, child), env, stderr)
    started = time.monotonic()
    try:
        code = peer.proc.wait(timeout=15)  # our stdin stays open
    finally:
        peer.proc.kill()
    assert time.monotonic() - started < 15
    assert code == 3
    assert peer.stdout.read() == b""
    assert b"bye" in stderr.read_bytes()
    stored = stored_when(ledger_server, agent_name, ended)
    assert stored.one(v.SESSION_END)["data"]["stats"]["exit_code"] == 3
    assert stored.parent(stored.one(v.SESSION_END))["event"] == v.SESSION_START


def test_sigterm_is_forwarded_to_the_child(
    ledger_server: ServerProcess, agent_name: str, env: dict[str, str], tmp_path: Path
) -> None:
    peer = raw_proxy(ledger_server, agent_name, env, tmp_path)
    peer.initialize()
    peer.send(call(1, "never"))
    time.sleep(0.2)
    code, _ = peer.terminate()
    assert code == 128 + 15  # the child died of SIGTERM; the proxy exits like a shell would
    stored = stored_when(ledger_server, agent_name, ended)
    (outcome,) = stored.kids(stored.one(v.TOOL_CALL, tool="never"))
    assert outcome["data"]["type"] == "no_response"


def test_signal_after_the_child_exited_cuts_the_final_flush_short(
    agent_name: str, env: dict[str, str], tmp_path: Path
) -> None:
    """Ledger server down, no spill, a 30 s flush allowance: the host's SIGTERM (MCP hosts
    send one ~2 s after closing stdin) ends the proxy at once with the child's code."""
    dead = f"http://127.0.0.1:{free_port()}"
    options = ("--no-spill", "--flush-timeout", "30")
    argv = proxy_argv(dead, "dev-key-x", agent_name, RAW_CHILD, *options)
    peer = Raw(argv, env, tmp_path / "stderr.log")
    peer.initialize()
    peer.send(call(1, "echo", {"x": 1}))
    assert peer.recv()["id"] == 1
    peer.stdin.close()
    time.sleep(1.0)  # the child exits on stdin EOF; the proxy is now flushing in vain
    assert peer.proc.poll() is None
    code, seconds = peer.terminate()
    assert seconds < 5
    assert code == 0


# -- protocol edges the SDK client never sends -----------------------------------------


def test_batches_server_requests_cancellation_and_open_calls(
    ledger_server: ServerProcess, agent_name: str, env: dict[str, str], tmp_path: Path
) -> None:
    peer = raw_proxy(ledger_server, agent_name, env, tmp_path)
    assert peer.initialize()["result"]["serverInfo"]["name"] == "raw-child"
    # A batch: three calls, one array of answers.
    peer.send([call(10, "echo", {"k": 1}), call(11, "rpc_error"), call(12, "needs_input")])
    assert [a["id"] for a in peer.recv()] == [10, 11, 12]
    # The server asks the client something with the id of the open call; the client's answer
    # travels up with that id and must not close the call.
    peer.send(call(20, "ask", {"q": "?"}))
    request = peer.recv()
    assert request == {"jsonrpc": "2.0", "id": 20, "method": "sampling/createMessage"}
    peer.send({"jsonrpc": "2.0", "id": 20, "result": {"answer": 42}})
    assert peer.recv()["id"] == 20
    # Id 40 and id "40" are different calls.
    peer.send(call(40, "never"))
    peer.send(call("40", "echo", {"which": "string id"}))
    assert peer.recv()["id"] == "40"
    peer.send(
        {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": 40, "reason": "user gave up"},
        }
    )
    peer.send(call(50, "never"))  # still open when the child exits
    code, _, rest = peer.close()
    assert code == 0 and rest == b""

    stored = stored_when(ledger_server, agent_name, ended)
    root = stored.one(v.SESSION_START)
    assert root["data"]["server"] == {"name": "raw-child", "version": "0.0.1"}

    def outcome(call_id: str) -> dict[str, Any]:
        (c,) = [e for e in stored.of(v.TOOL_CALL) if e["data"]["call_id"] == call_id]
        assert stored.parent(c) is root
        (kid,) = stored.kids(c)
        assert kid["data"]["call_id"] == call_id
        return kid

    echo = outcome("10")
    assert echo["event"] == v.TOOL_RESULT and echo["data"]["result"] == {"k": 1}
    rpc = outcome("11")
    assert rpc["event"] == v.TOOL_ERROR
    assert rpc["data"] | {"duration_ms": 0} == {
        "tool": "rpc_error",
        "error": "no way",
        "type": "jsonrpc_error",
        "code": -32001,
        "call_id": "11",
        "duration_ms": 0,
    }
    needs = outcome("12")
    assert needs["event"] == v.TOOL_RESULT and needs["data"]["status"] == "input_required"
    assert needs["data"]["result"]["requestState"] == "state-1"
    asked = outcome("20")
    assert asked["event"] == v.TOOL_RESULT
    assert orjson.loads(asked["data"]["result"][0]["text"]) == {"answer": 42}
    ints = [e for e in stored.of(v.TOOL_CALL) if e["data"]["call_id"] == "40"]
    assert sorted(e["data"]["tool"] for e in ints) == ["echo", "never"]
    for c in ints:
        (kid,) = stored.kids(c)
        if c["data"]["tool"] == "echo":
            assert kid["data"]["result"] == {"which": "string id"}
        else:
            assert kid["data"]["type"] == "cancelled" and kid["data"]["error"] == "user gave up"
    open_call = stored.one(v.TOOL_CALL, tool="never", call_id="50")
    (late,) = stored.kids(open_call)
    assert late["data"]["type"] == "no_response"
    stats = stored.one(v.SESSION_END)["data"]["stats"]
    assert stats["calls"] == 7 and stats["errors"] == 3 and stats["exit_code"] == 0


# -- logging-side limits never touch forwarding (public API, in process) ---------------


@pytest.fixture
def in_process(
    ledger_server: ServerProcess, agent_name: str, tmp_path: Path
) -> Iterator[Callable[..., tuple[McpProxy, bytes, Ledger]]]:
    """Run :class:`McpProxy` in a thread on pipes; send lines, return (proxy, output)."""
    ledgers: list[Ledger] = []

    def run(lines: list[Any], **options: Any) -> tuple[McpProxy, bytes, Ledger]:
        ledger = Ledger(
            url=ledger_server.url, api_key=ledger_server.api_key, agent=agent_name, spill_dir=None
        )
        ledgers.append(ledger)
        proxy = McpProxy(RAW_CHILD, ledger, **options)
        up_r, up_w = os.pipe()
        down_r, down_w = os.pipe()
        codes: list[int] = []
        with open(tmp_path / "stderr.log", "ab") as err:
            worker = threading.Thread(target=lambda: codes.append(proxy.run(up_r, down_w, err)))
            worker.start()
            out: list[bytes] = []
            with os.fdopen(down_r, "rb") as from_proxy:
                reader = threading.Thread(target=lambda: out.append(from_proxy.read()))
                reader.start()
                with os.fdopen(up_w, "wb") as to_proxy:
                    for line in lines:
                        to_proxy.write(orjson.dumps(line) + b"\n")
                worker.join(30)
                os.close(down_w)
                reader.join(30)
        os.close(up_r)
        assert codes == [0]
        return proxy, out[0], ledger

    yield run
    for ledger in ledgers:
        ledger.close(timeout_s=5)


def test_full_log_queue_and_long_lines_are_forwarded_not_logged(
    in_process: Callable[..., tuple[McpProxy, bytes, Ledger]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    lines = [call(i, "echo", {"i": i, "pad": "p" * 300}) for i in range(1, 21)]
    caplog.set_level(logging.WARNING, logger="agentledger")
    proxy, out, _ = in_process(lines, max_log_queue_bytes=1)  # every chunk goes unlogged
    assert [orjson.loads(x)["id"] for x in out.splitlines()] == list(range(1, 21))
    assert proxy.stats.unlogged_chunks >= 2 and proxy.stats.calls == 0
    warnings = [r for r in caplog.records if "fell behind" in r.getMessage()]
    assert len(warnings) == 1  # once per run

    proxy, out, _ = in_process(lines, max_line_bytes=200)  # every line is longer
    assert [orjson.loads(x)["id"] for x in out.splitlines()] == list(range(1, 21))
    assert proxy.stats.calls == 0 and proxy.stats.unlogged_lines == 40


def test_pending_calls_are_capped(
    in_process: Callable[..., tuple[McpProxy, bytes, Ledger]],
    ledger_server: ServerProcess,
    agent_name: str,
) -> None:
    lines = [call(i, "never") for i in range(1, 6)]
    proxy, out, ledger = in_process(lines, max_pending_calls=2, session_id="capped")
    assert out == b""
    assert ledger.flush(timeout_s=20).complete
    stored = Stored(read_events(ledger_server.url, ledger_server.headers(), agent_name))
    kinds = {
        c["data"]["call_id"]: stored.kids(c)[0]["data"]["type"] for c in stored.of(v.TOOL_CALL)
    }
    assert kinds == {
        "1": "evicted",
        "2": "evicted",
        "3": "evicted",
        "4": "no_response",
        "5": "no_response",
    }
    assert proxy.stats.errors == 5 and proxy.session_id == "capped"
    with pytest.raises(RuntimeError, match="already called"):
        proxy.run()


# -- what orjson cannot read, last lines, server info ----------------------------------


def test_values_orjson_cannot_read_are_logged_exactly(
    ledger_server: ServerProcess, agent_name: str, env: dict[str, str], tmp_path: Path
) -> None:
    """Ids beyond 64 bits, fractional ids, and a lone surrogate escape (what JavaScript's
    ``JSON.stringify`` writes for a string cut inside an emoji): every call is paired with its
    own result, and the values are stored as U+FFFD and decimal strings."""
    peer = raw_proxy(ledger_server, agent_name, env, tmp_path)
    peer.initialize()
    big = 2**70
    ids: list[Any] = [big, str(big), big + 1, 2.5, -(2**63) - 1]
    args = {"text": "cut \ud83d, whole \U0001f600", "big": big, "neg": -(2**64)}
    for n, ident in enumerate(ids):
        peer.stdin.write(json.dumps(call(ident, "echo", {**args, "n": n})).encode() + b"\n")
        peer.stdin.flush()
        assert json.loads(peer.recv_line())["id"] == ident
    assert peer.close()[0] == 0

    stored = stored_when(ledger_server, agent_name, ended)
    calls = stored.of(v.TOOL_CALL)
    assert [c["data"]["call_id"] for c in calls] == [str(i) for i in ids]
    for n, tool_call in enumerate(calls):
        expected = {
            "text": "cut \ufffd, whole \U0001f600",
            "big": str(big),
            "neg": str(-(2**64)),
            "n": n,
        }
        assert tool_call["data"]["args"] == expected
        (outcome,) = stored.kids(tool_call)
        assert outcome["event"] == v.TOOL_RESULT, outcome["data"]
        assert outcome["data"]["result"] == expected
    assert stored.one(v.SESSION_END)["data"]["stats"]["errors"] == 0


def test_last_message_without_newline_is_logged(
    ledger_server: ServerProcess, agent_name: str, env: dict[str, str], tmp_path: Path
) -> None:
    """Client -> server: the last request lacks its newline (the child reads it at EOF);
    server -> client: the child's last answer lacks its newline and the child exits."""
    argv = proxy_argv(ledger_server.url, ledger_server.api_key, agent_name, RAW_CHILD)
    up = Raw(argv, env, tmp_path / "stderr.log")
    up.initialize()
    up.stdin.write(orjson.dumps(call(1, "echo", {"k": 1})))  # no newline, then EOF
    code, _, rest = up.close()
    assert code == 0 and orjson.loads(rest)["result"]["structuredContent"] == {"k": 1}

    down = Raw(argv, env, tmp_path / "stderr.log")
    down.initialize()
    down.send(call(2, "bye", {"newline": False}))
    line = down.recv_line()
    assert not line.endswith(b"\n") and orjson.loads(line)["id"] == 2
    assert down.close()[0] == 0

    stored = stored_when(ledger_server, agent_name, lambda s: len(s.of(v.SESSION_END)) == 2)
    (echo,) = stored.kids(stored.one(v.TOOL_CALL, tool="echo"))
    assert echo["event"] == v.TOOL_RESULT and echo["data"]["result"] == {"k": 1}
    (bye,) = stored.kids(stored.one(v.TOOL_CALL, tool="bye"))
    assert bye["event"] == v.TOOL_RESULT and bye["data"]["result"] == {"bye": True}


def test_server_info_of_a_session_without_calls(
    ledger_server: ServerProcess, agent_name: str, env: dict[str, str], tmp_path: Path
) -> None:
    """No tools/call at all: session_start is logged at the end, with the proxy's start time
    and the server learnt from initialize."""
    argv = proxy_argv(ledger_server.url, ledger_server.api_key, agent_name, RAW_CHILD)
    peer = Raw(argv, env, tmp_path / "stderr.log")
    peer.initialize()
    answered = time.time()  # the proxy started before
    time.sleep(0.3)
    assert peer.close()[0] == 0
    stored = stored_when(ledger_server, agent_name, ended)
    start, end = stored.one(v.SESSION_START), stored.one(v.SESSION_END)
    assert start["data"]["server"] == {"name": "raw-child", "version": "0.0.1"}
    assert "server" not in end["data"]
    assert stored.parent(end) is start
    assert _epoch(start["timestamp"]) < answered < answered + 0.3 < _epoch(end["timestamp"])


def test_server_info_learnt_after_the_first_call_goes_to_session_end(
    ledger_server: ServerProcess, agent_name: str, env: dict[str, str], tmp_path: Path
) -> None:
    """No handshake (2026-07-28 lets a client call at once); the server's name arrives in the
    first tool result's ``_meta``, after session_start was logged."""
    argv = proxy_argv(ledger_server.url, ledger_server.api_key, agent_name, RAW_CHILD)
    peer = Raw(argv, env, tmp_path / "stderr.log")
    peer.send(call(1, "stamped"))
    assert peer.recv()["result"]["_meta"]
    assert peer.close()[0] == 0
    stored = stored_when(ledger_server, agent_name, ended)
    assert "server" not in stored.one(v.SESSION_START)["data"]
    end = stored.one(v.SESSION_END)
    assert end["data"]["server"] == {"name": "raw-child", "version": "0.0.1"}


def _epoch(timestamp: str) -> float:
    return dt.datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()


# -- a grandchild holds the child's stdout ---------------------------------------------


@pytest.fixture
def grandchild(tmp_path: Path) -> Iterator[list[str]]:
    """The raw child that leaves a grandchild holding its stdout and stderr for 30 s."""
    pid_file = tmp_path / "grandchild.pid"
    yield [*RAW_CHILD, "--grandchild-s", "30", "--grandchild-pid-file", str(pid_file)]
    if pid_file.exists():
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)


def test_stdin_closed_ends_the_run_when_a_grandchild_holds_stdout(
    ledger_server: ServerProcess,
    agent_name: str,
    env: dict[str, str],
    tmp_path: Path,
    grandchild: list[str],
) -> None:
    """The host closes our stdin, the child exits, its grandchild keeps the pipe: the proxy
    ends by itself once the pipe stayed quiet (no signal needed) and logs session_end."""
    argv = proxy_argv(ledger_server.url, ledger_server.api_key, agent_name, grandchild)
    peer = Raw(argv, env, tmp_path / "stderr.log")
    peer.initialize()
    peer.send(call(1, "echo", {"a": 1}))
    assert peer.recv()["id"] == 1
    code, seconds, rest = peer.close(timeout_s=15)
    assert code == 0 and rest == b""
    # CHILD_EXIT_GRACE_S (0.5 s) + the stderr join (0.5 s) + the flush, plus start-up noise
    assert seconds < 5.0, seconds
    stored = stored_when(ledger_server, agent_name, ended, timeout_s=5.0)
    (outcome,) = stored.kids(stored.one(v.TOOL_CALL))
    assert outcome["event"] == v.TOOL_RESULT


def test_signal_ends_the_run_when_the_child_exited_and_a_grandchild_holds_stdout(
    ledger_server: ServerProcess,
    agent_name: str,
    env: dict[str, str],
    tmp_path: Path,
    grandchild: list[str],
) -> None:
    """The child exits while our stdin stays open: the grandchild might be the real server
    (a wrapper script), so the proxy stays; the host's SIGTERM then ends it promptly, and
    session_end still reaches the ledger."""
    argv = proxy_argv(ledger_server.url, ledger_server.api_key, agent_name, grandchild)
    peer = Raw(argv, env, tmp_path / "stderr.log")
    peer.initialize()
    peer.send(call(1, "bye", {"newline": True}))
    assert peer.recv()["result"]["structuredContent"] == {"bye": True}
    time.sleep(1.5)  # the child has exited; our stdin is open
    assert peer.proc.poll() is None
    code, seconds = peer.terminate(timeout_s=10)
    assert seconds < 2.0
    assert code == 0
    stored = stored_when(ledger_server, agent_name, ended, timeout_s=5.0)
    (outcome,) = stored.kids(stored.one(v.TOOL_CALL, tool="bye"))
    assert outcome["event"] == v.TOOL_RESULT


# -- undelivered events at exit --------------------------------------------------------


@pytest.mark.parametrize("spill", [True, False], ids=["spill", "no-spill"])
def test_undelivered_events_are_reported_at_exit(
    spill: bool, agent_name: str, env: dict[str, str], tmp_path: Path
) -> None:
    """Ledger server down: one stderr line says how many events were not delivered and where
    they wait (the spill directory, which then holds them all)."""
    dead = f"http://127.0.0.1:{free_port()}"
    options = ("--flush-timeout", "0.3") + (() if spill else ("--no-spill",))
    stderr = tmp_path / "stderr.log"
    peer = Raw(proxy_argv(dead, "dev-key-x", agent_name, RAW_CHILD, *options), env, stderr)
    peer.initialize()
    peer.send(call(1, "echo", {"x": 1}))
    assert peer.recv()["id"] == 1
    assert peer.close()[0] == 0
    lines = [x for x in stderr.read_text().splitlines() if "not delivered" in x]
    # session_start, tool_call, tool_result, session_end
    spill_dir = tmp_path / "spill"
    if spill:
        assert lines == [
            f"agentledger WARNING agentledger.mcp_proxy: agentledger mcp-proxy: "
            f"4 events not delivered to {dead} yet; they wait in the spill directory "
            f"{spill_dir} and are sent by the next agentledger client that uses it"
        ]
        written = b"".join(p.read_bytes() for p in spill_dir.rglob("*.ndjson"))
        assert len(written.splitlines()) == 4
    else:
        assert len(lines) == 1 and "4 events not delivered" in lines[0]
        assert "lost (no spill directory)" in lines[0]
        assert not spill_dir.exists() or not list(spill_dir.rglob("*.ndjson"))


# -- oversized lines: the calls they answer are closed truthfully ----------------------


class Piped:
    """:class:`McpProxy` run in a thread on pipes (for options the CLI does not have)."""

    def __init__(self, ledger: Ledger, child: list[str], stderr: Path, **options: Any) -> None:
        self.proxy = McpProxy(child, ledger, **options)
        up_r, self._up_w = os.pipe()
        self._down_r, down_w = os.pipe()
        self._fds = (up_r, down_w)
        self.codes: list[int] = []
        self._err = open(stderr, "ab")  # noqa: SIM115 - closed in close()
        self._worker = threading.Thread(
            target=lambda: self.codes.append(self.proxy.run(up_r, down_w, self._err))
        )
        self._worker.start()
        self._to = os.fdopen(self._up_w, "wb")
        self._from = os.fdopen(self._down_r, "rb")

    def send(self, message: Any) -> None:
        self._to.write(orjson.dumps(message) + b"\n")
        self._to.flush()

    def recv(self) -> Any:
        line = self._from.readline()
        assert line, "EOF from the proxy"
        self.last_line = line
        return orjson.loads(line)

    def close(self) -> int:
        self._to.close()
        self._worker.join(30)
        for fd in self._fds:
            os.close(fd)
        self._from.close()
        self._err.close()
        assert len(self.codes) == 1
        return self.codes[0]


def test_oversized_responses_close_their_calls_truthfully(
    ledger_server: ServerProcess, agent_name: str, tmp_path: Path
) -> None:
    """Responses over ``max_line_bytes`` are forwarded, not parsed: one whose id stands first
    or last closes its call as ``too_large``; an oversized server request with the call's id
    closes nothing; one whose id cannot be found leaves the calls made before it
    ``outcome_unknown`` (not ``no_response``) at the end."""
    size = 10_000
    with Ledger(
        url=ledger_server.url, api_key=ledger_server.api_key, agent=agent_name, spill_dir=None
    ) as ledger:
        peer = Piped(ledger, RAW_CHILD, tmp_path / "stderr.log", max_line_bytes=4096)
        peer.send(call(1, "pad", {"size": size, "id_at": "first"}))
        assert peer.recv()["id"] == 1
        first_bytes = len(peer.last_line) - 1  # without the newline
        peer.send(call(2, "pad", {"size": size, "id_at": "last"}))
        assert peer.recv()["id"] == 2
        peer.send(call(3, "ask_big", {"size": size}))
        assert peer.recv()["method"] == "sampling/createMessage"
        assert peer.recv()["result"]["structuredContent"] == {"ok": True}
        peer.send(call(4, "never"))
        peer.send(call(5, "pad", {"size": size, "id_at": "middle"}))
        assert peer.recv()["id"] == 5
        time.sleep(0.2)  # the logging thread reads that answer before the next call
        peer.send(call(6, "never"))
        assert peer.close() == 0
        assert ledger.flush(timeout_s=20).complete
    stats = peer.proxy.stats
    assert stats.unlogged_lines == 4 and stats.unlogged_chunks == 0

    stored = Stored(read_events(ledger_server.url, ledger_server.headers(), agent_name))
    outcomes = {c["data"]["call_id"]: stored.kids(c)[0] for c in stored.of(v.TOOL_CALL)}
    for too_large in ("1", "2"):
        data = outcomes[too_large]["data"]
        assert outcomes[too_large]["event"] == v.TOOL_RESULT
        assert data["status"] == "too_large" and data["result"] is None
        assert data["bytes"] > size
    assert outcomes["1"]["data"]["bytes"] == first_bytes
    assert outcomes["3"]["data"]["status"] == "ok"
    assert outcomes["3"]["data"]["result"] == {"ok": True}
    for unknown in ("4", "5"):
        assert outcomes[unknown]["data"]["type"] == "outcome_unknown"
        assert "whether it was answered is unknown" in outcomes[unknown]["data"]["error"]
    assert outcomes["6"]["data"]["type"] == "no_response"
