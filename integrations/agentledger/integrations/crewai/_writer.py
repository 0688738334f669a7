"""Hand mapped CrewAI events to the ledger so links and sessions never depend on arrival order.

Each event names its parent by CrewAI's id (``parent_key``). The writer remembers the ledger
id of each logged scope start and holds back an event whose parent is not logged yet,
releasing it right after the parent, so parents always reach the ledger's queue before their
children whatever order CrewAI's thread pool delivers them in. Events still waiting when
:meth:`LedgerWriter.release_orphans` runs (their parent never came: e.g. a scope opened
before the listener existed) are logged as roots, as the vocabulary asks of an unknown
enclosing run.

When the ledger's ``log()`` takes ``event_id=`` (``agentledger.client.Ledger`` does), every
event is logged under ``ledger_event_id(CrewAI id)`` (UUIDv5): the same CrewAI event always
gets the same ledger id, so a re-sent event is stored once and links can be recomputed from
CrewAI's own ids.

Sessions follow the parent: an event goes to its listener's fixed session, else to its logged
parent's session, else (a root) to a session derived from its own CrewAI id.

Both maps are bounded: ``max_known`` remembered starts (LRU) and
``max_pending`` held events (the oldest is released as a root beyond it).
"""

from __future__ import annotations

import datetime as dt
import inspect
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from agentledger.integrations._shared import InvalidOptionError, TimedLedgerLike

__all__ = ["EVENT_ID_NAMESPACE", "LedgerWriter", "SupportsLedger", "ledger_event_id"]

#: UUIDv5 namespace of ledger event ids derived from CrewAI event ids (fixed forever: changing
#: it would break links between events logged by different versions).
EVENT_ID_NAMESPACE = uuid.UUID("6f1b7c1e-3c55-5b7e-9d0a-3f2b8c1a4e77")


def ledger_event_id(crewai_event_id: str, suffix: str = "") -> str:
    """The ledger ``event_id`` derived from a CrewAI event id (UUIDv5 string, deterministic).

    Args:
        crewai_event_id: CrewAI's ``BaseEvent.event_id``.
        suffix: ``""`` for the main event; a label for an extra event built from the same
            CrewAI event (e.g. ``"retrieval"``).
    """
    name = f"crewai:{crewai_event_id}:{suffix}" if suffix else f"crewai:{crewai_event_id}"
    return str(uuid.uuid5(EVENT_ID_NAMESPACE, name))


def session_of(root_crewai_id: str) -> str:
    """The session id of a root CrewAI scope (UUIDv5 string, deterministic)."""
    return str(uuid.uuid5(EVENT_ID_NAMESPACE, f"crewai-session:{root_crewai_id}"))


class SupportsLedger(TimedLedgerLike, Protocol):
    """What the listener needs from a ledger: :class:`agentledger.client.Ledger`.

    ``log`` (``log(event, data, *, session_id, parent_id, metadata, timestamp)``) must not block; it
    may also accept ``event_id=`` (a caller-chosen UUID string), which the writer then uses.
    ``flush`` waits up to ``timeout_s`` seconds.
    """

    def flush(self, timeout_s: float | None = ...) -> object: ...


def accepts_event_id(log: Callable[..., Any]) -> bool:
    """Whether a ``log`` callable takes a caller-supplied ``event_id`` keyword."""
    try:
        parameters = inspect.signature(log).parameters
    except (TypeError, ValueError):
        return False
    parameter = parameters.get("event_id")
    return parameter is not None and parameter.kind in (
        inspect.Parameter.KEYWORD_ONLY,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
    )


@dataclass(slots=True)
class _Item:
    event: str
    data: dict[str, Any]
    timestamp: dt.datetime | None
    key: str | None  # CrewAI id of a scope start (children name it); None for other events
    crewai_id: str  # the CrewAI event it was built from
    suffix: str  # "" for the main event, a label for an extra one
    parent_key: str | None

    def own_id(self) -> str:
        """The derived ledger id (used when the ledger takes ``event_id=``)."""
        return ledger_event_id(self.crewai_id, self.suffix)


class LedgerWriter:
    """Write mapped events to a ledger, parents first (thread-safe).

    Args:
        ledger: see :class:`SupportsLedger`.
        session_id: fixed session of every event, or ``None`` (one per root).
        metadata: ``metadata`` of every event.
        max_known: scope starts whose ledger id and session are remembered (LRU).
        max_pending: events held back waiting for their parent, at most.

    Raises:
        ValueError: ``max_known`` or ``max_pending`` below 1.
    """

    def __init__(
        self,
        ledger: SupportsLedger,
        *,
        session_id: str | None,
        metadata: Mapping[str, Any] | None,
        max_known: int,
        max_pending: int,
    ) -> None:
        if max_known < 1 or max_pending < 1:
            raise InvalidOptionError("max_known and max_pending must be at least 1")
        self._ledger = ledger
        self._session_id = session_id
        self._metadata = dict(metadata) if metadata else None
        self._derived = accepts_event_id(ledger.log)
        self._max_known = max_known
        self._max_pending = max_pending
        self._lock = threading.RLock()
        self._known: OrderedDict[str, tuple[str, str]] = OrderedDict()
        self._pending: OrderedDict[str, list[_Item]] = OrderedDict()
        self._pending_count = 0
        self.orphans = 0
        self.held = 0

    @property
    def derived_ids(self) -> bool:
        """True when the ledger takes ``event_id=`` and ids are derived from CrewAI's."""
        return self._derived

    @property
    def pending(self) -> int:
        """Events held back because their parent has not been logged yet."""
        with self._lock:
            return self._pending_count

    def write(
        self,
        event: str,
        data: dict[str, Any],
        *,
        timestamp: dt.datetime | None,
        key: str | None,
        crewai_id: str,
        suffix: str = "",
        parent_key: str | None,
    ) -> None:
        """Log one event now, or as soon as its parent is logged.

        Args:
            event: vocabulary event type.
            data: the event's ``data``.
            timestamp: CrewAI's event time (kept as the ledger event time).
            key: the CrewAI id of a scope start (its children name it as ``parent_key``);
                ``None`` for events that are never parents.
            crewai_id: the CrewAI event id it was built from.
            suffix: ``""`` for the main event; a label for an extra event built from the
                same CrewAI event (see :func:`ledger_event_id`).
            parent_key: the CrewAI id of the parent scope start, or ``None`` for a root.
        """
        item = _Item(event, data, timestamp, key, crewai_id, suffix, parent_key)
        with self._lock:
            if parent_key is None:
                self._log(item, None, self._session_id or session_of(key or crewai_id))
                return
            known = self._known.get(parent_key)
            if known is not None:
                self._log(item, known[0], known[1])
            else:
                # Held even with derived ids: a parent that never comes (a listener created
                # mid-run) must leave a root, not a dangling link (vocabulary rule).
                self._hold(item, parent_key)

    def release_orphans(self) -> int:
        """Log every held event as a root (its parent never came); returns how many."""
        with self._lock:
            released = 0
            while self._pending:
                _, items = self._pending.popitem(last=False)
                self._pending_count -= len(items)
                for item in items:
                    self._orphan(item)
                    released += 1
            return released

    # -- internals (called with the lock held) ---------------------------------------------

    def _hold(self, item: _Item, parent_key: str) -> None:
        self._pending.setdefault(parent_key, []).append(item)
        self._pending_count += 1
        self.held += 1
        while self._pending_count > self._max_pending:
            _, items = self._pending.popitem(last=False)
            self._pending_count -= len(items)
            for old in items:
                self._orphan(old)

    def _orphan(self, item: _Item) -> None:
        self.orphans += 1
        self._log(item, None, self._session_id or session_of(item.parent_key or item.crewai_id))

    def _log(self, first: _Item, parent_id: str | None, session: str) -> None:
        """Log ``first``, then every held descendant it unblocks (parents first).

        If the ledger raises for one event, the others are still logged; the first error is
        re-raised at the end (the children of an event that failed stay held and become
        orphans at :meth:`release_orphans`).
        """
        stack = [(first, parent_id, session)]
        error: Exception | None = None
        while stack:
            item, parent, sess = stack.pop()
            kwargs: dict[str, Any] = {
                "session_id": sess,
                "parent_id": parent,
                "metadata": self._metadata,
                "timestamp": item.timestamp,
            }
            if self._derived:
                kwargs["event_id"] = item.own_id()
            try:
                ref = self._ledger.log(item.event, item.data, **kwargs)
            except Exception as exc:
                error = error or exc
                continue
            if item.key is None:
                continue
            ledger_id = ref.event_id
            self._known[item.key] = (ledger_id, sess)
            self._known.move_to_end(item.key)
            while len(self._known) > self._max_known:
                self._known.popitem(last=False)
            children = self._pending.pop(item.key, None)
            if children:
                self._pending_count -= len(children)
                stack.extend((child, ledger_id, sess) for child in reversed(children))
        if error is not None:
            raise error
