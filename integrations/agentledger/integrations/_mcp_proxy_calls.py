"""The logging side of ``agentledger mcp-proxy``: frame each direction's bytes into JSON-RPC
messages, pair ``tools/call`` requests with their responses by id, and log the tool events.

Runs on the proxy's one logging thread (:mod:`agentledger.integrations._mcp_proxy` owns the
process, the pipes and the forwarding threads); nothing here is on the forward path. The
mapping of JSON-RPC traffic to events is tabled in that module's docstring.
"""

from __future__ import annotations

import collections
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import orjson

from agentledger.client import EventRef, Ledger
from agentledger.client import vocabulary as v
from agentledger.client._guard import capture_internal_exceptions

__all__ = ["DOWN", "UP", "CallLogger", "ProxyStats"]

logger = logging.getLogger("agentledger.integrations.mcp_proxy")

UP: Final = 0  # client -> server
DOWN: Final = 1  # server -> client
_SERVER_INFO_META: Final = "io.modelcontextprotocol/serverInfo"


@dataclass
class ProxyStats:
    """Counters of one proxy run (read them after :meth:`McpProxy.run`).

    Attributes:
        calls: ``tool_call`` events logged.
        results: ``tool_result`` events logged.
        errors: ``tool_error`` events logged.
        unlogged_chunks: chunks forwarded but not logged (the hand-off queue was full).
        unlogged_lines: message lines forwarded but not logged (longer than the line cap).
        exit_code: the child's exit code (``None`` while it runs).
    """

    calls: int = 0
    results: int = 0
    errors: int = 0
    unlogged_chunks: int = 0
    unlogged_lines: int = 0
    exit_code: int | None = None


class _Framer:
    """Splits one direction's byte stream into newline-terminated lines (logging side)."""

    def __init__(self, max_line_bytes: int) -> None:
        self._max = max_line_bytes
        self._buf = bytearray()
        self._skipping = False  # inside a line that is too long or was cut by a lost chunk
        self.skipped = 0

    def lines(self, chunk: bytes, gap: bool) -> list[bytes]:
        """Complete lines (without the newline) ending in ``chunk``.

        Args:
            chunk: the next bytes of the stream.
            gap: bytes were lost just before ``chunk``: the line they cut is dropped.
        """
        if gap:
            self._buf.clear()
            self._skipping = True
        out: list[bytes] = []
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            if self._skipping:
                self._skipping = False
            elif self._buf:
                self._buf += chunk[start:end]
                if len(self._buf) <= self._max:
                    out.append(bytes(self._buf))
                else:
                    self.skipped += 1
                self._buf.clear()
            elif end - start <= self._max:
                out.append(chunk[start:end])
            else:
                self.skipped += 1
            start = end + 1
        if start < len(chunk) and not self._skipping:
            if len(self._buf) + len(chunk) - start > self._max:
                self._buf.clear()
                self._skipping = True
                self.skipped += 1
            else:
                self._buf += chunk[start:]
        return out


def _id_key(value: Any) -> tuple[str, Any] | None:
    """Hashable key of a JSON-RPC id (``1`` and ``"1"`` differ), ``None`` when invalid."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    return (type(value).__name__, value)


@dataclass
class _Pending:
    ref: EventRef
    tool: str
    call_id: str
    started_ns: int  # monotonic


class CallLogger:
    """State of the logging thread: pairs tool calls with their outcomes and logs them."""

    def __init__(
        self,
        ledger: Ledger,
        session_id: str,
        command: Sequence[str],
        *,
        max_line_bytes: int,
        max_pending_calls: int,
        stats: ProxyStats,
    ) -> None:
        self._ledger = ledger
        self._session_id = session_id
        self._command = command
        self._started_wall_ns = time.time_ns()
        self._framers = (_Framer(max_line_bytes), _Framer(max_line_bytes))
        self._pending: collections.OrderedDict[tuple[str, Any], _Pending] = (
            collections.OrderedDict()
        )
        self._max_pending = max_pending_calls
        self._session: EventRef | None = None
        self._warned_drop = False
        self.stats = stats

    # -- input -------------------------------------------------------------------------

    def feed(self, direction: int, chunk: bytes, wall_ns: int, mono_ns: int, gap: bool) -> None:
        """Take one forwarded chunk; log the tool events of the lines it completes."""
        if gap:
            self._warn_drop()
        framer = self._framers[direction]
        lines = framer.lines(chunk, gap)
        self.stats.unlogged_lines = self._framers[0].skipped + self._framers[1].skipped
        for line in lines:
            with capture_internal_exceptions("mcp_proxy.message"):
                self._line(direction, line, wall_ns, mono_ns)

    def _warn_drop(self) -> None:
        if not self._warned_drop:
            self._warned_drop = True
            logger.warning(
                "agentledger mcp-proxy: the logging thread fell behind; some messages were "
                "forwarded but not logged (counted in session_end.stats.unlogged_chunks)"
            )

    def _line(self, direction: int, line: bytes, wall_ns: int, mono_ns: int) -> None:
        if not line.strip():
            return
        try:
            message = orjson.loads(line)
        except orjson.JSONDecodeError:
            return  # not JSON-RPC (some servers print banners): forwarded, not logged
        if isinstance(message, list):
            for element in message:
                self._message(direction, element, wall_ns, mono_ns)
        else:
            self._message(direction, message, wall_ns, mono_ns)

    def _message(self, direction: int, message: Any, wall_ns: int, mono_ns: int) -> None:
        if not isinstance(message, dict):
            return
        method = message.get("method")
        if direction == UP:
            if method == "tools/call" and "id" in message:
                self._call(message, wall_ns, mono_ns)
            elif method == "notifications/cancelled" and "id" not in message:
                self._cancelled(message, wall_ns, mono_ns)
            return
        if method is not None or "id" not in message:
            return  # a request or notification from the server, never a tool call's answer
        if self._session is None:
            self._start_session(message.get("result"))
        if "result" in message or "error" in message:
            self._response(message, wall_ns, mono_ns)

    # -- events ------------------------------------------------------------------------

    def _start_session(self, result: Any) -> EventRef:
        data: dict[str, Any] = {
            "framework": "mcp",
            "command": os.path.basename(self._command[0]),
            "args": len(self._command) - 1,
        }
        if isinstance(result, dict):
            info = result.get("serverInfo")  # initialize (handshake-era protocol)
            meta = result.get("_meta")
            if not isinstance(info, dict) and isinstance(meta, dict):
                info = meta.get(_SERVER_INFO_META)  # 2026-07-28 protocol: on every result
            if isinstance(info, dict):
                data["server"] = {k: info[k] for k in ("name", "version") if k in info}
        self._session = self._ledger.log(
            v.SESSION_START,
            data,
            session_id=self._session_id,
            timestamp=self._started_wall_ns / 1e9,
        )
        return self._session

    def _call(self, message: dict[str, Any], wall_ns: int, mono_ns: int) -> None:
        session = self._session or self._start_session(None)
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        name = params.get("name")
        tool = name if isinstance(name, str) else str(name)
        args = params.get("arguments")
        if args is None:
            args = {}
        elif not isinstance(args, dict):
            args = {"value": args}
        call_id = str(message["id"])
        ref = self._ledger.log(
            v.TOOL_CALL,
            {"tool": tool, "args": args, "call_id": call_id},
            session_id=self._session_id,
            parent_id=session,
            timestamp=wall_ns / 1e9,
        )
        self.stats.calls += 1
        key = _id_key(message["id"])
        if key is None:
            return  # an invalid id cannot be answered: the call stays without an outcome
        older = self._pending.pop(key, None)
        if older is not None:
            self._error(older, "superseded", "a new request reused this id", mono_ns)
        self._pending[key] = _Pending(ref, tool, call_id, mono_ns)
        if len(self._pending) > self._max_pending:
            _, oldest = self._pending.popitem(last=False)
            self._error(
                oldest,
                "evicted",
                f"no response among the last {self._max_pending} calls; no longer tracked",
                mono_ns,
            )

    def _response(self, message: dict[str, Any], wall_ns: int, mono_ns: int) -> None:
        key = _id_key(message.get("id"))
        pending = self._pending.pop(key, None) if key is not None else None
        if pending is None:
            return  # the answer to another request (initialize, tools/list...)
        if "error" in message:
            error = message["error"]
            error = error if isinstance(error, dict) else {"message": error}
            self._error(
                pending,
                "jsonrpc_error",
                str(error.get("message")),
                mono_ns,
                wall_ns=wall_ns,
                code=error.get("code"),
            )
            return
        result = message.get("result")
        if not isinstance(result, dict):
            self._result(pending, result, "ok", wall_ns, mono_ns)
        elif result.get("isError") is True:
            self._error(pending, "tool_error", _content_text(result), mono_ns, wall_ns=wall_ns)
        elif result.get("resultType", "complete") not in (None, "complete"):
            kept = {k: val for k, val in result.items() if k != "_meta"}
            self._result(pending, kept, str(result["resultType"]), wall_ns, mono_ns)
        elif "structuredContent" in result:
            self._result(pending, result["structuredContent"], "ok", wall_ns, mono_ns)
        else:
            self._result(pending, result.get("content"), "ok", wall_ns, mono_ns)

    def _cancelled(self, message: dict[str, Any], wall_ns: int, mono_ns: int) -> None:
        params = message.get("params")
        if not isinstance(params, dict):
            return
        key = _id_key(params.get("requestId"))
        pending = self._pending.pop(key, None) if key is not None else None
        if pending is not None:
            reason = params.get("reason")
            text = reason if isinstance(reason, str) and reason else "cancelled by the client"
            self._error(pending, "cancelled", text, mono_ns, wall_ns=wall_ns)

    def _result(
        self, pending: _Pending, result: Any, status: str, wall_ns: int, mono_ns: int
    ) -> None:
        self._ledger.log(
            v.TOOL_RESULT,
            {
                "tool": pending.tool,
                "result": result,
                "call_id": pending.call_id,
                "duration_ms": _ms(mono_ns - pending.started_ns),
                "status": status,
            },
            session_id=self._session_id,
            parent_id=pending.ref,
            timestamp=wall_ns / 1e9,
        )
        self.stats.results += 1

    def _error(
        self,
        pending: _Pending,
        kind: str,
        text: str,
        mono_ns: int,
        *,
        wall_ns: int | None = None,
        code: Any = None,
    ) -> None:
        data: dict[str, Any] = {
            "tool": pending.tool,
            "error": text,
            "type": kind,
            "call_id": pending.call_id,
            "duration_ms": _ms(mono_ns - pending.started_ns),
        }
        if code is not None:
            data["code"] = code
        self._ledger.log(
            v.TOOL_ERROR,
            data,
            session_id=self._session_id,
            parent_id=pending.ref,
            timestamp=None if wall_ns is None else wall_ns / 1e9,
        )
        self.stats.errors += 1

    def finish(self, exit_code: int) -> None:
        """Close the calls left open and log ``session_end`` (after the child exited)."""
        now = time.monotonic_ns()
        while self._pending:
            _, pending = self._pending.popitem(last=False)
            with capture_internal_exceptions("mcp_proxy.finish_call"):
                self._error(
                    pending,
                    "no_response",
                    f"the server exited (code {exit_code}) without answering",
                    now,
                )
        if self.stats.unlogged_chunks:
            self._warn_drop()
        session = self._session or self._start_session(None)
        self.stats.exit_code = exit_code
        stats = self.stats
        self._ledger.log(
            v.SESSION_END,
            {
                "stats": {
                    "calls": stats.calls,
                    "errors": stats.errors,
                    "exit_code": exit_code,
                    "unlogged_chunks": stats.unlogged_chunks,
                    "unlogged_lines": stats.unlogged_lines,
                }
            },
            session_id=self._session_id,
            parent_id=session,
        )


def _ms(duration_ns: int) -> float:
    return round(duration_ns / 1e6, 3)


def _content_text(result: dict[str, Any]) -> str:
    """The text of a tool result's ``content`` blocks (an error message), or its JSON."""
    content = result.get("content")
    if isinstance(content, list):
        texts = [
            block["text"]
            for block in content
            if isinstance(block, dict) and isinstance(block.get("text"), str)
        ]
        if texts:
            return "\n".join(texts)
    return orjson.dumps(content, default=str).decode()
