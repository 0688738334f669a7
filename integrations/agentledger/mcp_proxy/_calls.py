"""The logging side of ``agentledger mcp-proxy``: pair ``tools/call`` requests with their
responses by id and log the tool events (runs on the proxy's one logging thread, never on the
forward path). The mapping of traffic to events: ``docs/design/mcp.md``.
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

from agentledger.client import EventRef, Ledger, capture_internal_exceptions
from agentledger.client import vocabulary as v
from agentledger.mcp_proxy._framing import (
    NOT_JSON,
    Framer,
    LongLine,
    exact_loads,
    id_key,
    may_be_rounded,
    scan_long_line,
    server_info,
    storable,
)

__all__ = ["DOWN", "UP", "CallLogger", "ProxyStats"]

logger = logging.getLogger("agentledger.mcp_proxy")

UP: Final = 0  # client -> server
DOWN: Final = 1  # server -> client


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


# -- pairing and logging ---------------------------------------------------------------


@dataclass
class _Pending:
    ref: EventRef
    tool: str
    call_id: str
    started_ns: int  # monotonic
    unread_mark: int  # CallLogger._unread_down when the call was made


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
        self._framers = (Framer(max_line_bytes), Framer(max_line_bytes))
        self._pending: collections.OrderedDict[tuple[str, Any], _Pending] = (
            collections.OrderedDict()
        )
        self._max_pending = max_pending_calls
        self._session: EventRef | None = None
        self._server: dict[str, Any] | None = None
        self._server_in_start = False
        #: Server messages forwarded but not read (too long without a findable id, or lost
        #: chunks); a call made before one of them has an unknown outcome if never answered.
        self._unread_down = 0
        self._warned_drop = False
        self.stats = stats

    # -- input -------------------------------------------------------------------------

    def feed(self, direction: int, chunk: bytes, wall_ns: int, mono_ns: int, gap: bool) -> None:
        """Take one forwarded chunk (``b""``: the end of that direction's stream); log the
        tool events of the lines it completes."""
        if gap:
            self._warn_drop()
            if direction == DOWN:
                self._unread_down += 1
        framer = self._framers[direction]
        items = framer.lines(chunk, gap) if chunk else framer.end()
        self.stats.unlogged_lines = self._framers[0].skipped + self._framers[1].skipped
        for item in items:
            with capture_internal_exceptions("mcp_proxy.message"):
                if isinstance(item, bytes):
                    self._line(direction, item, wall_ns, mono_ns)
                else:
                    self._long_line(direction, item, wall_ns, mono_ns)

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
            exact = False
        else:
            exact = not may_be_rounded(message)
        if not exact:
            message = exact_loads(line)
            if message is NOT_JSON:
                return  # not JSON-RPC (some servers print banners): forwarded, not logged
        try:
            for element in message if isinstance(message, list) else (message,):
                if isinstance(element, dict):
                    plain = element if exact else storable(element)
                    self._message(direction, element, plain, wall_ns, mono_ns)
        except RecursionError:  # nested too deep to copy: read, but not logged
            if direction == DOWN:
                self._unread_down += 1

    def _message(
        self, direction: int, raw: dict[str, Any], message: dict[str, Any], wall: int, mono: int
    ) -> None:
        """One JSON-RPC message; ids are read from ``raw`` (exact), the rest from
        ``message`` (storable)."""
        method = message.get("method")
        if direction == UP:
            if method == "tools/call" and "id" in raw:
                self._call(message, raw["id"], wall, mono)
            elif method == "notifications/cancelled" and "id" not in raw:
                params = raw.get("params")
                if isinstance(params, dict):
                    self._cancelled(message, params.get("requestId"), wall, mono)
            return
        if method is not None or "id" not in raw:
            return  # a request or notification from the server, never a tool call's answer
        if self._server is None:
            self._server = server_info(message.get("result"))
        if "result" in message or "error" in message:
            self._response(message, raw["id"], wall, mono)

    def _long_line(self, direction: int, line: LongLine, wall_ns: int, mono_ns: int) -> None:
        """A line too long to parse: close the call it answers, if that can be told."""
        if direction == UP:
            return  # a request too long to log: forwarded, counted in unlogged_lines
        kind, ident_text = scan_long_line(line)
        if kind == "request":
            return
        key = None
        if ident_text is not None and kind == "response":
            key = id_key(exact_loads(ident_text))
        if key is None:
            self._unread_down += 1
            return
        pending = self._pending.pop(key, None)
        if pending is not None:
            self._result(pending, None, "too_large", wall_ns, mono_ns, size=line.size)

    # -- events ------------------------------------------------------------------------

    def _start_session(self) -> EventRef:
        data: dict[str, Any] = {
            "framework": "mcp",
            "command": os.path.basename(self._command[0]),
            "args": len(self._command) - 1,
        }
        if self._server is not None:
            data["server"] = self._server
            self._server_in_start = True
        self._session = self._ledger.log(
            v.SESSION_START,
            data,
            session_id=self._session_id,
            timestamp=self._started_wall_ns / 1e9,
        )
        return self._session

    def _call(self, message: dict[str, Any], ident: Any, wall_ns: int, mono_ns: int) -> None:
        session = self._session or self._start_session()
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        name = params.get("name")
        tool = name if isinstance(name, str) else str(name)
        args = params.get("arguments")
        if args is None:
            args = {}
        elif not isinstance(args, dict):
            args = {"value": args}
        call_id = str(ident)
        ref = self._ledger.log_tool(
            tool,
            args,
            call_id=call_id,
            session_id=self._session_id,
            parent_id=session,
            timestamp=wall_ns / 1e9,
        )
        self.stats.calls += 1
        key = id_key(ident)
        if key is None:
            return  # an invalid id cannot be answered: the call stays without an outcome
        older = self._pending.pop(key, None)
        if older is not None:
            self._error(older, "superseded", "a new request reused this id", mono_ns)
        self._pending[key] = _Pending(ref, tool, call_id, mono_ns, self._unread_down)
        if len(self._pending) > self._max_pending:
            _, oldest = self._pending.popitem(last=False)
            text = f"no response among the last {self._max_pending} calls; no longer tracked"
            unread = self._unread_down - oldest.unread_mark
            if unread:
                text += f" ({unread} server messages since it could not be read)"
            self._error(oldest, "evicted", text, mono_ns)

    def _response(self, message: dict[str, Any], ident: Any, wall_ns: int, mono_ns: int) -> None:
        key = id_key(ident)
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

    def _cancelled(
        self, message: dict[str, Any], request_id: Any, wall_ns: int, mono_ns: int
    ) -> None:
        key = id_key(request_id)
        pending = self._pending.pop(key, None) if key is not None else None
        if pending is not None:
            params = message.get("params")
            reason = params.get("reason") if isinstance(params, dict) else None
            text = reason if isinstance(reason, str) and reason else "cancelled by the client"
            self._error(pending, "cancelled", text, mono_ns, wall_ns=wall_ns)

    def _result(
        self,
        pending: _Pending,
        result: Any,
        status: str,
        wall_ns: int,
        mono_ns: int,
        *,
        size: int | None = None,
    ) -> None:
        self._ledger.log_tool_result(
            pending.tool,
            result,
            duration_ms=_ms(mono_ns - pending.started_ns),
            call_id=pending.call_id,
            session_id=self._session_id,
            parent_id=pending.ref,
            status=status,
            extra=None if size is None else {"bytes": size},
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
        self._ledger.log_tool_result(
            pending.tool,
            error=text,
            duration_ms=_ms(mono_ns - pending.started_ns),
            call_id=pending.call_id,
            session_id=self._session_id,
            parent_id=pending.ref,
            error_type=kind,
            extra=None if code is None else {"code": code},
            timestamp=None if wall_ns is None else wall_ns / 1e9,
        )
        self.stats.errors += 1

    def finish(self, exit_code: int) -> None:
        """Log what the streams' last unterminated lines hold, close the calls left open and
        log ``session_end`` (after the child exited)."""
        now = time.monotonic_ns()
        # The child has exited: an unterminated last line of its stdout is complete (the
        # stream's end may not have been seen when a grandchild holds the pipe open).
        self.feed(DOWN, b"", time.time_ns(), now, False)
        while self._pending:
            _, pending = self._pending.popitem(last=False)
            unread = self._unread_down - pending.unread_mark
            with capture_internal_exceptions("mcp_proxy.finish_call"):
                if unread:
                    text = (
                        f"the server exited (code {exit_code}); {unread} of its messages "
                        "after this call were forwarded but could not be read (too large, or "
                        "the logging fell behind), so whether it was answered is unknown"
                    )
                    self._error(pending, "outcome_unknown", text, now)
                else:
                    text = f"the server exited (code {exit_code}) without answering"
                    self._error(pending, "no_response", text, now)
        if self.stats.unlogged_chunks:
            self._warn_drop()
        session = self._session or self._start_session()
        self.stats.exit_code = exit_code
        stats = self.stats
        data: dict[str, Any] = {
            "stats": {
                "calls": stats.calls,
                "errors": stats.errors,
                "exit_code": exit_code,
                "unlogged_chunks": stats.unlogged_chunks,
                "unlogged_lines": stats.unlogged_lines,
            }
        }
        if self._server is not None and not self._server_in_start:
            data["server"] = self._server  # learnt only after the first call
        self._ledger.log(v.SESSION_END, data, session_id=self._session_id, parent_id=session)


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
