"""Hand mapped CrewAI events to the ledger so links and sessions never depend on arrival order.

Each event names its parent and its further causes by writer keys (``parent_key``,
``causes``): CrewAI's id of a scope start, or ``end:<start id>`` of the event closing it. The
writer remembers the ledger id of each logged keyed event and holds back an event whose
parent or causes are not logged yet, releasing it right after the last of them, so causes
always reach the ledger's queue before their effects whatever order CrewAI's thread pool
delivers them in. Events still waiting when
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
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from agentledger.integrations._shared import (
    InvalidOptionError,
    TimedLedgerLike,
    accepts_causes,
    accepts_keywords,
)

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
    return accepts_keywords(log, "event_id")


@dataclass(slots=True)
class _Item:
    event: str
    data: dict[str, Any]
    timestamp: dt.datetime | None
    key: str | None  # writer key effects name it by (a start's CrewAI id, "end:<start id>")
    crewai_id: str  # the CrewAI event it was built from
    suffix: str  # "" for the main event, a label for an extra one
    parent_key: str | None
    causes: tuple[tuple[str, str], ...]  # (writer key, edge kind)
    scope_key: str | None

    def own_id(self) -> str:
        """The derived ledger id (used when the ledger takes ``event_id=``)."""
        return ledger_event_id(self.crewai_id, self.suffix)


class LedgerWriter:
    """Write mapped events to a ledger, parents first (thread-safe).

    Args:
        ledger: see :class:`SupportsLedger`.
        session_id: fixed session of every event, or ``None`` (one per root).
        metadata: ``metadata`` of every event.
        max_known: logged events whose ledger id and session are remembered (LRU).
        max_pending: events held back waiting for their parent, at most.
        on_error: called (inside the ``except`` block) for each event the ledger raised
            on; without it the first such exception is re-raised after the others are
            logged.

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
        on_error: Callable[[], None] | None = None,
    ) -> None:
        if max_known < 1 or max_pending < 1:
            raise InvalidOptionError("max_known and max_pending must be at least 1")
        self._ledger = ledger
        self._session_id = session_id
        self._metadata = dict(metadata) if metadata else None
        self._derived = accepts_event_id(ledger.log)
        self._links = accepts_causes(ledger)
        self._on_error = on_error
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
        causes: Sequence[tuple[str, str]] = (),
        scope_key: str | None = None,
    ) -> None:
        """Log one event now, or as soon as its parent and causes are logged.

        Args:
            event: vocabulary event type.
            data: the event's ``data``.
            timestamp: CrewAI's event time (kept as the ledger event time).
            key: the CrewAI id of a scope start (its children name it as ``parent_key``);
                ``None`` for events that are never parents.
            crewai_id: the CrewAI event id it was built from.
            suffix: ``""`` for the main event; a label for an extra event built from the
                same CrewAI event (see :func:`ledger_event_id`).
            parent_key: the writer key of the primary cause, or ``None`` for a root.
            causes: ``(writer key, edge kind)`` of further causes (an entry naming
                ``parent_key`` labels the parent edge).
            scope_key: the writer key of the enclosing step, when it is not the parent.
        """
        item = _Item(
            event, data, timestamp, key, crewai_id, suffix, parent_key, tuple(causes), scope_key
        )
        with self._lock:
            self._log(item)

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
        """Log a held event now: with the causes that were logged; a root if its parent was
        not (an unknown enclosing run leaves a root, never a dangling link)."""
        self._log(item, waiting=False)

    def _unknown(self, item: _Item) -> str | None:
        """The first of ``item``'s parent and causes not logged yet."""
        for key in (item.parent_key, *(cause for cause, _ in item.causes)):
            if key is not None and key not in self._known:
                return key
        return None

    def _links_of(self, item: _Item) -> dict[str, Any]:
        """``parent_id``, ``session_id``, ``caused_by`` and ``scope_id`` of ``item``."""
        known = self._known.get(item.parent_key) if item.parent_key is not None else None
        if known is not None:
            parent, session = known
        else:
            if item.parent_key is not None:
                self.orphans += 1
            root = item.parent_key or item.key or item.crewai_id
            parent, session = None, self._session_id or session_of(root)
        links: dict[str, Any] = {"session_id": session, "parent_id": parent}
        if not self._links:
            return links
        causes = [
            (self._known[key][0], kind)
            for key, kind in item.causes
            if key in self._known and (key != item.parent_key or parent is not None)
        ]
        if causes:
            links["caused_by"] = causes
        scope = self._known.get(item.scope_key) if item.scope_key is not None else None
        if scope is not None and scope[0] != parent:
            links["scope_id"] = scope[0]
        return links

    def _log(self, first: _Item, *, waiting: bool = True) -> None:
        """Log ``first`` (or hold it while ``waiting`` for an unlogged cause), then every held
        event it unblocks (causes first).

        If the ledger raises for one event, the others are still logged; the first error is
        re-raised at the end (the effects of an event that failed stay held and are logged
        without it at :meth:`release_orphans`).
        """
        stack = [first]
        error: Exception | None = None
        while stack:
            item = stack.pop()
            unknown = self._unknown(item) if waiting or item is not first else None
            if unknown is not None:
                # Held even with derived ids: a cause that never comes (a listener created
                # mid-run) must not leave a dangling link.
                self._hold(item, unknown)
                continue
            links = self._links_of(item)
            kwargs: dict[str, Any] = {
                **links,
                "metadata": self._metadata,
                "timestamp": item.timestamp,
            }
            if self._derived:
                kwargs["event_id"] = item.own_id()
            try:
                ref = self._ledger.log(item.event, item.data, **kwargs)
            except Exception as exc:
                if self._on_error is None:
                    error = error or exc
                else:
                    self._on_error()
                continue
            if item.key is None:
                continue
            self._known[item.key] = (ref.event_id, links["session_id"])
            self._known.move_to_end(item.key)
            while len(self._known) > self._max_known:
                self._known.popitem(last=False)
            children = self._pending.pop(item.key, None)
            if children:
                self._pending_count -= len(children)
                stack.extend(reversed(children))
        if error is not None:
            raise error
