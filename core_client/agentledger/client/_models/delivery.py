"""What the background sender reports: ``flush()`` results, ``stats()`` counters, and the
:class:`DeliveryError` handed to ``on_error``.

Every event a client logs is, at any moment, in exactly one of these places: stored by the
server, refused for good (``failed``, of which ``dead_lettered`` were written to the
dead-letter file), ``dropped``, in memory (queued or in flight), or in this process's spill.
So ``enqueued == sent + failed + dropped + in_memory + in_spill`` always holds. Events spilled
by earlier processes and adopted by this one are counted apart (``backlog_*``).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DeliveryError", "FlushResult", "Stats"]


@dataclass(frozen=True, slots=True)
class FlushResult:
    """What ``flush(timeout_s)`` or ``close(timeout_s)`` achieved.

    ``complete`` is ``True`` only when every event logged before the call reached a final
    outcome (stored, refused or dropped) and no adopted backlog is left: nothing of it is
    still in memory or on disk. Otherwise the ``in_*`` fields say where the rest is.

    Attributes:
        complete: nothing logged before the call is outstanding (see above).
        sent: events the server stored during the call (adopted backlog included).
        spilled: events written to the disk spill during the call.
        dropped: events lost during the call (no spill and no room, spill cap reached).
        failed: events the server refused for good during the call.
        dead_lettered: of ``failed``, those written to the dead-letter file.
        pending: events still outstanding when the call returned
            (``in_memory + in_spill + in_backlog``), events logged meanwhile included.
        in_memory: events of this process queued or in flight.
        in_spill: events of this process in its spill files, not yet stored.
        in_backlog: events of earlier processes adopted from the spill, not yet stored.
        elapsed_s: wall time the call took (seconds).
    """

    complete: bool
    sent: int
    spilled: int
    dropped: int
    pending: int
    elapsed_s: float
    failed: int = 0
    dead_lettered: int = 0
    in_memory: int = 0
    in_spill: int = 0
    in_backlog: int = 0


@dataclass(frozen=True, slots=True)
class Stats:
    """Counters since the client was made (``stats()``); all counts are events.

    ``enqueued == sent + failed + dropped + in_memory + in_spill`` (see the module notes).

    Attributes:
        enqueued: events ``log()`` accepted or refused (every call counts once).
        sent: events of this process the server stored (``duplicate`` answers included).
        duplicates: of ``sent``, events the server already had (retries, spill resends).
        retried: send attempts repeated after a retryable failure (counted per event).
        spilled: events of this process written to the disk spill (cumulative).
        unspilled: of ``spilled``, events later stored from the spill.
        dropped: events lost (no spill and no room in memory, spill cap or disk full).
        failed: events refused for good (by ``log()`` or by the server, per item).
        dead_lettered: of ``failed``, events written to the dead-letter file.
        queue_depth: events in memory now (queued or in flight).
        in_spill: events of this process in the spill now, not yet stored.
        in_backlog: events adopted from earlier processes' spill, not yet stored.
        backlog_adopted: events adopted from earlier processes' spill (cumulative).
        backlog_sent: of those, events stored.
        backlog_failed: of those, events refused for good (dead-lettered when possible).
        spill_bytes: bytes in this client's spill directory now.
        queue_bytes: estimated bytes of the events in memory now.
        last_error: the last configuration or delivery error (``None`` while all is well).
        last_error_kind: its :attr:`DeliveryError.kind` (``"unauthorized"``, ``"forbidden"``,
            ``"not_found"``, ``"unavailable"``), or ``None``.
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
    dead_lettered: int = 0
    in_spill: int = 0
    in_backlog: int = 0
    backlog_adopted: int = 0
    backlog_sent: int = 0
    backlog_failed: int = 0
    queue_bytes: int = 0
    last_error: str | None = None
    last_error_kind: str | None = None


@dataclass(frozen=True, slots=True)
class DeliveryError:
    """A problem the sender cannot solve by retrying, passed to ``on_error``.

    Attributes:
        kind: ``"unauthorized"`` (401), ``"forbidden"`` (403: read-only key, or an agent the
            key may not write), ``"not_found"`` (404: wrong URL path), ``"rejected"`` (the
            server refused events for good; they are dead-lettered), or ``"unavailable"``
            (the server does not answer; events are kept and retried).
        status: the HTTP status, when there was one.
        message: what happened and where the events are.
        events: how many events the problem concerned.
    """

    kind: str
    status: int | None
    message: str
    events: int
