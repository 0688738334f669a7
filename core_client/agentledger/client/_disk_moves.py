"""Moving events of the sender between memory and disk: to the spill (in order, and
before what it holds when they are older), back to memory when the spill refuses them,
parked for another key, and what is left at close (docs/design/client-sender.md)."""

from __future__ import annotations

import threading
from concurrent.futures import Future

from agentledger.client._guard import capture_internal_exceptions, logger
from agentledger.client._queue import EventQueue
from agentledger.client._redaction import ClientRedactor
from agentledger.client._spill import SpillStore
from agentledger.client._tally import Tally
from agentledger.client._wire import Item, item_line

__all__ = ["DiskMoves"]


class DiskMoves:
    """The sender's moves to and from the spill; shares the sender's queue and locks.

    Args:
        queue: the sender's queue (guarded by ``tally.lock``).
        tally: the sender's counters.
        order: held while events move to disk, so nothing newer overtakes them.
        spill: the disk spill, or ``None``.
        redactor: applied before a line is written.
        max_batch: events per write while the server is away.
    """

    def __init__(
        self,
        *,
        queue: EventQueue,
        tally: Tally,
        order: threading.RLock,
        spill: SpillStore | None,
        redactor: ClientRedactor | None,
        max_batch: int,
    ) -> None:
        self._queue = queue
        self._tally = tally
        self._lock = tally.lock
        self._order = order
        self._spill = spill
        self._redactor = redactor
        self._max_batch = max_batch
        self._full = False  # the spill refused lines (warned once until a write succeeds)

    def keep_leftovers(self, inflight: list[Item], left: list[Item], *, sync: bool) -> None:
        """At close: spill (or drop) the batch that was in flight and what is still queued,
        in that order (the caller holds the order lock)."""
        if not left and not inflight:
            return
        if self._spill is None:
            self._tally.outcome(dropped=len(left) + len(inflight), source="memory")
            logger.warning(
                "agentledger: %d unsent events dropped at close (no spill)",
                len(left) + len(inflight),
            )
            return
        with capture_internal_exceptions("client.close_spill"):
            if inflight:
                self.spill_items(inflight, sync=sync, first=True)
            if left:
                self.spill_items(left, sync=sync)

    def lines(self, items: list[Item]) -> list[bytes]:
        """The wire lines of ``items`` (redacted)."""
        redactor = self._redactor
        return [item_line(item, redactor) for item in items]

    def spill_items(self, items: list[Item], *, sync: bool, first: bool = False) -> int:
        """:meth:`spill_lines` of the items' wire lines."""
        return self.spill_lines(self.lines(items), sync=sync, first=first)

    def spill_lines(
        self, lines: list[bytes], *, sync: bool, first: bool = False, drop: bool = True
    ) -> int:
        """Write events of this process to the spill and count them; returns how many were
        written. Appended, the oldest lines that fit under the cap are written; ``first``
        (before what the spill holds) writes all or none. Lines the cap or the disk refuses
        are counted as dropped (``drop``) or left to the caller, who keeps them in memory."""
        assert self._spill is not None
        try:
            if first:
                written = len(lines) if self._spill.prepend(lines) else 0
            else:
                written = self._spill.append_fitting(lines, sync=sync)
            problem = "spill full (max_spill_bytes)"
        except OSError as error:
            written = 0
            problem = f"spill write failed: {error}"
        if written:
            self._tally.spilled(written)
        left = len(lines) - written
        if not left:
            self._full = False
            return written
        if drop:
            self._tally.outcome(dropped=left, source="memory")
        if not self._full:  # once per episode, not per cycle
            self._full = True
            logger.warning(
                "agentledger: %s; %d events %s",
                problem,
                left,
                "dropped" if drop else "kept in memory",
            )
        return written

    def spill_memory(self) -> None:
        """While the server is away: move queued events to the spill, a batch per fsync
        (they stay in memory when the spill refuses them)."""
        if self._spill is None:
            return
        with self._order:
            while True:
                with self._lock:
                    items = self._queue.pop(self._max_batch)
                if not items:
                    return
                written = self.spill_lines(self.lines(items), sync=True, drop=False)
                if written < len(items):
                    self.back_to_memory(items[written:])
                    return

    def back_to_memory(self, items: list[Item]) -> None:
        """Put events back at the head of the queue; past its budget the oldest are dropped
        (and counted), as without a spill."""
        with self._lock:
            queue = self._queue
            queue.push_front(items)
            dropped = 0
            while len(queue) > 1 and (
                len(queue) > queue.max_items or queue.bytes > queue.max_bytes
            ):
                dropped += len(queue.pop(1))
            if dropped:
                self._tally.n.dropped += dropped
                self._tally.notify_locked()
        if dropped:
            logger.warning("agentledger: queue full; %d oldest events dropped", dropped)

    def hold(self, lines: list[bytes], items: list[Item]) -> None:
        """Park events this key may not write (per-event 401/403) in the spill for a client
        with another key; the rest keeps flowing. Without a spill they count as failed."""
        if self._spill is not None:
            try:
                parked = self._spill.hold(lines)
            except OSError as error:
                logger.warning("agentledger: spill write failed: %s", error)
                parked = False
            if parked:
                with self._lock:
                    self._tally.spilled_locked(len(lines))
                self._tally.held_back(own=len(lines), adopted=0)
                return
        self._tally.outcome(failed=len(items), source="memory")
        logger.error(
            "agentledger: %d event(s) refused for this key could not be kept (no spill room)",
            len(items),
        )

    def return_unsent(self, items: list[Item], lines: Future[list[bytes]] | None) -> None:
        """A batch taken ahead but not sent: it goes back before everything newer. When
        newer events moved to the spill meanwhile, it goes to the spill's head (the batch
        just sent, if kept, is put before it afterwards), else to the queue's head."""
        with self._order:
            spill = self._spill
            if spill is not None and spill.has_own_backlog():
                ready = lines.result() if lines is not None else self.lines(items)
                if self.spill_lines(ready, sync=True, first=True, drop=False):
                    return
            with self._lock:
                self._queue.push_front(items)
