"""What the background sender reports: ``flush()`` results and ``stats()`` counters."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FlushResult", "Stats"]


@dataclass(frozen=True, slots=True)
class FlushResult:
    """What ``flush(timeout_s)`` achieved.

    Attributes:
        complete: every event logged before the call was settled (sent, spilled or dropped).
        sent: events the server acknowledged during the flush.
        spilled: events written to the disk spill during the flush.
        dropped: events lost during the flush (queue overflow without spill, rejected items).
        pending: events still queued or in flight when the flush returned.
        elapsed_s: wall time the flush took (seconds).
    """

    complete: bool
    sent: int
    spilled: int
    dropped: int
    pending: int
    elapsed_s: float


@dataclass(frozen=True, slots=True)
class Stats:
    """Counters since the client was made (``stats()``); all are event counts.

    Attributes:
        enqueued: events accepted by ``log()``.
        sent: events the server acknowledged (including ``duplicate`` answers).
        duplicates: acknowledged events the server already had (retries, spill resends).
        retried: send attempts repeated after a retryable failure (counted per event).
        spilled: events written to the disk spill.
        unspilled: spilled events later delivered from the spill.
        dropped: events lost (queue full without spill, spill cap reached).
        failed: events the server rejected for good (422 on the item).
        queue_depth: events waiting in memory now.
        spill_bytes: bytes in this client's spill directory now.
    """

    enqueued: int
    sent: int
    duplicates: int
    retried: int
    spilled: int
    unspilled: int
    dropped: int
    failed: int
    queue_depth: int
    spill_bytes: int
