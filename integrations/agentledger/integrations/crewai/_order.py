"""Deliver CrewAI events to the listener causes first: a start before its end and children.

CrewAI runs sync handlers on a 10-thread pool, so they start in no particular order: a model
call's end can reach the listener before its
start, a tool call before the agent step around it. CrewAI stamps each event, at emit time,
with the start it closes (``started_event_id``) or the start of its enclosing scope
(``parent_event_id``). The :class:`Sequencer` delivers an event only after that event has been
delivered, so the listener always sees a scope's start before anything inside it and before
its end, whatever order the pool ran the handlers in. Events of unrelated branches keep the
order they arrived in.

An event whose cause will never arrive must not wait forever:

* an event naming no cause (a root, e.g. ``crew_kickoff_started``) is delivered at once;
* an event waiting longer than ``max_wait_s`` is delivered on the next arrival (its cause was
  emitted before the listener existed);
* :meth:`Sequencer.release` (called by the listener's ``flush``) delivers everything held.

Ordering here, inside the cheap sync handlers, costs a dict lookup per event; CrewAI's
alternative, ``async def`` handlers run in order on its event-loop thread, costs a cross-thread
hop per event that measured ~150 µs of CPU (``benchmarks/bench_crewai.py``).

No handler thread ever waits for another (flat combining): :meth:`Sequencer.arrive` appends
the event to an inbox and returns at once unless it can take the lock without blocking; the
thread holding it processes every event in the inbox. Up to 10 pool threads calling the
listener at once therefore never queue up on a lock (a convoy that cost more CPU than the
mapping itself).

Memory is bounded: ``max_seen`` delivered ids are remembered (LRU) and at
most ``max_held`` events wait; beyond it the oldest waiting group is delivered at once.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Any

from agentledger.integrations._shared import InvalidOptionError

__all__ = ["Sequencer"]

Deliver = Callable[[Any, Any], None]


class Sequencer:
    """Deliver ``(source, event)`` pairs after the event they depend on (thread-safe).

    Args:
        deliver: called as ``deliver(source, event)`` once per event, causes first, with the
            sequencer's lock held (so calls never overlap), on whichever handler thread holds
            the lock. It must not raise.
        max_seen: delivered event ids remembered (LRU).
        max_held: events waiting for their cause, at most.
        max_wait_s: longest wait (seconds) for a cause before delivering anyway.

    Raises:
        ValueError: a bound below 1 or ``max_wait_s`` not positive.
    """

    def __init__(
        self, deliver: Deliver, *, max_seen: int, max_held: int, max_wait_s: float
    ) -> None:
        if max_seen < 1 or max_held < 1 or max_wait_s <= 0:
            raise InvalidOptionError("max_seen and max_held must be >= 1 and max_wait_s > 0")
        self._deliver = deliver
        self._max_seen = max_seen
        self._max_held = max_held
        self._max_wait_s = max_wait_s
        self._lock = threading.Lock()
        self._inbox: deque[tuple[Any, Any, float]] = deque()
        self._seen: OrderedDict[str, None] = OrderedDict()
        # cause event id -> events waiting for it, each with its arrival time
        self._waiting: OrderedDict[str, list[tuple[Any, Any, float]]] = OrderedDict()
        self._held_now = 0
        self.reordered = 0
        self.released_early = 0

    @property
    def lock(self) -> threading.Lock:
        """The lock deliveries run under (hold it to touch what they touch)."""
        return self._lock

    @property
    def held(self) -> int:
        """Events waiting for their cause right now."""
        with self._lock:
            return self._held_now

    def arrive(self, source: Any, event: Any) -> None:
        """Deliver ``event`` once its cause was delivered (or at once if it has none).

        The cause is ``started_event_id`` (an end event's start), else ``parent_event_id``.
        Returns without waiting when another thread is delivering: that thread takes this
        event from the inbox too.
        """
        self._inbox.append((source, event, time.monotonic()))
        while self._inbox:  # re-check after releasing: an event may have come in meanwhile
            if not self._lock.acquire(blocking=False):
                return
            try:
                while self._inbox:
                    self._take(*self._inbox.popleft())
            finally:
                self._lock.release()

    def release(self) -> int:
        """Deliver every held event (oldest wait first); returns how many."""
        with self._lock:
            while self._inbox:
                self._take(*self._inbox.popleft())
            released = 0
            while self._waiting:
                released += self._release_oldest()
            return released

    # -- internals (lock held) -------------------------------------------------------------

    def _take(self, source: Any, event: Any, arrived: float) -> None:
        cause = getattr(event, "started_event_id", None) or getattr(event, "parent_event_id", None)
        if cause is None or cause in self._seen:
            self._deliver_chain(source, event)
        else:
            self._waiting.setdefault(cause, []).append((source, event, arrived))
            self._held_now += 1
            self.reordered += 1
            if self._held_now > self._max_held:
                self._release_oldest()
        self._release_stale(time.monotonic())

    def _release_oldest(self) -> int:
        _, items = self._waiting.popitem(last=False)
        self._held_now -= len(items)
        self.released_early += len(items)
        for source, event, _ in items:
            self._deliver_chain(source, event)
        return len(items)

    def _release_stale(self, now: float) -> None:
        while self._waiting:
            first = next(iter(self._waiting.values()))
            if now - first[0][2] < self._max_wait_s:
                return
            self._release_oldest()

    def _deliver_chain(self, source: Any, event: Any) -> None:
        stack = [(source, event)]
        while stack:
            src, evt = stack.pop()
            self._deliver(src, evt)
            event_id = evt.event_id
            self._seen[event_id] = None
            if len(self._seen) > self._max_seen:
                self._seen.popitem(last=False)
            followers = self._waiting.pop(event_id, None)
            if followers:
                self._held_now -= len(followers)
                # a start's children and its end: deliver them in arrival order
                stack.extend((s, e) for s, e, _ in reversed(followers))
