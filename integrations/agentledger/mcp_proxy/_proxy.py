"""The MCP stdio proxy: run an MCP server as a child, pass its messages through unchanged,
and log each tool call and its outcome to the ledger (``agentledger mcp-proxy``).

Threads, the events logged, the lifecycle and the signals: ``docs/design/mcp.md``.
"""

from __future__ import annotations

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
from types import FrameType
from typing import IO, Any, BinaryIO, Final

from agentledger.client import FlushResult, Ledger, Stats, capture_internal_exceptions
from agentledger.mcp_proxy._calls import DOWN, UP, CallLogger, ProxyStats
from agentledger.mcp_proxy._errors import ChildStartError, McpProxyError

__all__ = [
    "DEFAULT_FLUSH_TIMEOUT_S",
    "DEFAULT_MAX_LINE_BYTES",
    "DEFAULT_MAX_LOG_QUEUE_BYTES",
    "DEFAULT_MAX_PENDING_CALLS",
    "ChildStartError",
    "McpProxy",
    "McpProxyError",
    "ProxyStats",
    "run_proxy",
]

logger = logging.getLogger("agentledger.mcp_proxy")

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
#: Seconds the child's stdout may stay open and quiet after the child exited (a grandchild
#: holds it) once our stdin is closed or a signal was forwarded, before the proxy stops
#: reading it.
CHILD_EXIT_GRACE_S: Final = 0.5
#: Seconds the proxy still spends logging and flushing what is left after a SIGTERM/SIGINT
#: received once the child exited; a second such signal ends the run at once.
SIGNAL_GRACE_S: Final = 0.5
#: Seconds between two looks of the main thread at the child and the pumps.
_POLL_S: Final = 0.05


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
        self._logging_open = True  # False once the logging thread was told to finish
        self._down_forwarding = True  # False once the run stopped reading the child's stdout
        self._down_read_ns = time.monotonic_ns()  # when the child's stdout last gave bytes
        self._up_ended = False  # the up pump ended (our stdin closed, or the child's stdin)
        self._child_exited = False
        self._signalled = False  # a SIGTERM/SIGINT was received
        self._stop_by_ns: int | None = None  # set by a signal after the child exited

    # -- forward path ------------------------------------------------------------------

    def _hand_off(self, direction: int, chunk: bytes) -> None:
        """Give a forwarded chunk (``b""``: the end of that stream) to the logging thread;
        never blocks, never raises."""
        try:
            size = len(chunk)
            wall_ns, mono_ns = time.time_ns(), time.monotonic_ns()
            if direction == DOWN:
                self._down_read_ns = mono_ns
            with self._queue_lock:
                if not self._logging_open:
                    return
                if self._queued_bytes + size > self.max_log_queue_bytes:
                    self._gap[direction] = True
                    self.stats.unlogged_chunks += 1
                    return
                self._queued_bytes += size
                gap = self._gap[direction]
                self._gap[direction] = False
                # Put under the lock, so that nothing follows the logging thread's end mark.
                self._queue.put((direction, chunk, wall_ns, mono_ns, gap))
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
                    # Before the child sees EOF: a last request without a newline is then
                    # logged before the child can answer it.
                    self._hand_off(UP, b"")
                    break
                # Handed off before the write: the logging thread then always sees a request
                # before the child can answer it.
                self._hand_off(UP, chunk)
                if not _write_all(child_fd, chunk):
                    break  # the child closed its stdin (or exited)
        finally:
            self._up_ended = True
            with contextlib.suppress(OSError):
                child_stdin.close()  # EOF for the child: the client is done

    def _pump_down(self, child_stdout: IO[bytes], stdout_fd: int) -> None:
        """Server -> client: the child's stdout to our stdout, until the child closes it (or
        the run stopped reading it: then nothing more is written to ``stdout_fd``)."""
        child_fd = child_stdout.fileno()
        client_open = True
        while True:
            try:
                chunk = os.read(child_fd, READ_CHUNK_BYTES)
            except OSError:
                break
            if not chunk or not self._down_forwarding:
                break
            # Handed off before the write, as upward: whatever the client sends in reaction
            # (a tools/call after the initialize answer) is queued after what it reacts to.
            self._hand_off(DOWN, chunk)
            if client_open:
                # Client gone: keep draining the child so that it never blocks on a write.
                client_open = _write_all(stdout_fd, chunk)
        self._hand_off(DOWN, b"")
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

    def _end_logging(self) -> None:
        """Tell the logging thread to finish (after what is queued); later chunks are not
        logged."""
        with self._queue_lock:
            self._logging_open = False
            self._queue.put(_End)

    def _log_loop(self, calls: CallLogger) -> None:
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
        self._signalled = True
        if self._child_exited:
            # The first one leaves SIGNAL_GRACE_S to log and flush what is left; the next
            # one ends the run at once.
            now = time.monotonic_ns()
            first = self._stop_by_ns is None
            self._stop_by_ns = now + int(SIGNAL_GRACE_S * 1e9) if first else now
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
        """Start the child, proxy until it closes its stdout (or, after it exited, until the
        stop rules of the module docstring end the run), and return its exit code.

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

        The pump threads are daemons. The one reading ``stdin_fd`` may stay blocked in that
        read, when the child exits first, until the client closes its end; the one reading the
        child's stdout, when a grandchild holds it, until that process closes it (it writes
        nothing to ``stdout_fd`` after :meth:`run` returned).
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
        calls = CallLogger(
            self.ledger,
            self.session_id,
            self.command,
            max_line_bytes=self.max_line_bytes,
            max_pending_calls=self.max_pending_calls,
            stats=self.stats,
        )
        before = self._ledger_stats()
        target = stderr if stderr is not None else getattr(sys.stderr, "buffer", None)
        log = threading.Thread(target=self._log_loop, args=(calls,), name="mcp-proxy-log")
        up = threading.Thread(
            target=self._pump_up, args=(stdin_fd, proc.stdin), name="mcp-proxy-up"
        )
        err = threading.Thread(
            target=self._pump_stderr, args=(proc.stderr, target), name="mcp-proxy-stderr"
        )
        down = threading.Thread(
            target=self._pump_down, args=(proc.stdout, stdout_fd), name="mcp-proxy-down"
        )
        for thread in (log, up, err, down):
            thread.daemon = True
            thread.start()
        self._wait_down(proc, down)
        returncode = proc.wait()  # the child closed its stdout: it is exiting (or exited)
        self._child_exited = True
        self._down_forwarding = False  # a grandchild's later bytes are not ours to forward
        exit_code = 128 - returncode if returncode < 0 else returncode
        self.stats.exit_code = exit_code
        self._end_logging()
        self._join(log, DRAIN_TIMEOUT_S)
        flushed = self._flush()
        self._join(err, CHILD_EXIT_GRACE_S)  # a grandchild may hold the stderr pipe
        with capture_internal_exceptions("mcp_proxy.report_unsent"):
            self._report_unsent(before, flushed)
        return exit_code

    def _wait_down(self, proc: subprocess.Popen[bytes], down: threading.Thread) -> None:
        """Wait until the child's stdout is closed; once the child exited, stop waiting at a
        signal, or when the pipe stayed quiet for ``CHILD_EXIT_GRACE_S`` after our stdin
        closed or a signal was forwarded (a grandchild holds the pipe)."""
        while True:
            down.join(_POLL_S)  # signal handlers run between the polls
            if not down.is_alive():
                return
            if proc.poll() is None:
                continue
            self._child_exited = True
            if self._stop_by_ns is not None:
                return
            quiet_s = (time.monotonic_ns() - self._down_read_ns) / 1e9
            if (self._up_ended or self._signalled) and quiet_s >= CHILD_EXIT_GRACE_S:
                return

    def _left_s(self, deadline_ns: int) -> float:
        """Seconds left until ``deadline_ns`` (monotonic), or until a signal's stop time."""
        stop_by = self._stop_by_ns
        if stop_by is not None:
            deadline_ns = min(deadline_ns, stop_by)
        return (deadline_ns - time.monotonic_ns()) / 1e9

    def _join(self, thread: threading.Thread, timeout_s: float) -> None:
        """Wait for ``thread`` at most ``timeout_s`` (a signal shortens it)."""
        deadline_ns = time.monotonic_ns() + int(timeout_s * 1e9)
        while thread.is_alive() and (left := self._left_s(deadline_ns)) > 0:
            thread.join(min(_POLL_S, left))

    def _flush(self) -> FlushResult | None:
        """Flush the ledger for at most ``flush_timeout_s`` (a signal shortens it). Returns
        the last flush's result (``None``: none ran)."""
        deadline_ns = time.monotonic_ns() + int(self.flush_timeout_s * 1e9)
        result: FlushResult | None = None
        while (left := self._left_s(deadline_ns)) > 0:
            with capture_internal_exceptions("mcp_proxy.flush"):
                result = self.ledger.flush(timeout_s=min(0.1, left))
                if result.complete:
                    break
        return result

    def _ledger_stats(self) -> Stats | None:
        with capture_internal_exceptions("mcp_proxy.ledger_stats"):
            return self.ledger.stats()
        return None

    def _report_unsent(self, before: Stats | None, flushed: FlushResult | None) -> None:
        """One warning when events of this run were not delivered: how many, and where they
        wait (the spill directory) or that they are lost (no spill)."""
        after = self._ledger_stats()
        if before is None or after is None:
            return
        if flushed is None or not flushed.complete:
            flushed = self.ledger.flush(timeout_s=0.0)  # counts what is queued or in flight
        pending = flushed.pending
        spilled = max(0, (after.spilled - before.spilled) - (after.unspilled - before.unspilled))
        dropped = after.dropped - before.dropped
        spill_dir = self.ledger.spill_dir
        if spill_dir is not None and pending + spilled:
            logger.warning(
                "agentledger mcp-proxy: %d events not delivered to %s yet; they wait in the "
                "spill directory %s and are sent by the next agentledger client that uses it",
                pending + spilled,
                self.ledger.url,
                spill_dir,
            )
        elif spill_dir is None and pending + dropped:
            logger.warning(
                "agentledger mcp-proxy: %d events not delivered to %s are lost (no spill "
                "directory)",
                pending + dropped,
                self.ledger.url,
            )


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
