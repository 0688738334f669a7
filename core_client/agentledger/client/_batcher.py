"""The background sender: bounded queue, one worker thread, batches, retries, spill.

Pattern of OpenTelemetry's ``BatchProcessor`` and sentry's ``worker.py`` (style.md point 9):

* ``put()`` runs in the agent's thread and only appends a tuple to a deque (no I/O). When the
  queue holds ``max_queue_events``, the event goes to the disk spill (or, with spill off, the
  oldest queued event is dropped and counted).
* One daemon thread, started lazily on the first event, takes up to ``max_batch_events`` every
  ``flush_interval_s`` (sooner when a batch fills or a flush is asked) and POSTs them to
  ``/v1/events/batch`` with the retry policy of :mod:`._retry`. Every retry resends the same
  bytes, so the server recognises each ``event_id`` and stores it once (field cases H08, H10).
* A batch still failing at the retry deadline is spilled, and the sender marks the server
  *down*: it stops retrying, moves queued events to the spill, and probes the server with one
  attempt at growing intervals (up to ``max_probe_interval_s``). When a probe succeeds the
  spill is resent oldest first, including segments left by earlier processes.
* ``flush(timeout_s)`` and ``close(timeout_s)`` always return within their timeout
  (field cases H07, H09); events still in flight at the end of ``close`` are spilled (a later
  resend is a harmless duplicate).
* After ``fork()`` the child gets an empty queue, fresh locks and its own worker (H19).
"""

from __future__ import annotations

import collections
import threading
import time
from concurrent.futures import Future
from typing import Any

import httpx

from agentledger.client._guard import capture_internal_exceptions, logger
from agentledger.client._models import FlushResult, Stats
from agentledger.client._redaction import ClientRedactor
from agentledger.client._retry import (
    RetryableStatus,
    RetryPolicy,
    is_retryable_status,
    sync_retrying,
)
from agentledger.client._spill import SpillStore
from agentledger.client._wire import Item, batch_body, item_line, parse_batch_response

__all__ = ["BatchSender"]

BATCH_PATH = "/v1/events/batch"

# Statuses after which the batch is kept (spilled) and the server treated as unavailable:
# the key or route may be fixed by an operator, the events must not be lost meanwhile.
_KEEP_STATUS = frozenset({401, 403, 404})


class _Counters:
    __slots__ = (
        "dropped",
        "duplicates",
        "enqueued",
        "failed",
        "retried",
        "sent",
        "settled",
        "spilled",
        "unspilled",
    )

    def __init__(self) -> None:
        self.enqueued = 0
        self.sent = 0
        self.duplicates = 0
        self.retried = 0
        self.spilled = 0
        self.unspilled = 0
        self.dropped = 0
        self.failed = 0
        self.settled = 0  # queued events that left the queue for good (sent/spilled/dropped)


class _Waiter:
    __slots__ = ("future", "target")

    def __init__(self, target: int) -> None:
        self.target = target
        self.future: Future[None] = Future()


class BatchSender:
    """Sends queued events in the background; thread-safe, never raises from :meth:`put`.

    Args:
        url: server base URL.
        headers: request headers (``Authorization``...).
        transport: httpx transport for the sender's client (tests inject faults here).
        timeout: httpx timeout of one request.
        policy: retry policy of one batch.
        spill: the disk spill, or ``None`` (then the oldest events are dropped when full).
        redactor: applied to ``data``/``metadata`` before anything leaves the process.
        flush_interval_s: longest wait before a partial batch is sent (seconds).
        max_batch_events: events per request (server limit 500).
        max_queue_events: events held in memory before overflow handling.
        max_probe_interval_s: longest wait between probes of an unavailable server (seconds).
    """

    def __init__(
        self,
        *,
        url: str,
        headers: dict[str, str],
        transport: httpx.BaseTransport | None,
        timeout: httpx.Timeout,
        policy: RetryPolicy,
        spill: SpillStore | None,
        redactor: ClientRedactor | None,
        flush_interval_s: float,
        max_batch_events: int,
        max_queue_events: int,
        max_probe_interval_s: float = 30.0,
    ) -> None:
        self._url = url
        self._headers = headers
        self._transport = transport
        self._timeout = timeout
        self._policy = policy
        self._spill = spill
        self._redactor = redactor
        self._interval_s = flush_interval_s
        self._max_batch = max_batch_events
        self._max_queue = max_queue_events
        self._max_probe_s = max_probe_interval_s
        self._init_state()

    def _init_state(self) -> None:
        self._queue: collections.deque[Item] = collections.deque()
        self._lock = threading.Lock()  # counters, waiters, in-flight
        self._wake = threading.Event()
        self._abort = threading.Event()  # set by close(): stop retrying, give up waits
        self._n = _Counters()
        self._waiters: list[_Waiter] = []
        self._thread: threading.Thread | None = None
        self._thread_failed = False
        self._client: httpx.Client | None = None
        self._closed = False
        self._down = False
        self._next_probe = 0.0
        self._probe_wait_s = 0.5
        self._inflight: list[Item] | None = None
        self._inflight_taken = False
        self._next_orphan_scan = 0.0

    # -- caller side -----------------------------------------------------------------------

    def put(self, item: Item) -> None:
        """Queue one event (the agent's thread; no network I/O, never raises)."""
        if self._closed:
            self._late(item)
            return
        queue = self._queue
        with self._lock:
            self._n.enqueued += 1
            overflow = len(queue) >= self._max_queue
            if not overflow:
                queue.append(item)
        if overflow:
            self._overflow(item)
        elif len(queue) >= self._max_batch and not self._down and not self._wake.is_set():
            # ``Event.set()`` takes a lock and notifies: only when it changes something (a
            # queue held back by a slow or absent server would otherwise pay it per event).
            # While the server is down the sender keeps its own probe schedule: waking it per
            # event made it spin (wake, "not yet time to probe", sleep) and burn the GIL the
            # agent needs; the queue is spilled on its interval and on overflow instead.
            self._wake.set()
        if self._thread is None and not self._thread_failed:
            self._start()

    def reject(self, problem: str, event_id: str) -> None:
        """Count an event ``log()`` refused (bad argument); logs a warning, never raises."""
        with self._lock:
            self._n.enqueued += 1
            self._n.failed += 1
            self._n.settled += 1
            self._notify_locked()
        logger.warning("agentledger: event %s not logged: %s", event_id, problem)

    def _overflow(self, item: Item) -> None:
        if self._spill is not None:
            with capture_internal_exceptions("client.overflow"):
                if self._spill_items([item], sync=False):
                    return
                with self._lock:
                    self._n.dropped += 1
                    self._n.settled += 1
                    self._notify_locked()
                return
        with self._lock:
            # spill off: drop the oldest queued event, keep the newest
            try:
                self._queue.popleft()
            except IndexError:
                pass
            else:
                self._n.dropped += 1
                self._n.settled += 1
            self._queue.append(item)
            self._notify_locked()
        self._wake.set()

    def _late(self, item: Item) -> None:
        """An event logged after ``close()``: spill it, or count it dropped."""
        with self._lock:
            self._n.enqueued += 1
        with capture_internal_exceptions("client.late_event"):
            if self._spill is not None and self._spill_items([item], sync=True):
                return
            with self._lock:
                self._n.dropped += 1
                self._n.settled += 1
            logger.warning("agentledger: event %s logged after close() was dropped", item.event_id)

    def _start(self) -> None:
        with self._lock:
            if self._thread is not None or self._closed:
                return
            thread = threading.Thread(target=self._run, name="agentledger-sender", daemon=True)
            try:
                thread.start()
            except RuntimeError:
                # Python 3.12+ refuses new threads at interpreter exit: close() drains inline.
                self._thread_failed = True
                return
            self._thread = thread

    # -- flush / close ---------------------------------------------------------------------

    def _notify_locked(self) -> None:
        if not self._waiters:
            return
        settled = self._n.settled
        remaining = []
        for waiter in self._waiters:
            if waiter.future.done():
                continue
            if settled >= waiter.target:
                waiter.future.set_result(None)
            else:
                remaining.append(waiter)
        self._waiters = remaining

    def flush_request(self) -> tuple[Future[None], _Counters]:
        """Ask the worker to send everything queued now; the future completes when it is
        settled. Returns the future and a copy of the counters at the time of the call."""
        with self._lock:
            waiter = _Waiter(self._n.enqueued)
            before = self._copy_counters()
            if self._n.settled >= waiter.target:
                waiter.future.set_result(None)
            else:
                self._waiters.append(waiter)
        self._next_orphan_scan = 0.0  # a flush also picks up spill left by other processes
        self._next_probe = 0.0  # and tries a server marked down right away
        if self._thread is None and not self._thread_failed and not self._closed:
            self._start()
        self._wake.set()
        return waiter.future, before

    def flush_result(self, before: _Counters, started: float, complete: bool) -> FlushResult:
        """A :class:`FlushResult` for the counters since ``before``."""
        with self._lock:
            now = self._n
            return FlushResult(
                complete=complete,
                sent=now.sent - before.sent,
                spilled=now.spilled - before.spilled,
                dropped=now.dropped + now.failed - before.dropped - before.failed,
                pending=max(0, now.enqueued - now.settled),
                elapsed_s=time.monotonic() - started,
            )

    def flush(self, timeout_s: float) -> FlushResult:
        """Block until every event queued before the call is settled, or ``timeout_s``."""
        started = time.monotonic()
        future, before = self.flush_request()
        if self._thread is None:
            self._drain_inline(started + timeout_s)
        try:
            future.result(timeout=max(0.0, timeout_s - (time.monotonic() - started)))
            complete = True
        except TimeoutError:
            complete = False
        return self.flush_result(before, started, complete)

    def close(self, timeout_s: float) -> FlushResult:
        """Flush for at most ``timeout_s``, then :meth:`finish_close`; idempotent."""
        started = time.monotonic()
        deadline = started + timeout_s
        future, before = self.flush_request()
        if self._thread is None and not self._closed:
            self._drain_inline(deadline)
        try:
            future.result(timeout=max(0.0, deadline - time.monotonic()))
            complete = True
        except TimeoutError:
            complete = False
        return self.finish_close(before, started, complete, deadline=deadline)

    def finish_close(
        self, before: _Counters, started: float, complete: bool, *, deadline: float
    ) -> FlushResult:
        """Stop the worker and spill (or count as dropped) what is still queued or in
        flight. Never waits on the network. The spill is fsynced only while time is left
        before ``deadline`` (monotonic seconds); past it the lines are written unsynced (the
        OS keeps them across the process exit; only a machine crash could lose them)."""
        if self._closed:
            return self.flush_result(before, started, complete)
        self._closed = True
        self._abort.set()
        self._wake.set()
        thread = self._thread
        if thread is not None:
            thread.join(0.05)
        sync = time.monotonic() < deadline
        self._keep_leftovers(sync=sync)
        with self._lock:
            complete = complete or self._n.settled >= self._n.enqueued
        result = self.flush_result(before, started, complete)
        client, self._client = self._client, None
        if client is not None and (thread is None or not thread.is_alive()):
            client.close()
        if self._spill is not None:
            with capture_internal_exceptions("client.close_spill"):
                self._spill.close(sync=time.monotonic() < deadline)
        return result

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` / :meth:`finish_close` ran."""
        return self._closed

    def _keep_leftovers(self, *, sync: bool) -> None:
        """At close: spill (or drop) what is still queued or in flight."""
        with self._lock:
            left = list(self._queue)
            self._queue.clear()
            if self._inflight is not None and not self._inflight_taken:
                left = self._inflight + left
                self._inflight_taken = True
        if not left:
            return
        if self._spill is not None:
            with capture_internal_exceptions("client.close_spill"):
                if self._spill_items(left, sync=False):
                    if sync:
                        try:
                            self._spill.sync()
                        except OSError as error:
                            logger.warning("agentledger: spill fsync failed at close: %s", error)
                    return
        with self._lock:
            self._n.dropped += len(left)
            self._n.settled += len(left)
            self._notify_locked()
        logger.warning("agentledger: %d unsent events dropped at close (no spill)", len(left))

    def stats(self) -> Stats:
        """Counters since creation (see :class:`~agentledger.client.Stats`)."""
        spill_bytes = 0
        if self._spill is not None:
            with capture_internal_exceptions("client.stats"):
                spill_bytes = self._spill.size_bytes
        with self._lock:
            n = self._n
            return Stats(
                enqueued=n.enqueued,
                sent=n.sent,
                duplicates=n.duplicates,
                retried=n.retried,
                spilled=n.spilled,
                unspilled=n.unspilled,
                dropped=n.dropped,
                failed=n.failed,
                queue_depth=len(self._queue),
                spill_bytes=spill_bytes,
            )

    def _copy_counters(self) -> _Counters:
        copy = _Counters()
        for name in _Counters.__slots__:
            setattr(copy, name, getattr(self._n, name))
        return copy

    def after_fork_in_child(self) -> None:
        """Fresh queue, locks, counters and worker in a forked child (H19)."""
        spill = self._spill
        self._init_state()
        if spill is not None:
            spill.after_fork_in_child()

    # -- worker ----------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._abort.is_set():
            self._wake.wait(self._interval_s)
            self._wake.clear()
            if self._abort.is_set():
                break
            with capture_internal_exceptions("client.sender"):
                self._cycle(deadline=None)
                if self._spill is not None:
                    self._spill.sync()  # overflow lines buffered by the agent's thread

    def _drain_inline(self, deadline: float) -> None:
        """Send from the calling thread (no worker could be started, e.g. at exit)."""
        with capture_internal_exceptions("client.drain_inline"):
            self._cycle(deadline=deadline)

    def _http(self) -> httpx.Client:
        client = self._client
        if client is None:
            client = httpx.Client(
                base_url=self._url,
                headers=self._headers,
                transport=self._transport,
                timeout=self._timeout,
            )
            self._client = client
        return client

    def _cycle(self, deadline: float | None) -> None:
        """Deliver until the queue and the spill backlog are empty, the server is down, or
        ``deadline`` (monotonic seconds) passes."""
        spill = self._spill
        while not self._abort.is_set() or deadline is not None:
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                return
            if self._down:
                if now < self._next_probe:
                    self._spill_queue()
                    return
                if not self._probe(deadline):
                    self._next_probe = time.monotonic() + self._probe_wait_s
                    self._probe_wait_s = min(self._probe_wait_s * 2, self._max_probe_s)
                    self._spill_queue()
                    return
                self._up()
            if spill is not None and now >= self._next_orphan_scan:
                self._next_orphan_scan = now + 10.0
                if spill.claim_orphans():
                    logger.info("agentledger: resending events spilled by an earlier process")
            worked = False
            if spill is not None and spill.has_backlog():
                worked = True
                if not self._send_spilled(deadline, single_attempt=False):
                    continue
            batch = self._take()
            if batch:
                worked = True
                self._send_queued(batch, deadline)
            if not worked:
                return

    def _take(self) -> list[Item]:
        with self._lock:
            queue = self._queue
            n = min(len(queue), self._max_batch)
            batch = [queue.popleft() for _ in range(n)]
            self._inflight = batch if batch else None
            self._inflight_taken = False
            return batch

    def _settle_inflight(self) -> bool:
        """Mark the in-flight batch done; False when close() already took it over."""
        with self._lock:
            taken = self._inflight_taken
            self._inflight = None
            self._inflight_taken = False
            return not taken

    def _lines(self, items: list[Item]) -> list[bytes]:
        redactor = self._redactor
        return [item_line(item, redactor) for item in items]

    def _spill_items(self, items: list[Item], *, sync: bool) -> bool:
        assert self._spill is not None
        try:
            ok = self._spill.append(self._lines(items), sync=sync)
        except OSError as error:
            logger.warning("agentledger: spill write failed (%s); events dropped", error)
            ok = False
        if ok:
            with self._lock:
                self._n.spilled += len(items)
                self._n.settled += len(items)
                self._notify_locked()
        return ok

    def _spill_queue(self) -> None:
        """While the server is down: move queued events to the spill, a batch per fsync."""
        if self._spill is None:
            return
        while True:
            with self._lock:
                n = min(len(self._queue), self._max_batch)
                items = [self._queue.popleft() for _ in range(n)]
            if not items:
                return
            if not self._spill_items(items, sync=True):
                with self._lock:
                    self._n.dropped += len(items)
                    self._n.settled += len(items)
                    self._notify_locked()
                logger.warning("agentledger: spill full; %d events dropped", len(items))

    def _send_queued(self, items: list[Item], deadline: float | None) -> None:
        lines = self._lines(items)
        status = self._deliver(lines, deadline, single_attempt=False)
        if not self._settle_inflight():
            return  # close() spilled this batch already; a late success is a duplicate
        if status == "ok":
            return
        # unavailable: keep the events
        if self._spill is not None:
            try:
                ok = self._spill.append(lines, sync=True)
            except OSError as error:
                logger.warning("agentledger: spill write failed (%s)", error)
                ok = False
            if ok:
                with self._lock:
                    self._n.spilled += len(items)
                    self._n.settled += len(items)
                    self._notify_locked()
                return
            with self._lock:
                self._n.dropped += len(items)
                self._n.settled += len(items)
                self._notify_locked()
            return
        # spill off: put them back at the head of the queue; overflow drops the oldest
        with self._lock:
            self._queue.extendleft(reversed(items))
            extra = len(self._queue) - self._max_queue
            for _ in range(max(0, extra)):
                self._queue.popleft()
            if extra > 0:
                self._n.dropped += extra
                self._n.settled += extra
                self._notify_locked()

    def _send_spilled(self, deadline: float | None, *, single_attempt: bool) -> bool:
        """Resend the oldest spilled batch; True when it was delivered."""
        assert self._spill is not None
        batch = self._spill.next_batch(self._max_batch)
        if batch is None:
            return True
        segment, lines = batch
        status = self._deliver(lines, deadline, single_attempt=single_attempt, from_spill=True)
        if status != "ok":
            return False
        self._spill.delivered(segment, len(lines))
        return True

    def _probe(self, deadline: float | None) -> bool:
        """One attempt with the oldest pending batch while the server is marked down."""
        if self._spill is not None and self._spill.has_backlog():
            return self._send_spilled(deadline, single_attempt=True)
        batch = self._take()
        if not batch:
            with self._lock:
                self._inflight = None
            return self._health()
        lines = self._lines(batch)
        status = self._deliver(lines, deadline, single_attempt=True)
        if not self._settle_inflight():
            return status == "ok"
        if status == "ok":
            return True
        with self._lock:
            self._queue.extendleft(reversed(batch))
        return False

    def _health(self) -> bool:
        try:
            return self._http().get("/health", timeout=2.0).status_code == 200
        except httpx.HTTPError:
            return False

    def _up(self) -> None:
        if self._down:
            logger.info("agentledger: server %s answers again; resending", self._url)
        self._down = False
        self._probe_wait_s = 0.5
        self._next_orphan_scan = 0.0

    def _mark_down(self, reason: str) -> None:
        if not self._down:
            logger.warning(
                "agentledger: server %s unavailable (%s); events are %s until it answers",
                self._url,
                reason,
                "spilled to disk" if self._spill is not None else "held in memory",
            )
        self._down = True
        self._next_probe = time.monotonic() + self._probe_wait_s

    def _deliver(
        self,
        lines: list[bytes],
        deadline: float | None,
        *,
        single_attempt: bool,
        from_spill: bool = False,
    ) -> str:
        """POST one batch with retries. Returns ``"ok"`` (answered; counted) or
        ``"unavailable"`` (keep the lines)."""
        body = batch_body(lines)
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        policy_deadline = self._policy.deadline_s if remaining is None else remaining
        if single_attempt:
            policy_deadline = 0.0

        def count_retry(_: Any) -> None:
            with self._lock:
                self._n.retried += len(lines)

        retrying = sync_retrying(
            self._policy,
            deadline_s=policy_deadline,
            cancel=self._abort if deadline is None else None,
            on_retry=count_retry,
        )
        try:
            response = retrying(self._post, body)
        except httpx.HTTPError as error:
            self._mark_down(f"{type(error).__name__}: {error}")
            return "unavailable"
        except RetryableStatus as error:
            self._mark_down(f"HTTP {error.response.status_code}")
            return "unavailable"
        status = response.status_code
        if status < 300:
            try:
                body_json = response.json()
            except ValueError:
                body_json = None
            self._count_outcome(lines, body_json, from_spill)
            return "ok"
        if status in (413, 422) and len(lines) > 1:
            half = len(lines) // 2
            first = self._deliver(
                lines[:half], deadline, single_attempt=False, from_spill=from_spill
            )
            if first != "ok":
                return first
            return self._deliver(
                lines[half:], deadline, single_attempt=False, from_spill=from_spill
            )
        if status in _KEEP_STATUS:
            self._mark_down(f"HTTP {status}: {response.text[:200]}")
            return "unavailable"
        # 4xx on a single event (or another client error): rejected for good.
        logger.warning(
            "agentledger: server rejected %d event(s) with HTTP %d: %s",
            len(lines),
            status,
            response.text[:500],
        )
        with self._lock:
            self._n.failed += len(lines)
            if not from_spill:
                self._n.settled += len(lines)
            self._notify_locked()
        return "ok"

    def _post(self, body: bytes) -> httpx.Response:
        response = self._http().post(
            BATCH_PATH, content=body, headers={"Content-Type": "application/json"}
        )
        if is_retryable_status(response.status_code):
            raise RetryableStatus(response)
        return response

    def _count_outcome(self, lines: list[bytes], body: Any, from_spill: bool) -> None:
        outcome = parse_batch_response(body, len(lines))
        for index, error in outcome.failures[:5]:
            logger.warning(
                "agentledger: event rejected by the server: %s (%s)",
                error,
                lines[index][:200] if index < len(lines) else b"",
            )
        with self._lock:
            n = self._n
            n.sent += outcome.ok
            n.duplicates += outcome.duplicates
            n.failed += len(outcome.failures)
            if from_spill:
                n.unspilled += outcome.ok
            else:
                n.settled += len(lines)
            self._notify_locked()
