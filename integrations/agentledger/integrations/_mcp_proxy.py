"""MCP proxy: run an MCP server (stdio transport) as a child, pass its messages through
unchanged, and log each tool call and its outcome to the ledger.

Usage (the CLI command ``agentledger mcp-proxy`` calls :func:`run_proxy`)::

    agentledger mcp-proxy --agent A -- COMMAND ARGS...
    python -m agentledger.integrations._mcp_proxy --agent A -- COMMAND ARGS...

The proxy speaks raw JSON-RPC over stdio and imports no MCP SDK, so it works with only the
core client installed. The MCP host starts the proxy in place of the server; the proxy starts
``COMMAND ARGS...`` and sits between the two pipes.

Threads (the forward path never waits for logging)::

    client --stdin--> [up pump]   --write--> child stdin     (hand-off before the write)
    client <-stdout-- [down pump] <--read--- child stdout    (hand-off after the write)
    our stderr <----- [stderr pump] <------- child stderr    (drained, so the child never blocks)
                      [logger]  <- bounded hand-off queue: framing, JSON parse, ledger.log()

Each pump reads up to 64 KiB with ``os.read`` and writes the very bytes it read to the other
side at once (no line buffering, byte for byte). It then hands the chunk to the logging thread
with a cheap non-blocking put. The hand-off queue is bounded in bytes: when it is full the chunk
is not logged (counted, one warning on the ``agentledger`` logger) but always forwarded. A
message line longer than ``max_line_bytes`` is forwarded and not logged. Every step of the
logging thread is guarded, so a logging bug never stops forwarding, and ``ledger.log()`` never
blocks (the ledger server being down changes nothing on the forward path).

Events (vocabulary: ``agentledger.client.vocabulary``), one session per proxy run:

=========================================  ================================================
JSON-RPC traffic                           ledger event (parent)
=========================================  ================================================
proxy start (logged at the first response  ``session_start {framework: "mcp", command:
or call, so that the server's name and     basename of argv[0], args: number of arguments,
version are known)                         server: {name, version}}`` (a root)
client -> server request ``tools/call``    ``tool_call {tool, args, call_id: str(id)}``
with id X                                  (``session_start``)
server -> client response with id X:       ``tool_result {tool, result, call_id,
``result`` (``structuredContent`` if       duration_ms, status: "ok"}`` (its ``tool_call``)
present, else ``content``)
``result`` with ``isError: true``          ``tool_error {type: "tool_error", error: the
                                           content's text}`` (its ``tool_call``)
``result`` with another ``resultType``     ``tool_result {status: the resultType, result:
(``input_required``: the client retries    the result object}``; the retry is a new
with a new request)                        ``tool_call``
``error``                                  ``tool_error {type: "jsonrpc_error", error:
                                           message, code}``
client ``notifications/cancelled`` for X   ``tool_error {type: "cancelled"}``
no response when the child exits           ``tool_error {type: "no_response"}``
more than ``max_pending_calls`` open       the oldest gets ``tool_error {type: "evicted"}``
a second open request with the same id     the first gets ``tool_error {type: "superseded"}``
proxy end                                  ``session_end {stats: {calls, errors, exit_code,
                                           unlogged_chunks, unlogged_lines}}``
                                           (``session_start``)
=========================================  ================================================

``tool_error`` events also carry ``call_id`` and ``duration_ms`` (milliseconds, measured from
the moment the proxy read the request to the moment it read the response). JSON-RPC batches
(arrays) are handled element by element. Requests from the server to the client (sampling,
elicitation, ping) are not tool calls, and the client's responses to them are never matched
against tool calls (calls are paired only with responses travelling server -> client). The
arguments of the command are not logged (they may hold secrets), only their number.

Lifecycle: our stdin EOF closes the child's stdin; the child's stdout EOF ends the run: the
proxy waits for the child, logs what is left, flushes the ledger for at most
``flush_timeout_s`` and returns the child's exit code (``128 + N`` when signal N killed it).
SIGTERM and SIGINT sent to the proxy are forwarded to the child; one received after the child
exited cuts the final flush short. The child stays in the proxy's process group, so a signal
sent to the whole group (a terminal's Ctrl-C, an MCP host killing the group) reaches it
directly too, and it may then see that signal twice. The proxy never writes anything but the
child's bytes to stdout.

Errors::

    McpProxyError              base of what this module raises
    └── ChildStartError        the command could not be started; ``exit_code`` 127 (not
                               found) or 126 (not executable), as a shell would exit
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import logging
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import IO, Any, BinaryIO, Final

import orjson

from agentledger.client import ConfigurationError, EventRef, Ledger
from agentledger.client import vocabulary as v
from agentledger.client._guard import capture_internal_exceptions

__all__ = [
    "DEFAULT_FLUSH_TIMEOUT_S",
    "DEFAULT_MAX_LINE_BYTES",
    "DEFAULT_MAX_LOG_QUEUE_BYTES",
    "DEFAULT_MAX_PENDING_CALLS",
    "ChildStartError",
    "McpProxy",
    "McpProxyError",
    "ProxyStats",
    "main",
    "run_proxy",
]

logger = logging.getLogger("agentledger.integrations.mcp_proxy")

#: Bytes one ``os.read`` of a pipe takes at most.
READ_CHUNK_BYTES: Final = 65536
#: Longest message line (bytes) that is parsed and logged; longer lines are only forwarded.
DEFAULT_MAX_LINE_BYTES: Final = 16 * 1024 * 1024
#: Bytes the hand-off queue to the logging thread holds before chunks go unlogged.
DEFAULT_MAX_LOG_QUEUE_BYTES: Final = 32 * 1024 * 1024
#: Tool calls awaiting a response that are remembered; the oldest is evicted past it.
DEFAULT_MAX_PENDING_CALLS: Final = 10_000
#: Seconds the proxy spends flushing the ledger after the child exited. MCP hosts usually
#: wait about 2 s after closing the server's stdin before they signal it.
DEFAULT_FLUSH_TIMEOUT_S: Final = 1.0
#: Seconds the proxy waits for the logging thread to finish its backlog after the child exited.
DRAIN_TIMEOUT_S: Final = 5.0

_UP: Final = 0  # client -> server
_DOWN: Final = 1  # server -> client
_SERVER_INFO_META: Final = "io.modelcontextprotocol/serverInfo"


class McpProxyError(Exception):
    """Base of the errors this module raises."""


class ChildStartError(McpProxyError):
    """The MCP server command could not be started.

    Attributes:
        command: the command line that was tried.
        exit_code: what a shell would exit with: 127 (command not found) or 126 (found but
            not executable, or another start error).
        reason: short human-readable cause.
    """

    def __init__(self, command: Sequence[str], exit_code: int, reason: str) -> None:
        self.command = list(command)
        self.exit_code = exit_code
        self.reason = reason
        super().__init__(f"cannot start MCP server {self.command[0]!r}: {reason}")


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


class _CallLogger:
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
        if direction == _UP:
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


def _write_all(fd: int, data: bytes) -> bool:
    """Write every byte of ``data`` to ``fd``; ``False`` when the other end is gone."""
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except OSError:  # BrokenPipeError, EBADF: the reader went away
            return False
        view = view[written:]
    return True


_End = object()


class McpProxy:
    """Run an MCP server command as a child and proxy stdio between it and our client.

    Args:
        command: the server's argv (``["npx", "-y", "some-mcp-server"]``); at least one item.
        ledger: where events are logged (its ``agent`` names the agent). The proxy flushes it
            at the end but does not close it.
        session_id: session of every event (default ``mcp-proxy-<uuid4 hex>``).
        env: the child's environment (default: ours).
        cwd: the child's working directory (default: ours).
        flush_timeout_s: longest time spent flushing the ledger after the child exited
            (seconds).
        max_line_bytes: longest message line that is logged (bytes); longer ones are only
            forwarded.
        max_log_queue_bytes: bytes of forwarded chunks waiting for the logging thread before
            further chunks go unlogged (never unforwarded).
        max_pending_calls: open tool calls remembered for pairing.
        forward_signals: forward SIGTERM and SIGINT to the child (only when :meth:`run` is
            called in the main thread).

    Raises:
        ValueError: ``command`` is empty or a limit is not positive.
    """

    def __init__(
        self,
        command: Sequence[str],
        ledger: Ledger,
        *,
        session_id: str | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        flush_timeout_s: float = DEFAULT_FLUSH_TIMEOUT_S,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        max_log_queue_bytes: int = DEFAULT_MAX_LOG_QUEUE_BYTES,
        max_pending_calls: int = DEFAULT_MAX_PENDING_CALLS,
        forward_signals: bool = True,
    ) -> None:
        if not command:
            raise ValueError("the MCP server command is empty")
        if min(max_line_bytes, max_log_queue_bytes, max_pending_calls) <= 0:
            raise ValueError(
                "max_line_bytes, max_log_queue_bytes and max_pending_calls must be > 0"
            )
        self.command = [str(part) for part in command]
        self.ledger = ledger
        self.session_id = session_id or f"mcp-proxy-{uuid.uuid4().hex}"
        self.env = None if env is None else dict(env)
        self.cwd = cwd
        self.flush_timeout_s = flush_timeout_s
        self.max_line_bytes = max_line_bytes
        self.max_log_queue_bytes = max_log_queue_bytes
        self.max_pending_calls = max_pending_calls
        self.forward_signals = forward_signals
        #: Counters of the last :meth:`run`.
        self.stats = ProxyStats()
        self._proc: subprocess.Popen[bytes] | None = None
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._queue_lock = threading.Lock()
        self._queued_bytes = 0
        self._gap = [False, False]
        self._child_exited = False
        self._signalled_after_exit = False

    # -- forward path ------------------------------------------------------------------

    def _hand_off(self, direction: int, chunk: bytes) -> None:
        """Give a forwarded chunk to the logging thread; never blocks, never raises."""
        try:
            size = len(chunk)
            with self._queue_lock:
                if self._queued_bytes + size > self.max_log_queue_bytes:
                    self._gap[direction] = True
                    self.stats.unlogged_chunks += 1
                    return
                self._queued_bytes += size
                gap = self._gap[direction]
                self._gap[direction] = False
            self._queue.put((direction, chunk, time.time_ns(), time.monotonic_ns(), gap))
        except Exception:
            logger.error("agentledger internal error in mcp_proxy.hand_off", exc_info=True)

    def _pump_up(self, stdin_fd: int, child_stdin: IO[bytes]) -> None:
        """Client -> server: our stdin to the child's stdin, until either side closes."""
        child_fd = child_stdin.fileno()
        try:
            while True:
                try:
                    chunk = os.read(stdin_fd, READ_CHUNK_BYTES)
                except OSError:
                    break
                if not chunk:
                    break
                # Handed off before the write: the logging thread then always sees a request
                # before the child can answer it.
                self._hand_off(_UP, chunk)
                if not _write_all(child_fd, chunk):
                    break  # the child closed its stdin (or exited)
        finally:
            with contextlib.suppress(OSError):
                child_stdin.close()  # EOF for the child: the client is done

    def _pump_down(self, child_stdout: IO[bytes], stdout_fd: int) -> None:
        """Server -> client: the child's stdout to our stdout, until the child closes it."""
        child_fd = child_stdout.fileno()
        client_open = True
        while True:
            try:
                chunk = os.read(child_fd, READ_CHUNK_BYTES)
            except OSError:
                break
            if not chunk:
                break
            if client_open:
                # Client gone: keep draining the child so that it never blocks on a write.
                client_open = _write_all(stdout_fd, chunk)
            self._hand_off(_DOWN, chunk)
        child_stdout.close()

    @staticmethod
    def _pump_stderr(child_stderr: IO[bytes], target: IO[bytes] | None) -> None:
        """The child's stderr to ``target`` (discarded when ``None`` or broken)."""
        child_fd = child_stderr.fileno()
        while True:
            try:
                chunk = os.read(child_fd, READ_CHUNK_BYTES)
            except OSError:
                break
            if not chunk:
                break
            if target is not None:
                try:
                    target.write(chunk)
                    target.flush()
                except (OSError, ValueError):
                    target = None
        child_stderr.close()

    # -- logging thread ----------------------------------------------------------------

    def _log_loop(self, calls: _CallLogger) -> None:
        while True:
            item = self._queue.get()
            if item is _End:
                break
            direction, chunk, wall_ns, mono_ns, gap = item
            with capture_internal_exceptions("mcp_proxy.log"):
                calls.feed(direction, chunk, wall_ns, mono_ns, gap)
            with self._queue_lock:
                self._queued_bytes -= len(chunk)
        with capture_internal_exceptions("mcp_proxy.finish"):
            calls.finish(self.stats.exit_code if self.stats.exit_code is not None else -1)

    # -- signals -----------------------------------------------------------------------

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        proc = self._proc
        if self._child_exited:
            self._signalled_after_exit = True
        elif proc is not None:
            with contextlib.suppress(OSError):
                proc.send_signal(signum)

    def _install_signals(self) -> dict[int, Any]:
        if not self.forward_signals or threading.current_thread() is not threading.main_thread():
            return {}
        previous: dict[int, Any] = {}
        for signum in (signal.SIGTERM, signal.SIGINT):
            previous[signum] = signal.signal(signum, self._on_signal)
        return previous

    # -- run ---------------------------------------------------------------------------

    def _start_child(self) -> subprocess.Popen[bytes]:
        env = None if self.env is None else self.env
        try:
            return subprocess.Popen(
                self.command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                bufsize=0,
                env=env,
                cwd=self.cwd,
            )
        except FileNotFoundError as error:
            raise ChildStartError(self.command, 127, "command not found") from error
        except PermissionError as error:
            raise ChildStartError(self.command, 126, "permission denied") from error
        except OSError as error:
            raise ChildStartError(self.command, 126, error.strerror or str(error)) from error

    def run(self, stdin_fd: int = 0, stdout_fd: int = 1, stderr: BinaryIO | None = None) -> int:
        """Start the child, proxy until it closes its stdout, and return its exit code.

        Args:
            stdin_fd: file descriptor the client's messages arrive on.
            stdout_fd: file descriptor the server's messages are written to (nothing else is).
            stderr: where the child's stderr goes (default ``sys.stderr``'s binary buffer).

        Returns:
            the child's exit code; ``128 + N`` when signal N ended it.

        Raises:
            ChildStartError: the command was not found (``exit_code`` 127) or could not be
                executed (126). Nothing is logged then.
            RuntimeError: :meth:`run` was called before (a proxy runs once).

        The thread reading ``stdin_fd`` is a daemon: when the child exits first it may stay
        blocked in that read until the client closes its end.
        """
        if self._proc is not None:
            raise RuntimeError("McpProxy.run() was already called; make a new McpProxy")
        proc = self._start_child()
        self._proc = proc
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        previous = self._install_signals()
        try:
            return self._proxy(proc, stdin_fd, stdout_fd, stderr)
        except BaseException:  # our own failure: never leave the child running behind us
            with contextlib.suppress(OSError):
                proc.kill()
            raise
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def _proxy(
        self,
        proc: subprocess.Popen[bytes],
        stdin_fd: int,
        stdout_fd: int,
        stderr: BinaryIO | None,
    ) -> int:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        calls = _CallLogger(
            self.ledger,
            self.session_id,
            self.command,
            max_line_bytes=self.max_line_bytes,
            max_pending_calls=self.max_pending_calls,
            stats=self.stats,
        )
        target = stderr if stderr is not None else getattr(sys.stderr, "buffer", None)
        threads = [
            threading.Thread(
                target=self._log_loop, args=(calls,), name="mcp-proxy-log", daemon=True
            ),
            threading.Thread(
                target=self._pump_up,
                args=(stdin_fd, proc.stdin),
                name="mcp-proxy-up",
                daemon=True,
            ),
            threading.Thread(
                target=self._pump_stderr,
                args=(proc.stderr, target),
                name="mcp-proxy-stderr",
                daemon=True,
            ),
        ]
        for thread in threads:
            thread.start()
        self._pump_down(proc.stdout, stdout_fd)
        returncode = proc.wait()
        self._child_exited = True
        exit_code = 128 - returncode if returncode < 0 else returncode
        self.stats.exit_code = exit_code
        self._queue.put(_End)
        self._join(threads[0], DRAIN_TIMEOUT_S)
        self._join(threads[2], 1.0)  # a grandchild may still hold the child's stderr
        self._flush()
        return exit_code

    def _join(self, thread: threading.Thread, timeout_s: float) -> None:
        """Wait for ``thread`` at most ``timeout_s``; a signal after the child exited ends it."""
        deadline = time.monotonic() + timeout_s
        while thread.is_alive() and not self._signalled_after_exit:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            thread.join(min(0.05, left))

    def _flush(self) -> None:
        """Flush the ledger for at most ``flush_timeout_s``; a signal cuts it short."""
        deadline = time.monotonic() + self.flush_timeout_s
        while not self._signalled_after_exit:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            with capture_internal_exceptions("mcp_proxy.flush"):
                if self.ledger.flush(timeout_s=min(0.1, left)).complete:
                    return


def run_proxy(
    command: Sequence[str],
    ledger: Ledger,
    *,
    session_id: str | None = None,
    env: Mapping[str, str] | None = None,
    flush_timeout_s: float = DEFAULT_FLUSH_TIMEOUT_S,
) -> int:
    """Proxy our stdin/stdout to ``command`` (an MCP stdio server) and log its tool calls.

    Args:
        command: the server's argv.
        ledger: the client events are logged with (flushed at the end, not closed).
        session_id: the run's session (default ``mcp-proxy-<uuid4 hex>``).
        env: the child's environment (default: ours).
        flush_timeout_s: longest final flush of the ledger (seconds).

    Returns:
        the child's exit code (``128 + N`` when signal N ended it).

    Raises:
        ChildStartError: the command could not be started (``exit_code`` 127 or 126).
        ValueError: ``command`` is empty.
    """
    proxy = McpProxy(
        command, ledger, session_id=session_id, env=env, flush_timeout_s=flush_timeout_s
    )
    return proxy.run()


_USAGE = (
    "python -m agentledger.integrations._mcp_proxy [--url URL] [--api-key KEY] [--agent NAME]\n"
    "       [--session ID] [--spill-dir DIR | --no-spill] [--flush-timeout S] -- COMMAND ARGS..."
)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry: parse ``argv``, proxy, return the exit code.

    ``argv`` (default ``sys.argv[1:]``) is options, ``--``, then the server's command::

        --url URL          ledger server (default env AGENTLEDGER_URL, else the client default)
        --api-key KEY      API key (default env AGENTLEDGER_API_KEY)
        --agent NAME       agent the events are logged under (default env AGENTLEDGER_AGENT)
        --session ID       session id (default mcp-proxy-<uuid>)
        --spill-dir DIR    disk spill of the client (default: the client's default)
        --no-spill         no disk spill: events the server cannot take are dropped
        --flush-timeout S  longest final flush, seconds (default 1.0)

    Returns:
        the child's exit code; 127/126 when the command cannot be started; 2 for a usage or
        configuration error. Messages go to stderr only.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if "--" not in args:
        sys.stderr.write(f"usage: {_USAGE}\nerror: give the MCP server command after --\n")
        return 2
    split = args.index("--")
    options, command = args[:split], args[split + 1 :]
    parser = argparse.ArgumentParser(
        prog="python -m agentledger.integrations._mcp_proxy", usage=_USAGE
    )
    parser.add_argument("--url")
    parser.add_argument("--api-key")
    parser.add_argument("--agent")
    parser.add_argument("--session")
    spill = parser.add_mutually_exclusive_group()
    spill.add_argument("--spill-dir")
    spill.add_argument("--no-spill", action="store_true")
    parser.add_argument("--flush-timeout", type=float, default=DEFAULT_FLUSH_TIMEOUT_S)
    try:
        parsed = parser.parse_args(options)
    except SystemExit as stop:  # argparse already wrote the message to stderr
        return int(stop.code or 0)
    if not command:
        sys.stderr.write("error: give the MCP server command after --\n")
        return 2
    agent = parsed.agent or os.environ.get("AGENTLEDGER_AGENT")
    if not agent:
        sys.stderr.write("error: give --agent NAME (or set AGENTLEDGER_AGENT)\n")
        return 2
    spill_kwargs: dict[str, Any] = {}
    if parsed.no_spill:
        spill_kwargs["spill_dir"] = None
    elif parsed.spill_dir:
        spill_kwargs["spill_dir"] = parsed.spill_dir
    try:
        ledger = Ledger(url=parsed.url, api_key=parsed.api_key, agent=agent, **spill_kwargs)
    except ConfigurationError as error:
        sys.stderr.write(f"error: {error}\n")
        return 2
    try:
        return run_proxy(
            command, ledger, session_id=parsed.session, flush_timeout_s=parsed.flush_timeout
        )
    except ChildStartError as error:
        sys.stderr.write(f"agentledger mcp-proxy: {error}\n")
        return error.exit_code
    finally:
        ledger.close(timeout_s=0.0)  # what the final flush could not send goes to the spill


if __name__ == "__main__":
    sys.exit(main())
