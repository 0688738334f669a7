"""MCP servers the proxy tests run as the proxy's child (a script, run by path).

``python proxy_child.py sdk [--stderr-bytes N]``: a server written with the ``mcp`` SDK
(``MCPServer``), tools:

* ``add(a, b)`` -> ``{"sum": a + b}`` (structured result)
* ``fail(message)`` raises ``ToolError(message)`` (an ``isError`` result)
* ``slow(seconds, tag)`` sleeps, then returns ``tag`` (concurrent calls)
* ``big(size, text)`` returns ``text`` repeated to ``size`` characters (large results)

``--stderr-bytes N`` writes N bytes to stderr before serving (the proxy must drain them).

``python proxy_child.py raw``: a hand-written JSON-RPC server without the SDK, for the
protocol edges the SDK client never sends. It answers ``initialize``; ``tools/call`` by tool
name:

* ``echo`` -> ``structuredContent`` = the arguments
* ``rpc_error`` -> a JSON-RPC error (code -32001)
* ``ask`` -> first sends the client a ``sampling/createMessage`` request that reuses the
  call's id, waits for the client's answer, then answers the call with that answer
* ``needs_input`` -> ``resultType: "input_required"``
* ``never`` -> no answer
* ``pad(size, id_at)`` -> a text of ``size`` characters, the response's members in the order
  ``id_at`` names: ``"first"`` (``jsonrpc, id, result``, as the SDKs write), ``"last"``
  (``jsonrpc, result, id``) or ``"middle"`` (``result, id, jsonrpc``)
* ``ask_big(size)`` -> first sends the client a request of ``size`` padding bytes that reuses
  the call's id (not waiting for its answer), then answers the call with ``{"ok": true}``
* ``stamped`` -> ``structuredContent`` ``{}`` and the server's name and version in the
  result's ``_meta`` (as 2026-07-28 servers stamp every result)
* ``bye(newline)`` -> answers ``{"bye": true}``, with a trailing newline only when ``newline``
  is true, and exits at once

Replies are written as UTF-8; one holding a lone surrogate (which UTF-8 cannot encode) is
written with ``\\uXXXX`` escapes, as JavaScript's ``JSON.stringify`` does. Numbers are echoed
as the stdlib reads them (integers of any size exactly).

``--grandchild-s S --grandchild-pid-file PATH`` (raw mode): first fork a process that keeps
the child's stdout and stderr open for S seconds after the child exited (its pid in PATH).

A JSON array (batch) is answered with an array. Notifications get no answer.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

SERVER_INFO = {"name": "raw-child", "version": "0.0.1"}


def run_sdk(stderr_bytes: int) -> None:
    import anyio
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    server = MCPServer("proxy-child", version="9.8.7")

    @server.tool()
    def add(a: int, b: int) -> dict[str, int]:
        """Add two integers."""
        return {"sum": a + b}

    @server.tool()
    def fail(message: str) -> str:
        """Always fails with ``message``."""
        raise ToolError(message)

    @server.tool()
    async def slow(seconds: float, tag: str) -> str:
        """Sleep, then return ``tag``."""
        await anyio.sleep(seconds)
        return tag

    @server.tool()
    def big(size: int, text: str) -> str:
        """``text`` repeated to ``size`` characters."""
        return (text * (size // max(1, len(text)) + 1))[:size]

    if stderr_bytes:
        line = b"child stderr noise " * 50 + b"\n"
        written = 0
        while written < stderr_bytes:
            sys.stderr.buffer.write(line)
            written += len(line)
        sys.stderr.buffer.flush()
    server.run()


def _answer(message: Any, out: Any, stdin: Any) -> Any:
    if not isinstance(message, dict) or "id" not in message or "method" not in message:
        return None  # a notification or a response
    ident = message["id"]
    method = message["method"]
    if method == "initialize":
        return {
            "jsonrpc": "2.0",
            "id": ident,
            "result": {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": SERVER_INFO,
            },
        }
    if method != "tools/call":
        return {"jsonrpc": "2.0", "id": ident, "result": {}}
    params = message.get("params") or {}
    name = params.get("name")
    args = params.get("arguments") or {}
    if name == "echo":
        text = json.dumps(args)
        return {
            "jsonrpc": "2.0",
            "id": ident,
            "result": {"content": [{"type": "text", "text": text}], "structuredContent": args},
        }
    if name == "rpc_error":
        return {"jsonrpc": "2.0", "id": ident, "error": {"code": -32001, "message": "no way"}}
    if name == "needs_input":
        return {
            "jsonrpc": "2.0",
            "id": ident,
            "result": {"resultType": "input_required", "requestState": "state-1"},
        }
    if name == "never":
        return None
    if name == "pad":
        content = [{"type": "text", "text": "x" * int(args["size"])}]
        at = args.get("id_at", "first")
        if at == "first":
            return {"jsonrpc": "2.0", "id": ident, "result": {"content": content}}
        if at == "last":
            return {"jsonrpc": "2.0", "result": {"content": content}, "id": ident}
        return {"result": {"content": content}, "id": ident, "jsonrpc": "2.0"}
    if name == "ask_big":
        request = {
            "jsonrpc": "2.0",
            "id": ident,
            "method": "sampling/createMessage",
            "params": {"pad": "p" * int(args["size"])},
        }
        _write(out, request)
        return {"jsonrpc": "2.0", "id": ident, "result": {"structuredContent": {"ok": True}}}
    if name == "stamped":
        meta = {"io.modelcontextprotocol/serverInfo": SERVER_INFO}
        return {"jsonrpc": "2.0", "id": ident, "result": {"structuredContent": {}, "_meta": meta}}
    if name == "bye":
        reply = {"jsonrpc": "2.0", "id": ident, "result": {"structuredContent": {"bye": True}}}
        _write(out, reply, newline=bool(args.get("newline")))
        os._exit(0)
    if name == "ask":
        request = {"jsonrpc": "2.0", "id": ident, "method": "sampling/createMessage"}
        out.write(json.dumps(request).encode() + b"\n")
        out.flush()
        reply = json.loads(stdin.readline())
        answer = reply.get("result")
        return {
            "jsonrpc": "2.0",
            "id": ident,
            "result": {"content": [{"type": "text", "text": json.dumps(answer)}]},
        }
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": -32602, "message": f"{name}?"}}


def _write(out: Any, reply: Any, *, newline: bool = True) -> None:
    try:
        data = json.dumps(reply, ensure_ascii=False).encode()
    except UnicodeEncodeError:  # a lone surrogate: escaped, as JSON.stringify writes it
        data = json.dumps(reply).encode()
    out.write(data + b"\n" if newline else data)
    out.flush()


def _fork_grandchild(seconds: float, pid_file: str) -> None:
    """A process that holds our stdout and stderr for ``seconds`` after we exit."""
    pid = os.fork()
    if pid == 0:
        os.setsid()
        time.sleep(seconds)
        os._exit(0)
    with open(pid_file, "w") as f:
        f.write(str(pid))


def run_raw() -> None:
    stdin = sys.stdin.buffer
    out = sys.stdout.buffer
    for line in stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        if isinstance(message, list):
            answers = [a for a in (_answer(m, out, stdin) for m in message) if a is not None]
            reply: Any = answers or None
        else:
            reply = _answer(message, out, stdin)
        if reply is not None:
            _write(out, reply)


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "sdk"
    if mode == "raw":
        if "--grandchild-s" in sys.argv:
            seconds = float(sys.argv[sys.argv.index("--grandchild-s") + 1])
            _fork_grandchild(seconds, sys.argv[sys.argv.index("--grandchild-pid-file") + 1])
        run_raw()
    else:
        count = 0
        if "--stderr-bytes" in sys.argv:
            count = int(sys.argv[sys.argv.index("--stderr-bytes") + 1])
        run_sdk(count)
