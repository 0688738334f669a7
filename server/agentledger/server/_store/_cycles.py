"""Parent edges that would close a cycle are refused at write time.

An event may name a parent that is not stored yet (events of several agents arrive in any
order), so a cycle can only close when an event is written whose id some earlier event already
names as its parent. The append finds those ids in the same indexed query that looks for
duplicates; only for them is the ancestry of the new parent walked (:func:`closes_cycle`),
through the rows pending in this batch and the stored rows (one recursive query per stored
stretch).
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy import Connection, select

from agentledger.server._tables import events

__all__ = ["closes_cycle"]


def _stored_ancestry(conn: Connection, start: str) -> list[tuple[str, str | None]]:
    """``(event_id, parent_id)`` of ``start`` and its stored ancestors. ``UNION`` (not ``ALL``)
    ends the walk on a loop already in the table, so the query terminates on any data."""
    seed = select(events.c.event_id, events.c.parent_id).where(events.c.event_id == start)
    anc = seed.cte("ancestry", recursive=True)
    parent = events.alias("p")
    anc = anc.union(
        select(parent.c.event_id, parent.c.parent_id).where(parent.c.event_id == anc.c.parent_id)
    )
    return [(row[0], row[1]) for row in conn.execute(select(anc.c.event_id, anc.c.parent_id))]


def closes_cycle(
    conn: Connection, event_id: str, parent_id: str, pending: Mapping[str, str | None]
) -> bool:
    """Whether writing ``event_id`` under ``parent_id`` makes ``event_id`` its own ancestor.

    ``pending`` maps the events accepted earlier in this batch (not inserted yet) to their
    parents. Each event is visited once, so the walk is linear in the ancestry's size.
    """
    frontier = [parent_id]
    seen: set[str] = set()
    while frontier:
        current = frontier.pop()
        if current == event_id:
            return True
        if current in seen:
            continue
        seen.add(current)
        if current in pending:
            parent = pending[current]
            if parent is not None:
                frontier.append(parent)
            continue
        rows = _stored_ancestry(conn, current)
        stored = {row[0] for row in rows}
        seen |= stored
        for _, parent in rows:
            if parent is None or parent in stored:
                continue
            frontier.append(parent)  # not stored: maybe pending, maybe the new event itself
    return False
