"""The background sender: a bounded queue drained by one worker thread, in batches.

``put()`` only queues (no I/O in the agent's thread); the worker delivers through
:class:`~agentledger.client._sender.BatchPoster` and spills what the server cannot take. How
queueing, retries, spill, flush/close deadlines and ``fork()`` fit together:
docs/design/client-sender.md.
"""

from __future__ import annotations

import asyncio
import collections
import threading
import time
from concurrent.futures import Future

import httpx

from agentledger.client._guard import capture_internal_exceptions, logger
from agentledger.client._models import FlushResult, Stats
from agentledger.client._redaction import ClientRedactor
from agentledger.client._retry import RetryPolicy
from agentledger.client._sender import BatchPoster
from agentledger.client._spill import SpillStore
from agentledger.client._tally import Counters, Tally
from agentledger.client._wire import Item, item_line

__all__ = ["BatchSender"]


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
        self._tally = Tally()
        self._lock = self._tally.lock  # counters, waiters, queue, in-flight
        self._wake = threading.Event()
        self._abort = threading.Event()  # set by close(): stop retrying, give up waits
        self._poster = BatchPoster(
            url=self._url,
            headers=self._headers,
            transport=self._transport,
            timeout=self._timeout,
            policy=self._policy,
            tally=self._tally,
            cancel=self._abort,
            spill_on=self._spill is not None,
            max_probe_interval_s=self._max_probe_s,
        )
        self._thread: threading.Thread | None = None
        self._thread_failed = False
        self._closed = False
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
            self._tally.n.enqueued += 1
            overflow = len(queue) >= self._max_queue
            if not overflow:
                queue.append(item)
        if overflow:
            self._overflow(item)
        elif len(queue) >= self._max_batch and not self._poster.down and not self._wake.is_set():
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
            self._tally.n.enqueued += 1
            self._tally.settle_locked(failed=1)
        logger.warning("agentledger: event %s not logged: %s", event_id, problem)

    def _overflow(self, item: Item) -> None:
        if self._spill is not None:
            with capture_internal_exceptions("client.overflow"):
                if self._spill_items([item], sync=False):
                    return
                self._tally.settle(dropped=1)
                return
        with self._lock:
            # spill off: drop the oldest queued event, keep the newest
            dropped = 0
            try:
                self._queue.popleft()
            except IndexError:
                pass
            else:
                dropped = 1
            self._queue.append(item)
            self._tally.settle_locked(dropped=dropped)
        self._wake.set()

    def _late(self, item: Item) -> None:
        """An event logged after ``close()``: spill it, or count it dropped."""
        with self._lock:
            self._tally.n.enqueued += 1
        with capture_internal_exceptions("client.late_event"):
            if self._spill is not None and self._spill_items([item], sync=True):
                return
            self._tally.settle(dropped=1)
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

    def flush_request(self) -> tuple[Future[None], Counters]:
        """Ask the worker to send everything queued now; the future completes when it is
        settled. Returns the future and a copy of the counters at the time of the call."""
        future, before = self._tally.flush_waiter()
        self._next_orphan_scan = 0.0  # a flush also picks up spill left by other processes
        self._poster.next_probe = 0.0  # and tries a server marked down right away
        if self._thread is None and not self._thread_failed and not self._closed:
            self._start()
        self._wake.set()
        return future, before

    def flush_result(self, before: Counters, started: float, complete: bool) -> FlushResult:
        """A :class:`FlushResult` for the counters since ``before``."""
        return self._tally.flush_result(before, started, complete)

    def sync_flush(self, timeout_s: float) -> FlushResult:
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

    async def async_flush(self, timeout_s: float) -> FlushResult:
        """:meth:`sync_flush` for an event loop: waits without blocking it (and never sends
        from the loop's thread)."""
        started = time.monotonic()
        future, before = self.flush_request()
        complete = await _wait_future(future, timeout_s)
        return self.flush_result(before, started, complete)

    def sync_close(self, timeout_s: float) -> FlushResult:
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

    async def async_close(self, timeout_s: float) -> FlushResult:
        """:meth:`sync_close` for an event loop (waits without blocking it)."""
        started = time.monotonic()
        future, before = self.flush_request()
        complete = await _wait_future(future, timeout_s)
        return self.finish_close(before, started, complete, deadline=started + timeout_s)

    def finish_close(
        self, before: Counters, started: float, complete: bool, *, deadline: float
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
        complete = complete or self._tally.all_settled()
        result = self.flush_result(before, started, complete)
        self._poster.release(close=thread is None or not thread.is_alive())
        if self._spill is not None:
            with capture_internal_exceptions("client.close_spill"):
                self._spill.close(sync=time.monotonic() < deadline)
        return result

    @property
    def closed(self) -> bool:
        """Whether :meth:`sync_close` / :meth:`finish_close` ran."""
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
        self._tally.settle(dropped=len(left))
        logger.warning("agentledger: %d unsent events dropped at close (no spill)", len(left))

    def stats(self) -> Stats:
        """Counters since creation (see :class:`~agentledger.client.Stats`)."""
        spill_bytes = 0
        if self._spill is not None:
            with capture_internal_exceptions("client.stats"):
                spill_bytes = self._spill.size_bytes
        with self._lock:
            return self._tally.stats_locked(len(self._queue), spill_bytes)

    def after_fork_in_child(self) -> None:
        """Fresh queue, locks, counters and worker in a forked child (field case H19)."""
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

    def _cycle(self, deadline: float | None) -> None:
        """Deliver until the queue and the spill backlog are empty, the server is down, or
        ``deadline`` (monotonic seconds) passes."""
        spill = self._spill
        poster = self._poster
        while not self._abort.is_set() or deadline is not None:
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                return
            if poster.down:
                if now < poster.next_probe:
                    self._spill_queue()
                    return
                if not self._probe(deadline):
                    poster.probe_failed()
                    self._spill_queue()
                    return
                poster.mark_up()
                self._next_orphan_scan = 0.0
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
        return self._spill_lines(self._lines(items), sync=sync)

    def _spill_lines(self, lines: list[bytes], *, sync: bool) -> bool:
        """Append to the spill and count the events spilled; False when it refused them."""
        assert self._spill is not None
        try:
            ok = self._spill.append(lines, sync=sync)
        except OSError as error:
            logger.warning("agentledger: spill write failed (%s); events dropped", error)
            ok = False
        if ok:
            self._tally.settle(spilled=len(lines))
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
                self._tally.settle(dropped=len(items))
                logger.warning("agentledger: spill full; %d events dropped", len(items))

    def _send_queued(self, items: list[Item], deadline: float | None) -> None:
        lines = self._lines(items)
        answered = self._poster.deliver(lines, deadline, single_attempt=False)
        if not self._settle_inflight():
            return  # close() spilled this batch already; a late success is a duplicate
        if answered:
            return
        # unavailable: keep the events
        if self._spill is not None:
            if not self._spill_lines(lines, sync=True):
                self._tally.settle(dropped=len(items))
            return
        # spill off: put them back at the head of the queue; overflow drops the oldest
        with self._lock:
            self._queue.extendleft(reversed(items))
            extra = len(self._queue) - self._max_queue
            for _ in range(max(0, extra)):
                self._queue.popleft()
            if extra > 0:
                self._tally.settle_locked(dropped=extra)

    def _send_spilled(self, deadline: float | None, *, single_attempt: bool) -> bool:
        """Resend the oldest spilled batch; True when it was delivered."""
        assert self._spill is not None
        batch = self._spill.next_batch(self._max_batch)
        if batch is None:
            return True
        segment, lines = batch
        if not self._poster.deliver(
            lines, deadline, single_attempt=single_attempt, from_spill=True
        ):
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
            return self._poster.health()
        answered = self._poster.deliver(self._lines(batch), deadline, single_attempt=True)
        if not self._settle_inflight():
            return answered
        if answered:
            return True
        with self._lock:
            self._queue.extendleft(reversed(batch))
        return False


async def _wait_future(future: Future[None], timeout_s: float) -> bool:
    """Await a flush future from an event loop; False when ``timeout_s`` passed first."""
    try:
        await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(future)), timeout_s)
    except TimeoutError:
        return False
    return True
