"""The sender's event counters and the flush waiters they complete.

One lock (:attr:`Tally.lock`) guards the counters, the waiters and the sender's queue, so an
event is counted and queued in one step. Methods named ``*_locked`` expect the caller to hold
it. The bookkeeping identity ``enqueued == sent + failed + dropped + in_memory + in_spill``
holds whenever the lock is free (``in_memory`` = queued + in flight).
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future

from agentledger.client._models import FlushResult, Stats

__all__ = ["Counters", "Tally"]


class Counters:
    """Event counts since the sender was made (see :class:`~agentledger.client.Stats`)."""

    __slots__ = (
        "backlog_adopted",
        "backlog_failed",
        "backlog_held",
        "backlog_sent",
        "dead_lettered",
        "dropped",
        "duplicates",
        "enqueued",
        "failed",
        "held",
        "in_backlog",
        "in_spill",
        "refused_at_log",
        "retried",
        "sent",
        "spilled",
        "unspilled",
    )

    def __init__(self) -> None:
        for name in Counters.__slots__:
            setattr(self, name, 0)

    enqueued: int
    sent: int
    duplicates: int
    retried: int
    spilled: int
    unspilled: int
    dropped: int
    failed: int
    dead_lettered: int
    in_spill: int
    in_backlog: int
    backlog_adopted: int
    backlog_sent: int
    backlog_failed: int
    held: int
    backlog_held: int
    refused_at_log: int

    def copy(self) -> Counters:
        """A snapshot of the counts."""
        copy = Counters()
        for name in Counters.__slots__:
            setattr(copy, name, getattr(self, name))
        return copy

    @property
    def final(self) -> int:
        """Events of this process with a final outcome (stored, refused or dropped)."""
        return self.sent + self.failed + self.dropped


class _Waiter:
    __slots__ = ("future", "target")

    def __init__(self, target: int) -> None:
        self.target = target
        #: ``True``: all delivered; ``False``: only events parked for another key are left
        self.future: Future[bool] = Future()


class Tally:
    """Counters plus the futures of pending flushes. A flush's future is done once every
    event enqueued before it has a final outcome and no adopted backlog is left."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.n = Counters()
        self.last_error: str | None = None
        self.last_error_kind: str | None = None
        self._waiters: list[_Waiter] = []

    def notify_locked(self) -> None:
        """Complete the waiters whose events are all settled."""
        if not self._waiters:
            return
        n = self.n
        final = n.final - n.refused_at_log  # refusals by log() never wait for anything
        parked = n.held + n.backlog_held
        remaining = []
        for waiter in self._waiters:
            if waiter.future.done():
                continue
            if final >= waiter.target and n.in_backlog == 0:
                waiter.future.set_result(True)
            elif parked and final + n.held >= waiter.target and n.in_backlog == n.backlog_held:
                waiter.future.set_result(False)  # nothing more this process can deliver
            else:
                remaining.append(waiter)
        self._waiters = remaining

    # -- own events ------------------------------------------------------------------------

    def spilled_locked(self, count: int) -> None:
        """``count`` events of this process (from memory) were written to the spill."""
        n = self.n
        n.spilled += count
        n.in_spill += count

    def outcome(
        self,
        *,
        stored: int = 0,
        duplicates: int = 0,
        failed: int = 0,
        dead_lettered: int = 0,
        dropped: int = 0,
        source: str,
    ) -> None:
        """Final outcomes of events from ``source``: ``"memory"`` (taken from the queue),
        ``"spill"`` (this process's spill) or ``"backlog"`` (an adopted segment)."""
        with self.lock:
            n = self.n
            count = stored + failed + dropped
            if source == "backlog":
                n.backlog_sent += stored
                n.backlog_failed += failed + dropped
                n.in_backlog -= count
            else:
                n.sent += stored
                n.failed += failed
                n.dropped += dropped
                if source == "spill":
                    n.unspilled += stored
                    n.in_spill -= count
            n.duplicates += duplicates
            n.dead_lettered += dead_lettered
            self.notify_locked()

    def held_back(self, *, own: int, adopted: int) -> None:
        """Events parked on disk because this key may not write them (they stay counted in
        ``in_spill`` / ``in_backlog``: that is where they are)."""
        with self.lock:
            self.n.held += own
            self.n.backlog_held += adopted
            self.notify_locked()

    def spilled(self, count: int) -> None:
        """:meth:`spilled_locked` under the lock."""
        with self.lock:
            self.spilled_locked(count)

    def adopted(self, count: int) -> None:
        """``count`` events of earlier processes were claimed from the spill."""
        with self.lock:
            self.n.backlog_adopted += count
            self.n.in_backlog += count

    def refused_at_log(self) -> None:
        """An event ``log()`` refused: enqueued and failed in one step."""
        with self.lock:
            n = self.n
            n.enqueued += 1
            n.failed += 1
            n.refused_at_log += 1
            self.notify_locked()

    def retried(self, count: int) -> None:
        """Count ``count`` events about to be sent again."""
        with self.lock:
            self.n.retried += count

    def error(self, message: str | None, kind: str | None = None) -> None:
        """Remember the last delivery problem (``None``: solved)."""
        with self.lock:
            self.last_error = message
            self.last_error_kind = kind

    # -- flush -----------------------------------------------------------------------------

    def flush_pending(self) -> bool:
        """Whether a flush (or close) waits for events: the sender then sends every partial
        batch at once instead of waiting for the interval. Read without the lock (a hint;
        a flush that starts meanwhile also wakes the sender)."""
        return bool(self._waiters)

    def flush_waiter(self) -> tuple[Future[bool], Counters]:
        """A future done when every event enqueued so far has a final outcome and the
        adopted backlog is empty, and the counts now."""
        with self.lock:
            waiter = _Waiter(self.n.enqueued - self.n.refused_at_log)
            before = self.n.copy()
            self._waiters.append(waiter)
            self.notify_locked()
        return waiter.future, before

    def flush_result(self, before: Counters, started: float, complete: bool) -> FlushResult:
        """A :class:`FlushResult` for the counts since ``before`` (``started``: monotonic)."""
        with self.lock:
            now = self.n
            in_memory = now.enqueued - now.final - now.in_spill
            return FlushResult(
                complete=complete,
                sent=now.sent + now.backlog_sent - before.sent - before.backlog_sent,
                spilled=now.spilled - before.spilled,
                dropped=now.dropped - before.dropped,
                failed=now.failed + now.backlog_failed - before.failed - before.backlog_failed,
                dead_lettered=now.dead_lettered - before.dead_lettered,
                pending=in_memory + now.in_spill + now.in_backlog,
                in_memory=in_memory,
                in_spill=now.in_spill,
                in_backlog=now.in_backlog,
                elapsed_s=time.monotonic() - started,
            )

    def nothing_outstanding(self) -> bool:
        """Every event enqueued so far has a final outcome and no backlog is left."""
        with self.lock:
            n = self.n
            return n.final >= n.enqueued and n.in_backlog == 0

    def stats_locked(self, queue_bytes: int, spill_bytes: int) -> Stats:
        """The public :class:`Stats` of the counts."""
        n = self.n
        return Stats(
            enqueued=n.enqueued,
            sent=n.sent,
            duplicates=n.duplicates,
            retried=n.retried,
            spilled=n.spilled,
            unspilled=n.unspilled,
            dropped=n.dropped,
            failed=n.failed,
            queue_depth=n.enqueued - n.final - n.in_spill,
            spill_bytes=spill_bytes,
            dead_lettered=n.dead_lettered,
            in_spill=n.in_spill,
            in_backlog=n.in_backlog,
            backlog_adopted=n.backlog_adopted,
            backlog_sent=n.backlog_sent,
            backlog_failed=n.backlog_failed,
            queue_bytes=queue_bytes,
            last_error=self.last_error,
            last_error_kind=self.last_error_kind,
        )
