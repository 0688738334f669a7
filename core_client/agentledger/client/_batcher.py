"""The background sender: a bounded queue drained in batches by one worker thread.

``put()`` only queues (no network I/O in the agent's thread); the worker hands batches to the
:class:`~agentledger.client._exporter.Exporter` and acts on what became of every event:
stored, refused for good (dead-letter file), or kept (spill) while the server is away or
refuses the key. How queueing, the memory budget, ordering, spill, flush/close and
``fork()`` fit together: docs/design/client-sender.md.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import httpx

from agentledger.client._dead_letter import DeadLetterFile
from agentledger.client._disk_moves import DiskMoves
from agentledger.client._exporter import Exporter
from agentledger.client._guard import capture_internal_exceptions, logger
from agentledger.client._models import DeliveryError, FlushResult, Stats
from agentledger.client._outcomes import Outcomes
from agentledger.client._problems import Problems
from agentledger.client._queue import EventQueue, item_bytes
from agentledger.client._redaction import ClientRedactor
from agentledger.client._retry import RetryPolicy
from agentledger.client._spill import SpillStore
from agentledger.client._tally import Counters, Tally
from agentledger.client._wire import Item

__all__ = ["BatchSender"]

#: Seconds between scans for spill segments left by processes that exited.
ORPHAN_SCAN_INTERVAL_S = 10.0


class BatchSender:
    """Sends queued events in the background; thread-safe, never raises from :meth:`put`.

    Args:
        url: server base URL.
        headers: request headers (``Authorization``...).
        transport: httpx transport for the sender's client (tests inject faults here).
        timeout: httpx timeout of one request.
        policy: retry policy of one batch.
        spill: the disk spill, or ``None`` (then the oldest events are dropped when full).
        dead_letter: where refused events are written, or ``None`` (they are only counted).
        redactor: applied to ``data``/``metadata`` before anything leaves the process.
        flush_interval_s: longest wait before a partial batch is sent (seconds).
        max_batch_events: events per request (server limit 500).
        max_queue_events: events held in memory before overflow handling.
        max_queue_bytes: estimated bytes held in memory before overflow handling.
        on_error: called (from the sender's thread) with each :class:`DeliveryError`.
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
        dead_letter: DeadLetterFile | None,
        redactor: ClientRedactor | None,
        flush_interval_s: float,
        max_batch_events: int,
        max_queue_events: int,
        max_queue_bytes: int,
        on_error: Callable[[DeliveryError], object] | None = None,
        max_probe_interval_s: float = 30.0,
    ) -> None:
        self._url = url
        self._headers = headers
        self._transport = transport
        self._timeout = timeout
        self._policy = policy
        self._spill = spill
        self._dead_letter = dead_letter
        self._redactor = redactor
        self._interval_s = flush_interval_s
        self._max_batch = max_batch_events
        self._max_queue = max_queue_events
        self._max_queue_bytes = max_queue_bytes
        self._on_error = on_error
        self._max_probe_s = max_probe_interval_s
        self._init_state()

    def _init_state(self) -> None:
        self._queue = EventQueue(self._max_queue, self._max_queue_bytes)
        self._tally = Tally()
        self._lock = self._tally.lock  # counters, waiters, queue, in-flight
        # Held while events move from memory to the spill and while the worker picks what
        # to send next, so what reaches the server keeps the order of log() calls.
        # reentrant: the sender holds it from a request's answer until the answer's events are
        # placed, and the moves it calls take it again
        self._order = threading.RLock()
        self._wake = threading.Event()
        self._abort = threading.Event()  # set by close(): stop retrying, give up waits
        self._exporter = Exporter(
            url=self._url,
            headers=self._headers,
            transport=self._transport,
            timeout=self._timeout,
            policy=self._policy,
            cancel=self._abort,
            on_retry=self._tally.retried,
            max_probe_interval_s=self._max_probe_s,
        )
        self._thread: threading.Thread | None = None
        self._thread_failed = False
        self._closed = False
        self._inflight: list[Item] | None = None
        self._inflight_taken = False
        #: the next batch from memory and its lines being built while a batch is sent
        self._prepared: tuple[list[Item], Future[list[bytes]]] | None = None
        self._prep_pool: ThreadPoolExecutor | None = None
        self._next_orphan_scan = 0.0
        self._problems = Problems(self._tally, self._dead_letter, self._on_error)
        self._disk = DiskMoves(
            queue=self._queue,
            tally=self._tally,
            order=self._order,
            spill=self._spill,
            redactor=self._redactor,
            max_batch=self._max_batch,
        )
        self._outcomes = Outcomes(
            tally=self._tally,
            problems=self._problems,
            disk=self._disk,
            spill=self._spill,
            order=self._order,
        )

    # -- caller side -----------------------------------------------------------------------

    def put(self, item: Item) -> None:
        """Queue one event (the agent's thread; no network I/O, never raises)."""
        if self._closed:
            self._late(item)
            return
        size = item_bytes(item)
        queue = self._queue
        with self._lock:
            self._tally.n.enqueued += 1
            fits = queue.has_room(size)
            if fits:
                queue.push(item, size)
        if not fits:
            self._overflow(item, size)
        elif len(queue) >= self._max_batch and not self._exporter.down and not self._wake.is_set():
            # ``Event.set()`` takes a lock and notifies: only when it changes something. While
            # the server is down the worker keeps its own probe schedule (waking it per event
            # made it spin and take the interpreter lock from the agent).
            self._wake.set()
        if self._thread is None and not self._thread_failed:
            self._start()

    def reject(self, problem: str, event_id: str) -> None:
        """Count an event ``log()`` refused (bad argument); logs a warning, never raises."""
        self._tally.refused_at_log()
        logger.warning("agentledger: event %s not logged: %s", event_id, problem)

    def _overflow(self, item: Item, size: int) -> None:
        """The memory budget is spent. With a spill, the *oldest* queued events move to disk
        (so disk stays older than memory and order holds); without one, the oldest are
        dropped and counted. Either way the new event is queued."""
        if self._spill is None:
            with self._lock:
                dropped = 0
                while not self._queue.has_room(size):
                    dropped += len(self._queue.pop(1))
                self._queue.push(item, size)
                self._tally.n.dropped += dropped
                self._tally.notify_locked()
            self._wake.set()
            return
        with capture_internal_exceptions("client.overflow"), self._order:
            with self._lock:
                oldest = self._queue.pop(self._max_batch)  # one batch: a short hold
            self._disk.spill_items(oldest, sync=False)
            with self._lock:
                self._queue.push(item, size)
        self._wake.set()

    def _late(self, item: Item) -> None:
        """An event logged after ``close()``: spill it, or count it dropped."""
        with self._lock:
            self._tally.n.enqueued += 1
        with capture_internal_exceptions("client.late_event"):
            if self._spill is not None:
                self._disk.spill_items([item], sync=True)  # counted as dropped if it fails
                self._spill.close()  # unlocked at once: a later client adopts it
                return
            self._tally.outcome(dropped=1, source="memory")
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

    def flush_request(self) -> tuple[Future[bool], Counters]:
        """Ask the worker to deliver everything outstanding now, the backlog of earlier
        processes included (claimed here, so the flush waits for it). Returns the future,
        done when that is settled, and a copy of the counters at the time of the call."""
        self._claim_orphans()
        future, before = self._tally.flush_waiter()
        self._exporter.next_probe = 0.0  # a flush tries a server marked down right away
        if self._thread is None and not self._thread_failed and not self._closed:
            self._start()
        self._wake.set()
        return future, before

    def flush_result(self, before: Counters, started: float, complete: bool) -> FlushResult:
        """A :class:`FlushResult` for the counters since ``before``."""
        return self._tally.flush_result(before, started, complete)

    def sync_flush(self, timeout_s: float) -> FlushResult:
        """Block until every event queued before the call is delivered (or refused or
        dropped) and the adopted backlog is stored, or ``timeout_s`` passed."""
        started = time.monotonic()
        future, before = self.flush_request()
        if self._thread is None:
            self._drain_inline(started + timeout_s)
        return self.flush_result(before, started, _wait(future, started + timeout_s))

    async def async_flush(self, timeout_s: float) -> FlushResult:
        """:meth:`sync_flush` for an event loop: waits without blocking it (and never sends
        from the loop's thread)."""
        started = time.monotonic()
        # claiming orphans reads files: not on the loop's thread
        future, before = await asyncio.to_thread(self.flush_request)
        complete = await _wait_future(future, max(0.0, started + timeout_s - time.monotonic()))
        return self.flush_result(before, started, complete)

    def sync_close(self, timeout_s: float) -> FlushResult:
        """Flush for at most ``timeout_s``, then :meth:`finish_close`; idempotent."""
        started = time.monotonic()
        deadline = started + timeout_s
        future, before = self.flush_request()
        if self._thread is None and not self._closed:
            self._drain_inline(deadline)
        complete = _wait(future, deadline)
        return self.finish_close(before, started, complete, deadline=deadline)

    async def async_close(self, timeout_s: float) -> FlushResult:
        """:meth:`sync_close` for an event loop (waits without blocking it)."""
        started = time.monotonic()
        future, before = await asyncio.to_thread(self.flush_request)
        complete = await _wait_future(future, max(0.0, started + timeout_s - time.monotonic()))
        # spill writes and fsync at close: not on the loop's thread either
        return await asyncio.to_thread(
            self.finish_close, before, started, complete, deadline=started + timeout_s
        )

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
        if thread is not None and thread is not threading.current_thread():
            thread.join(0.05)  # (close() may run on the sender's thread, from on_error)
        with self._order:
            with self._lock:
                left = self._queue.drain()
                inflight: list[Item] = []
                if self._inflight is not None and not self._inflight_taken:
                    inflight = self._inflight
                    self._inflight_taken = True
            self._disk.keep_leftovers(inflight, left, sync=time.monotonic() < deadline)
        complete = complete and self._tally.nothing_outstanding()
        result = self.flush_result(before, started, complete)
        self._exporter.release(close=thread is None or not thread.is_alive())
        if self._prep_pool is not None:
            self._prep_pool.shutdown(wait=False)
        if self._spill is not None:
            with capture_internal_exceptions("client.close_spill"):
                self._spill.close(sync=time.monotonic() < deadline)
        return result

    @property
    def closed(self) -> bool:
        """Whether :meth:`sync_close` / :meth:`finish_close` ran."""
        return self._closed

    def stats(self) -> Stats:
        """Counters since creation (see :class:`~agentledger.client.Stats`)."""
        spill_bytes = 0
        if self._spill is not None:
            with capture_internal_exceptions("client.stats"):
                spill_bytes = self._spill.size_bytes
        with self._lock:
            return self._tally.stats_locked(self._queue.bytes, spill_bytes)

    def after_fork_in_child(self) -> None:
        """Fresh queue, locks, counters and worker in a forked child (field case H19)."""
        spill = self._spill
        self._init_state()
        if spill is not None:
            spill.after_fork_in_child()
        if self._dead_letter is not None:
            self._dead_letter.after_fork_in_child()

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
                    self._spill.sync()  # lines moved to disk by the agent's thread

    def _drain_inline(self, deadline: float) -> None:
        """Send from the calling thread (no worker could be started, e.g. at exit)."""
        with capture_internal_exceptions("client.drain_inline"):
            self._cycle(deadline=deadline)

    def _cycle(self, deadline: float | None) -> None:
        """Deliver until memory and spill are empty, the server is down, or ``deadline``
        (monotonic seconds) passes."""
        exporter = self._exporter
        while not self._abort.is_set() or deadline is not None:
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                return
            if exporter.down:
                if now < exporter.next_probe or not self._send_next(deadline, probe=True):
                    if now >= exporter.next_probe:
                        exporter.probe_failed()
                    self._disk.spill_memory()
                    return
                exporter.mark_up()
                self._problems.solved()
                continue
            if now >= self._next_orphan_scan:
                self._claim_orphans()
            if not self._send_next(deadline, probe=False):
                return
            if deadline is None and not self._send_again_now():
                return  # a partial batch waits for the interval (or a flush, or a full batch)

    def _batch_due(self) -> bool:
        """Whether memory must be sent now, not at the interval: a full batch is queued or a
        flush waits. (Sending each partial batch as soon as the previous answer came turned a
        steady trickle of events into a stream of requests of a few events each, every one
        costing both processes a request's fixed CPU.)"""
        return len(self._queue) >= self._max_batch or self._tally.flush_pending()

    def _send_again_now(self) -> bool:
        """Whether the worker sends again at once rather than waiting for the interval: a
        batch is already prepared, the spill holds lines, or :meth:`_batch_due`."""
        return (
            self._prepared is not None
            or (self._spill is not None and self._spill.has_backlog())
            or self._batch_due()
        )

    def _claim_orphans(self) -> None:
        if self._spill is None:
            return
        self._next_orphan_scan = time.monotonic() + ORPHAN_SCAN_INTERVAL_S
        with capture_internal_exceptions("client.claim_orphans"):
            adopted = self._spill.claim_orphans()
            if adopted:
                self._tally.adopted(adopted)
                logger.info(
                    "agentledger: resending %d events spilled by an earlier process", adopted
                )

    def _send_next(self, deadline: float | None, *, probe: bool) -> bool:
        """Send the oldest pending batch (spill before memory). Returns whether something
        was sent and the server answered; a probe with nothing pending asks ``/health``."""
        spill = self._spill
        batch = None
        nxt: list[Item] = []
        with self._order:
            prepared, self._prepared = self._prepared, None
            backlog = spill is not None and spill.has_backlog()
            if prepared is None and backlog:
                batch = spill.next_batch(self._max_batch) if spill is not None else None
            else:
                with self._lock:
                    items = prepared[0] if prepared else self._queue.pop(self._max_batch)
                    if items and not probe and not backlog and self._pipeline(deadline):
                        nxt = self._queue.pop(self._max_batch)  # prepared during the request
                    self._inflight = (items + nxt) or None
                    self._inflight_taken = False
        if batch is not None:
            segment, lines = batch
            if segment.unreadable:  # lines of an adopted file that are not events
                self._tally.outcome(failed=segment.unreadable, source="backlog")
                segment.unreadable = 0
            answer = self._exporter.export(lines, deadline, single_attempt=probe)
            self._outcomes.spilled(segment, lines, answer)
            return answer.error is None or len(answer.kept) < len(lines)
        if not items:
            return self._exporter.health() if probe else False
        lines = prepared[1].result() if prepared else self._disk.lines(items)
        upcoming = self._prepare(nxt) if nxt else None
        answer = self._exporter.export(lines, deadline, single_attempt=probe)
        fine = not answer.kept and not answer.held and not self._exporter.down
        # from here until the answer's events are placed (counted, spilled, back in memory)
        # close() waits: it must not find the batch neither in flight nor anywhere else
        with self._order:
            with self._lock:
                taken = self._inflight_taken
                if not taken and nxt and fine and upcoming is not None:
                    self._inflight = nxt
                    self._prepared = (nxt, upcoming)  # sent next, before anything else
                    nxt = []
                elif not taken:
                    self._inflight = None
            if taken:
                return True  # close() spilled both batches already; a late success is a duplicate
            if nxt:
                self._disk.return_unsent(nxt, upcoming)
            self._outcomes.memory(items, lines, answer)
        self._problems.report(answer.error)  # callbacks run without the lock
        return len(answer.kept) < len(lines)

    def _pipeline(self, deadline: float | None) -> bool:
        """Whether the next batch is taken now, to be serialised during this request (under
        the lock): while draining for a deadline, or when :meth:`_batch_due`."""
        return deadline is not None or self._batch_due()

    def _prepare(self, items: list[Item]) -> Future[list[bytes]] | None:
        """Serialise the next batch on a helper thread while this one is at the server (the
        worker waits on the socket with the interpreter lock released)."""
        pool = self._prep_pool
        if pool is None:
            try:
                pool = self._prep_pool = ThreadPoolExecutor(1, "agentledger-prepare")
            except RuntimeError:  # no new threads at interpreter exit
                return None
        try:
            return pool.submit(self._disk.lines, items)
        except RuntimeError:
            return None


def _wait(future: Future[bool], deadline: float) -> bool:
    """The flush's ``complete``: ``False`` on timeout or when only parked events are left."""
    try:
        return future.result(timeout=max(0.0, deadline - time.monotonic()))
    except TimeoutError:
        return False


async def _wait_future(future: Future[bool], timeout_s: float) -> bool:
    """:func:`_wait` from an event loop, without blocking it."""
    try:
        return await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(future)), timeout_s)
    except TimeoutError:
        return False
