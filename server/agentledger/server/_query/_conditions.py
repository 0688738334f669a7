"""Which events a query may return: :class:`SearchFilters` and their SQL conditions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Connection, exists

from agentledger.server._store._rows import events_by_ids
from agentledger.server._tables import events

__all__ = ["SearchFilters", "conditions", "not_superseded", "scored"]


@dataclass(frozen=True, slots=True)
class SearchFilters:
    """Which events a search may return.

    Attributes:
        agents: only these agents (``None``: any).
        session_id: only this session.
        event_types: only these event types (empty: any).
        from_ts / to_ts: stored-format timestamps, inclusive bounds.
        include_superseded: also events named by another event's ``supersedes``.
    """

    agents: tuple[str, ...] | None = None
    session_id: str | None = None
    event_types: tuple[str, ...] = ()
    from_ts: str | None = None
    to_ts: str | None = None
    include_superseded: bool = False


def not_superseded() -> ColumnElement[bool]:
    """True for events no other event of the same agent names in its ``supersedes`` (the
    write path refuses a ``supersedes`` across agents; one named before its target was
    stored, or older data, hides nothing of another agent)."""
    newer = events.alias("newer")
    return ~exists().where(newer.c.supersedes == events.c.event_id, newer.c.agent == events.c.agent)


def conditions(filters: SearchFilters) -> list[ColumnElement[bool]]:
    """The ``WHERE`` conditions of ``filters`` on ``events`` (erased events never match)."""
    where: list[ColumnElement[bool]] = [events.c.record.is_not(None)]
    if filters.agents is not None:
        where.append(events.c.agent.in_(filters.agents))
    if filters.session_id is not None:
        where.append(events.c.session_id == filters.session_id)
    if filters.event_types:
        where.append(events.c.event.in_(filters.event_types))
    if filters.from_ts is not None:
        where.append(events.c.timestamp >= filters.from_ts)
    if filters.to_ts is not None:
        where.append(events.c.timestamp <= filters.to_ts)
    if not filters.include_superseded:
        where.append(not_superseded())
    return where


def scored(
    conn: Connection, hits: Sequence[tuple[int, float]]
) -> list[tuple[dict[str, Any], float]]:
    """``[(event, score)]`` for ``[(events.id, score)]``, in the same order."""
    rows = events_by_ids(conn, [i for i, _ in hits])
    return [(rows[i], score) for i, score in hits if i in rows]
