"""Cause edges that would close a cycle are refused at write time.

An event may name causes that are not stored yet (events of several agents arrive in any
order), so a cycle can only close when an event is written whose id some earlier event already
names as a cause. The append finds those ids with one indexed query per batch; only for them
is the ancestry of the new causes walked (:func:`closing_cause`), through the items pending in
this batch and the stored edges (one recursive query per stored stretch).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from sqlalchemy import Connection, select

from agentledger.server._tables import event_causes

__all__ = ["closing_cause"]


def _stored_ancestry(conn: Connection, start: str) -> list[tuple[str, str]]:
    """``(effect_id, cause_id)`` of every stored edge above ``start``. ``UNION`` (not ``ALL``)
    ends the walk on a loop already in the table, so the query terminates on any data."""
    seed = select(event_causes.c.effect_id, event_causes.c.cause_id).where(
        event_causes.c.effect_id == start
    )
    anc = seed.cte("ancestry", recursive=True)
    edge = event_causes.alias("e")
    anc = anc.union(
        select(edge.c.effect_id, edge.c.cause_id).where(edge.c.effect_id == anc.c.cause_id)
    )
    return [(row[0], row[1]) for row in conn.execute(select(anc.c.effect_id, anc.c.cause_id))]


def closing_cause(
    conn: Connection,
    event_id: str,
    causes: Iterable[str],
    pending: Mapping[str, Sequence[str]],
) -> str | None:
    """The first of ``causes`` that descends from ``event_id`` (the edge would make the event
    its own ancestor), or ``None``.

    ``pending`` maps the events accepted earlier in this batch (not inserted yet) to their
    causes. Each event is visited once over all causes, so the walk is linear in the size of
    the ancestry.
    """
    seen: set[str] = set()
    for cause in causes:
        frontier = [cause]
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
            for effect, above in _stored_ancestry(conn, current):
                seen.add(effect)
                if above == event_id:
                    return cause
                if above in pending and above not in seen:
                    frontier.append(above)  # a stored event names a pending one as cause
    return None
