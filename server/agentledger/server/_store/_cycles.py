"""Cause edges that would close a cycle are refused at write time.

An event may name causes that are not stored yet (events of several agents arrive in any
order), so a cycle can only close when an event is written whose id some earlier event already
names as a cause. The append finds those ids with one indexed query per batch
(``Lookups.referenced`` in :mod:`._lookups`); only for them is the ancestry of the new causes walked
(:class:`CycleCheck`), through the items pending in this batch and the stored edges. The
stored ancestry of each event is read once per batch (one recursive query) and kept as a set,
so a batch of many such items costs one walk per distinct cause, not one per item.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from sqlalchemy import Connection, text

__all__ = ["CycleCheck"]

#: The stored ancestry of one event: every cause reachable from it over stored edges. On
#: PostgreSQL each step is a fenced LATERAL index lookup (a plain join was planned as a hash
#: join over the whole edge table at every step: quadratic on a long chain).
_ANCESTRY = {
    "postgresql": (
        'WITH RECURSIVE anc(id) AS (SELECT CAST(:start AS varchar) COLLATE "C" '
        "UNION SELECT x.cause_id FROM anc, LATERAL (SELECT e.cause_id FROM event_causes e "
        "WHERE e.effect_id = anc.id OFFSET 0) x) SELECT id FROM anc"
    ),
    "sqlite": (
        "WITH RECURSIVE anc(id) AS (SELECT :start UNION SELECT e.cause_id FROM event_causes e "
        "JOIN anc ON e.effect_id = anc.id) SELECT id FROM anc"
    ),
}


class CycleCheck:
    """Whether a new event's causes would make it its own ancestor, for one batch.

    Args:
        conn: the write transaction (stored edges do not change under it).
        pending: the events accepted earlier in this batch (not inserted yet) and their
            causes; the caller adds each accepted event.
    """

    def __init__(self, conn: Connection, pending: Mapping[str, Sequence[str]]) -> None:
        self._conn = conn
        self._pending = pending
        self._ancestry: dict[str, frozenset[str]] = {}
        self._sql = text(_ANCESTRY.get(conn.dialect.name, _ANCESTRY["sqlite"]))

    def _stored_ancestors(self, start: str) -> frozenset[str]:
        """``start`` and every event reachable from it over stored edges (``UNION`` ends
        the walk on a loop already in the table, so it terminates on any data)."""
        found = self._ancestry.get(start)
        if found is None:
            rows = self._conn.execute(self._sql, {"start": start})
            found = frozenset(row[0] for row in rows)
            self._ancestry[start] = found
        return found

    def closing_cause(self, event_id: str, causes: Iterable[str]) -> str | None:
        """The first of ``causes`` that descends from ``event_id``, or ``None``."""
        pending = self._pending
        for cause in causes:
            frontier = [cause]
            seen: set[str] = set()
            while frontier:
                current = frontier.pop()
                if current == event_id:
                    return cause
                if current in seen:
                    continue
                seen.add(current)
                if current in pending:
                    frontier.extend(pending[current])
                    continue
                ancestors = self._stored_ancestors(current)
                if event_id in ancestors:
                    return cause
                # a stored event may name an event of this batch as its cause
                frontier.extend(a for a in ancestors if a in pending and a not in seen)
        return None
