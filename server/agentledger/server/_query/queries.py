"""The query features over a store: :class:`QueryStore` takes a core store and its search
backend (composition; the store knows nothing of them) and is what the query routes and the
background workers talk to."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import case, func, null, or_, select

from agentledger.server._query import _vectors
from agentledger.server._query._conditions import SearchFilters, conditions, not_superseded, scored
from agentledger.server._query._erase import ForgetOutcome, forget
from agentledger.server._query.drift import EventRow
from agentledger.server._query.state import STATE_EVENTS, fold_state
from agentledger.server._search import KeywordSearchUnavailable, SearchBackend, search_backend
from agentledger.server._store._rows import EVENT_COLS, event_dict
from agentledger.server._store._sql import SQLStore
from agentledger.server._tables import events

__all__ = [
    "ForgetOutcome",
    "KeywordSearchUnavailable",
    "QueryStore",
    "SearchFilters",
    "StateOutcome",
]


@dataclass(slots=True)
class StateOutcome:
    """State at a time: events up to it and the key/value state."""

    event_count: int
    state: dict[str, Any]
    truncated: bool
    #: the agent's last model call at or before the time: which prompt version and model were
    #: in effect (``None`` when it had made none, or its record is erased)
    model_call: dict[str, Any] | None = None


def _model_call(row: Any) -> dict[str, Any] | None:
    """``{event_id, session_id, timestamp, model, prompt_hash}`` of an ``llm_start`` row."""
    if row is None or row[3] is None:
        return None
    data = orjson.loads(row[3]).get("data") or {}
    fields = {k: data.get(k) for k in ("model", "prompt_hash")}
    return {
        "event_id": str(row[0]),
        "session_id": row[1],
        "timestamp": row[2],
        **{k: v if isinstance(v, str) else None for k, v in fields.items()},
    }


class QueryStore:
    """Search, embeddings, forget, state, drift and memory reads over ``store``.

    Args:
        store: the core store (either backend).
        search: its full-text backend; by default the one of the store's dialect
            (:func:`agentledger.server._search.search_backend`).
    """

    def __init__(self, store: SQLStore, search: SearchBackend | None = None) -> None:
        self.store = store
        self.search = search if search is not None else search_backend(store.engine)

    # -- search ------------------------------------------------------------------------------

    def search_keyword(
        self, words: Sequence[str], filters: SearchFilters, *, limit: int
    ) -> list[tuple[dict[str, Any], float]]:
        """Full-text search, best first, ``[(event, score)]`` (higher is better).

        Raises:
            KeywordSearchUnavailable: the store has no full-text index.
        """
        with self.store.reader() as conn:
            hits = self.search.keyword_search(conn, words, conditions(filters), limit)
            return scored(conn, hits)

    def search_vectors(
        self, query: Any, model: str, filters: SearchFilters, *, limit: int
    ) -> list[tuple[dict[str, Any], float]]:
        """Cosine search over stored embeddings of ``model``; ``query`` is a float32 vector
        (numpy array); ``[(event, cosine)]`` best first."""
        return _vectors.search_vectors(self.store, query, model, filters, limit=limit)

    def index_catch_up(self, *, max_rows: int, background: bool = False) -> int:
        """Index up to ``max_rows`` events written since the last call; rows indexed.

        With ``background`` the call gives way to writers: it returns -1 at once when a
        write transaction is running (the caller retries soon)."""
        if background and self.store.writer_busy():
            return -1
        with self.store.reader() as conn:
            if not self.search.index_pending(conn):
                return 0
        with self.store.writer() as conn:
            return self.search.index_catch_up(conn, max_rows)

    def writer_busy(self) -> bool:
        """Whether a write transaction of this process runs right now."""
        return self.store.writer_busy()

    def index_pending(self, agents: Sequence[str] | None = None) -> int:
        """Events written but not yet in the full-text index (of ``agents`` only, when
        given: what a key bound to an agent may count)."""
        with self.store.reader() as conn:
            return self.search.index_pending(conn, agents)

    # -- embeddings --------------------------------------------------------------------------

    def unembedded(self, model: str, *, limit: int) -> tuple[list[tuple[int, str, str]], int]:
        """``([(row id, agent, text)], last row id read)`` of events after ``model``'s
        watermark, oldest first."""
        return _vectors.unembedded(self.store, model, limit=limit)

    def store_embeddings(
        self, model: str, vectors: Sequence[tuple[int, str, bytes, int]], *, through: int
    ) -> int:
        """Store ``(row id, agent, float32 bytes, dim)`` for events still not erased and move
        the watermark to ``through``; returns rows stored."""
        return _vectors.store_embeddings(self.store, model, vectors, through=through)

    def embeddings_pending(self, model: str, agents: Sequence[str] | None = None) -> int:
        """Events after ``model``'s watermark (of ``agents`` only, when given)."""
        return _vectors.embeddings_pending(self.store, model, agents)

    # -- forget ------------------------------------------------------------------------------

    def forget(
        self,
        filter_key: str,
        filter_value: str,
        *,
        agents: Sequence[str] | None,
        dry_run: bool,
        id_limit: int = 1000,
    ) -> ForgetOutcome:
        """See :func:`agentledger.server._query._erase.forget`."""
        return forget(
            self.store,
            self.search,
            filter_key,
            filter_value,
            agents=agents,
            dry_run=dry_run,
            id_limit=id_limit,
        )

    # -- state, drift, memory ----------------------------------------------------------------

    def state_at(self, agent: str, at: str, *, max_events: int) -> StateOutcome:
        """Events of ``agent`` at or before ``at`` and the state their
        ``state_set``/``state_delete`` events leave (one ordered read of the state events)."""
        with self.store.reader() as conn:
            count = conn.execute(
                select(func.count())
                .select_from(events)
                .where(events.c.agent == agent, events.c.timestamp <= at)
            ).scalar_one()
            rows = conn.execute(
                select(events.c.event, events.c.record)
                .where(
                    events.c.agent == agent,
                    events.c.timestamp <= at,
                    events.c.event.in_(STATE_EVENTS),
                    events.c.record.is_not(None),
                )
                .order_by(events.c.timestamp, events.c.sequence_no)
                .limit(max_events + 1)
            ).all()
            last_call = conn.execute(
                select(events.c.event_id, events.c.session_id, events.c.timestamp, events.c.record)
                .where(
                    events.c.agent == agent,
                    events.c.timestamp <= at,
                    events.c.event == "llm_start",
                )
                .order_by(events.c.timestamp.desc(), events.c.sequence_no.desc())
                .limit(1)
            ).first()
        truncated = len(rows) > max_events
        pairs = ((row[0], orjson.loads(row[1]).get("data") or {}) for row in rows[:max_events])
        return StateOutcome(int(count), fold_state(pairs), truncated, _model_call(last_call))

    def drift_rows(
        self, agent: str, *, since: str | None = None, until: str | None = None
    ) -> list[EventRow]:
        """Events of ``agent`` that belong to a session, with ``data`` for tool, step and
        model-call events (enough for :func:`~agentledger.server._query.drift.session_shapes`);
        ``since``/``until`` bound event timestamps.

        Only tool, step, ``llm_start`` (its prompt version and model) and ``llm_end`` (its
        tokens) records are read (a ``CASE`` in the query), the rest is labelled by its type
        alone."""
        needs_data = or_(
            events.c.event.startswith("tool_", autoescape=True),
            events.c.event.startswith("step_", autoescape=True),
            events.c.event.in_(("llm_start", "llm_end")),
        )
        query = select(
            events.c.session_id,
            events.c.event_id,
            events.c.parent_id,
            events.c.event,
            events.c.timestamp,
            case((needs_data, events.c.record), else_=null()),
        ).where(events.c.agent == agent, events.c.session_id.is_not(None))
        if since is not None:
            query = query.where(events.c.timestamp >= since)
        if until is not None:
            query = query.where(events.c.timestamp <= until)
        loads = orjson.loads
        with self.store.reader() as conn:
            rows = conn.execute(query).all()
        return [
            EventRow(sid, eid, pid, event or "", ts, loads(rec).get("data") if rec else None)
            for sid, eid, pid, event, ts, rec in rows
        ]

    def session_rows(self, session_id: str, *, agent: str | None) -> list[tuple[str, EventRow]]:
        """``[(agent, row)]`` of one session, oldest first, ``data`` included (erased: None)."""
        query = select(
            events.c.agent,
            events.c.event_id,
            events.c.parent_id,
            events.c.event,
            events.c.timestamp,
            events.c.record,
        ).where(events.c.session_id == session_id)
        if agent is not None:
            query = query.where(events.c.agent == agent)
        query = query.order_by(events.c.timestamp, events.c.sequence_no).limit(100_000)
        with self.store.reader() as conn:
            return [
                (
                    row[0],
                    EventRow(
                        session_id,
                        row[1],
                        row[2],
                        row[3] or "",
                        row[4],
                        orjson.loads(row[5]).get("data") if row[5] is not None else None,
                    ),
                )
                for row in conn.execute(query)
            ]

    def recent_events(
        self,
        agent: str,
        *,
        limit: int,
        exclude_session: str | None,
        include_superseded: bool = False,
    ) -> list[dict[str, Any]]:
        """Newest events of ``agent`` first, erased ones and (by default) superseded ones
        left out."""
        query = select(*EVENT_COLS).where(events.c.agent == agent, events.c.record.is_not(None))
        if exclude_session is not None:
            query = query.where(
                or_(events.c.session_id.is_(None), events.c.session_id != exclude_session)
            )
        if not include_superseded:
            query = query.where(not_superseded())
        query = query.order_by(events.c.timestamp.desc(), events.c.sequence_no.desc()).limit(limit)
        with self.store.reader() as conn:
            return [event_dict(row) for row in conn.execute(query)]
