"""The background sender's event counters and the flush waiters they complete.

One lock (:attr:`Tally.lock`) guards the counters, the waiters and the sender's queue, so an
event is counted and queued in one step. Methods named ``*_locked`` expect the caller to hold it.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future

from agentledger.client._models import FlushResult, Stats

__all__ = ["Counters", "Tally"]


class Counters:
    """Event counts since the sender was made (``settled``: events that left the queue for
    good: sent, spilled, dropped or rejected)."""

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
        self.settled = 0

    def copy(self) -> Counters:
        """A snapshot of the counts."""
        copy = Counters()
        for name in Counters.__slots__:
            setattr(copy, name, getattr(self, name))
        return copy


class _Waiter:
    __slots__ = ("future", "target")

    def __init__(self, target: int) -> None:
        self.target = target
        self.future: Future[None] = Future()


class Tally:
    """Counters plus the futures of pending flushes, each done once ``settled`` reaches the
    number of events enqueued when its flush was asked."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.n = Counters()
        self._waiters: list[_Waiter] = []

    def notify_locked(self) -> None:
        """Complete the waiters whose events are all settled."""
        if not self._waiters:
            return
        settled = self.n.settled
        remaining = []
        for waiter in self._waiters:
            if waiter.future.done():
                continue
            if settled >= waiter.target:
                waiter.future.set_result(None)
            else:
                remaining.append(waiter)
        self._waiters = remaining

    def settle_locked(self, *, spilled: int = 0, dropped: int = 0, failed: int = 0) -> None:
        """Count events that left the queue for good, then notify the waiters."""
        n = self.n
        n.spilled += spilled
        n.dropped += dropped
        n.failed += failed
        n.settled += spilled + dropped + failed
        self.notify_locked()

    def settle(self, *, spilled: int = 0, dropped: int = 0, failed: int = 0) -> None:
        """:meth:`settle_locked` under the lock."""
        with self.lock:
            self.settle_locked(spilled=spilled, dropped=dropped, failed=failed)

    def answered(
        self, *, lines: int, ok: int, duplicates: int, failed: int, from_spill: bool
    ) -> None:
        """Count the server's answer to a batch of ``lines`` events. Resent spill lines were
        settled when they were spilled: they count as ``unspilled`` instead."""
        with self.lock:
            n = self.n
            n.sent += ok
            n.duplicates += duplicates
            n.failed += failed
            if from_spill:
                n.unspilled += ok
            else:
                n.settled += lines
            self.notify_locked()

    def retried(self, count: int) -> None:
        """Count ``count`` events about to be sent again."""
        with self.lock:
            self.n.retried += count

    def flush_waiter(self) -> tuple[Future[None], Counters]:
        """A future done when every event enqueued so far is settled, and the counts now."""
        with self.lock:
            waiter = _Waiter(self.n.enqueued)
            before = self.n.copy()
            if self.n.settled >= waiter.target:
                waiter.future.set_result(None)
            else:
                self._waiters.append(waiter)
        return waiter.future, before

    def flush_result(self, before: Counters, started: float, complete: bool) -> FlushResult:
        """A :class:`FlushResult` for the counts since ``before`` (``started``: monotonic)."""
        with self.lock:
            now = self.n
            return FlushResult(
                complete=complete,
                sent=now.sent - before.sent,
                spilled=now.spilled - before.spilled,
                dropped=now.dropped + now.failed - before.dropped - before.failed,
                pending=max(0, now.enqueued - now.settled),
                elapsed_s=time.monotonic() - started,
            )

    def all_settled(self) -> bool:
        """Every event enqueued so far is settled."""
        with self.lock:
            return self.n.settled >= self.n.enqueued

    def stats_locked(self, queue_depth: int, spill_bytes: int) -> Stats:
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
            queue_depth=queue_depth,
            spill_bytes=spill_bytes,
        )
