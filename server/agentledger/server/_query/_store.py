"""The query interface (:class:`QueryStore`) and its dialect-neutral SQL implementation.

:class:`QueryStoreMixin` is mixed into :class:`~agentledger.server._store._sql.SQLStore`; it
uses the store's ``engine``, ``_reader()`` and ``_writer()`` and leaves the dialect's pieces to
the hooks listed in :mod:`agentledger.server._query` (full-text search, index catch-up,
secure erasure). Events cross the boundary in wire shape, as elsewhere in the store.
"""

from __future__ import annotations

import abc
import contextlib
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
from sqlalchemy import (
    ColumnElement,
    Connection,
    Engine,
    and_,
    case,
    delete,
    exists,
    func,
    insert,
    null,
    or_,
    select,
    update,
)

from agentledger.protocol.errors import LedgerError
from agentledger.server._query.drift import EventRow
from agentledger.server._query.forget import ForgetMatcher, prefilters
from agentledger.server._query.state import STATE_EVENTS, fold_state
from agentledger.server._query.text import event_text
from agentledger.server._store._tables import event_embeddings, events, ledger_meta

__all__ = [
    "ForgetOutcome",
    "KeywordSearchUnavailable",
    "QueryStore",
    "QueryStoreMixin",
    "SearchFilters",
    "StateOutcome",
]

_CHUNK = 500


class KeywordSearchUnavailable(LedgerError, RuntimeError):
    """The store has no full-text search (its dialect hook is missing)."""


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


@dataclass(slots=True)
class ForgetOutcome:
    """What a forget erased (or would erase, ``dry_run``)."""

    deleted_events: int = 0
    event_ids: list[str] = field(default_factory=list)
    agents: dict[str, int] = field(default_factory=dict)
    embeddings_deleted: int = 0
    index_rows_deleted: int = 0


@dataclass(slots=True)
class StateOutcome:
    """State at a time: events up to it and the key/value state."""

    event_count: int
    state: dict[str, Any]
    truncated: bool


class QueryStore(abc.ABC):
    """Query features every store offers (issue 3); routes talk to this interface."""

    @abc.abstractmethod
    def search_keyword(
        self, words: Sequence[str], filters: SearchFilters, *, limit: int
    ) -> list[tuple[dict[str, Any], float]]:
        """Full-text search, best first, ``[(event, score)]`` (higher is better).

        Raises:
            KeywordSearchUnavailable: the store has no full-text index.
        """

    @abc.abstractmethod
    def search_vectors(
        self, query: Any, model: str, filters: SearchFilters, *, limit: int
    ) -> list[tuple[dict[str, Any], float]]:
        """Cosine search over stored embeddings of ``model``; ``query`` is a float32 vector
        (numpy array); ``[(event, cosine)]`` best first."""

    @abc.abstractmethod
    def index_catch_up(self, *, max_rows: int, background: bool = False) -> int:
        """Index up to ``max_rows`` events written since the last call; rows indexed.

        With ``background`` the call gives way to writers: it returns -1 at once when a
        write transaction is running (the caller retries soon)."""

    @abc.abstractmethod
    def writer_busy(self) -> bool:
        """Whether a write transaction of this process runs right now."""

    @abc.abstractmethod
    def index_pending(self) -> int:
        """Events written but not yet in the full-text index."""

    @abc.abstractmethod
    def unembedded(self, model: str, *, limit: int) -> tuple[list[tuple[int, str, str]], int]:
        """``([(row id, agent, text)], last row id read)`` of events after ``model``'s
        watermark, oldest first."""

    @abc.abstractmethod
    def store_embeddings(
        self, model: str, vectors: Sequence[tuple[int, str, bytes, int]], *, through: int
    ) -> int:
        """Store ``(row id, agent, float32 bytes, dim)`` for events still not erased and move
        the watermark to ``through``; returns rows stored."""

    @abc.abstractmethod
    def embeddings_pending(self, model: str) -> int:
        """Events after ``model``'s watermark."""

    @abc.abstractmethod
    def forget(
        self,
        filter_key: str,
        filter_value: str,
        *,
        agents: Sequence[str] | None,
        dry_run: bool,
        id_limit: int = 1000,
    ) -> ForgetOutcome:
        """Erase (tombstone) matching events with their index rows and embeddings, in one
        transaction; ``dry_run`` only counts. ``event_ids`` lists at most ``id_limit`` ids."""

    @abc.abstractmethod
    def state_at(self, agent: str, at: str, *, max_events: int) -> StateOutcome:
        """Events of ``agent`` at or before ``at`` and the state their
        ``state_set``/``state_delete`` events leave."""

    @abc.abstractmethod
    def drift_rows(
        self, agent: str, *, since: str | None = None, until: str | None = None
    ) -> list[EventRow]:
        """Events of ``agent`` that belong to a session, with ``data`` for tool, step and
        ``llm_end`` events (enough for :func:`~agentledger.server._query.drift.session_shapes`)."""

    @abc.abstractmethod
    def session_rows(self, session_id: str, *, agent: str | None) -> list[tuple[str, EventRow]]:
        """``[(agent, row)]`` of one session, oldest first, ``data`` included (erased: None)."""

    @abc.abstractmethod
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


def _meta_name(model: str) -> str:
    return "embeddings_through:" + hashlib.sha256(model.encode()).hexdigest()[:32]


class QueryStoreMixin(QueryStore):
    """Dialect-neutral implementation of :class:`QueryStore` (see the package docstring)."""

    engine: Engine

    @abc.abstractmethod
    def _writer(self) -> contextlib.AbstractContextManager[Connection]:
        """The store's serialized write transaction."""

    @abc.abstractmethod
    def _reader(self) -> contextlib.AbstractContextManager[Connection]:
        """A read connection."""

    # -- dialect hooks (override per backend) ------------------------------------------------

    def _keyword_search(
        self,
        conn: Connection,
        words: Sequence[str],
        where: Sequence[ColumnElement[bool]],
        limit: int,
    ) -> list[tuple[int, float]]:
        """``[(events.id, score)]`` best first for rows matching any word (prefixes count)."""
        raise KeywordSearchUnavailable("this store has no full-text index")

    def _index_catch_up(self, conn: Connection, max_rows: int) -> int:
        """Index rows written since the last call, inside a write transaction."""
        return 0

    def _index_pending(self, conn: Connection) -> int:
        return 0

    def _writer_busy(self) -> bool:
        """Whether a write transaction of this process is running (the background indexer
        then gives way, so ingest does not wait for it)."""
        return False

    def _record_contains(self, needle: bytes) -> ColumnElement[bool] | None:
        """A condition true when the stored ``record`` bytes contain ``needle`` (a prefilter
        for forget; ``None``: no prefilter, every record is checked in Python)."""
        return None

    def _erase_prepare(self, conn: Connection) -> None:
        """Called first inside the forget transaction."""

    def _erase_in_transaction(self, conn: Connection, ids: Sequence[int]) -> int:
        """Called after the tombstone UPDATE, before COMMIT; returns index rows removed."""
        return 0

    def _erase_finish(self) -> None:
        """Called after a forget committed (e.g. checkpoint so old pages leave the WAL)."""

    # -- shared pieces -----------------------------------------------------------------------

    @staticmethod
    def _filters(filters: SearchFilters) -> list[ColumnElement[bool]]:
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
            where.append(QueryStoreMixin._not_superseded())
        return where

    @staticmethod
    def _not_superseded() -> ColumnElement[bool]:
        newer = events.alias("newer")
        return ~exists().where(newer.c.supersedes == events.c.event_id)

    @staticmethod
    def _events_by_ids(conn: Connection, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        from agentledger.server._store._sql import _EVENT_COLS, _event_dict

        found: dict[int, dict[str, Any]] = {}
        for start in range(0, len(ids), _CHUNK):
            chunk = list(ids[start : start + _CHUNK])
            query = select(events.c.id, *_EVENT_COLS).where(events.c.id.in_(chunk))
            for row in conn.execute(query):
                found[row[0]] = _event_dict(row[1:])
        return found

    def _scored(
        self, conn: Connection, hits: Sequence[tuple[int, float]]
    ) -> list[tuple[dict[str, Any], float]]:
        rows = self._events_by_ids(conn, [i for i, _ in hits])
        return [(rows[i], score) for i, score in hits if i in rows]

    # -- search ------------------------------------------------------------------------------

    def search_keyword(
        self, words: Sequence[str], filters: SearchFilters, *, limit: int
    ) -> list[tuple[dict[str, Any], float]]:
        """See :meth:`QueryStore.search_keyword`."""
        with self._reader() as conn:
            hits = self._keyword_search(conn, words, self._filters(filters), limit)
            return self._scored(conn, hits)

    def search_vectors(
        self, query: Any, model: str, filters: SearchFilters, *, limit: int
    ) -> list[tuple[dict[str, Any], float]]:
        """See :meth:`QueryStore.search_vectors`: exact cosine with numpy over the candidate
        vectors, streamed in partitions (bounded memory)."""
        import numpy as np

        q = np.asarray(query, dtype=np.float32)
        norm = float(np.linalg.norm(q))
        if not norm:
            return []
        q = q / norm
        stmt = (
            select(event_embeddings.c.id, event_embeddings.c.vector)
            .join(events, events.c.id == event_embeddings.c.id)
            .where(
                event_embeddings.c.model == model,
                event_embeddings.c.dim == q.shape[0],
                *self._filters(filters),
            )
        )
        best_ids: list[int] = []
        best_scores: Any = np.empty(0, dtype=np.float32)
        with self._reader() as conn:
            result = conn.execution_options(yield_per=20_000).execute(stmt)
            for part in result.partitions():
                ids = [row[0] for row in part]
                matrix = np.frombuffer(b"".join(row[1] for row in part), dtype=np.float32)
                matrix = matrix.reshape(len(ids), q.shape[0])
                norms = np.linalg.norm(matrix, axis=1)
                norms[norms == 0] = 1.0
                scores = (matrix @ q) / norms
                all_ids = best_ids + ids
                all_scores = np.concatenate([best_scores, scores])
                keep = np.argsort(-all_scores, kind="stable")[:limit]
                best_ids = [all_ids[k] for k in keep]
                best_scores = all_scores[keep]
            hits = [(i, round(float(s), 6)) for i, s in zip(best_ids, best_scores, strict=True)]
            return self._scored(conn, hits)

    def index_catch_up(self, *, max_rows: int, background: bool = False) -> int:
        """See :meth:`QueryStore.index_catch_up`."""
        if background and self._writer_busy():
            return -1
        with self._reader() as conn:
            if not self._index_pending(conn):
                return 0
        with self._writer() as conn:
            return self._index_catch_up(conn, max_rows)

    def writer_busy(self) -> bool:
        """See :meth:`QueryStore.writer_busy`."""
        return self._writer_busy()

    def index_pending(self) -> int:
        """See :meth:`QueryStore.index_pending`."""
        with self._reader() as conn:
            return self._index_pending(conn)

    # -- embeddings --------------------------------------------------------------------------

    @staticmethod
    def _watermark(conn: Connection, model: str) -> int:
        value = conn.execute(
            select(ledger_meta.c.value).where(ledger_meta.c.name == _meta_name(model))
        ).scalar()
        return int(value) if value is not None else 0

    def unembedded(self, model: str, *, limit: int) -> tuple[list[tuple[int, str, str]], int]:
        """See :meth:`QueryStore.unembedded`."""
        with self._reader() as conn:
            mark = self._watermark(conn, model)
            rows = conn.execute(
                select(events.c.id, events.c.agent, events.c.event, events.c.record)
                .where(events.c.id > mark)
                .order_by(events.c.id)
                .limit(limit)
            ).all()
        items = []
        for row_id, agent, event, record in rows:
            if record is None:
                continue
            data = orjson.loads(record).get("data") or {}
            items.append((row_id, agent, event_text(event or "", data)))
        return items, (rows[-1][0] if rows else mark)

    def store_embeddings(
        self, model: str, vectors: Sequence[tuple[int, str, bytes, int]], *, through: int
    ) -> int:
        """See :meth:`QueryStore.store_embeddings` (serialized with forget by the writer)."""
        with self._writer() as conn:
            alive: set[int] = set()
            ids = [v[0] for v in vectors]
            for start in range(0, len(ids), _CHUNK):
                chunk = ids[start : start + _CHUNK]
                alive.update(
                    conn.execute(
                        select(events.c.id).where(
                            events.c.id.in_(chunk), events.c.record.is_not(None)
                        )
                    ).scalars()
                )
                conn.execute(delete(event_embeddings).where(event_embeddings.c.id.in_(chunk)))
            rows = [
                {"id": i, "agent": agent, "model": model, "dim": dim, "vector": blob}
                for i, agent, blob, dim in vectors
                if i in alive
            ]
            if rows:
                conn.execute(insert(event_embeddings), rows)
            name = _meta_name(model)
            changed = conn.execute(
                update(ledger_meta).where(ledger_meta.c.name == name).values(value=str(through))
            ).rowcount
            if not changed:
                conn.execute(insert(ledger_meta).values(name=name, value=str(through)))
            return len(rows)

    def embeddings_pending(self, model: str) -> int:
        """See :meth:`QueryStore.embeddings_pending`."""
        with self._reader() as conn:
            mark = self._watermark(conn, model)
            return int(
                conn.execute(
                    select(func.count()).select_from(events).where(events.c.id > mark)
                ).scalar_one()
            )

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
        """See :meth:`QueryStore.forget`.

        Candidates are narrowed by ``LIKE`` on the canonical record bytes
        (:func:`~agentledger.server._query.forget.prefilters`), then checked exactly. The
        tombstone keeps ``event_id``, ``sequence_no``, ``chain_hash`` and the indexed columns
        (type, time, parent, session) and clears ``record``, ``checksum``, ``fingerprint`` and
        ``idempotency_key``; verification counts it as erased.
        """
        matcher = ForgetMatcher(filter_key, filter_value)
        key_pattern, value_patterns = prefilters(filter_key, filter_value)
        where: list[ColumnElement[bool]] = [events.c.record.is_not(None)]
        key_test = self._record_contains(key_pattern)
        value_tests = [self._record_contains(v) for v in value_patterns]
        if key_test is not None:
            where.append(key_test)
        if value_tests and all(t is not None for t in value_tests):
            where.append(or_(*[t for t in value_tests if t is not None]))
        if agents is not None:
            where.append(events.c.agent.in_(list(agents)))
        query = select(events.c.id, events.c.event_id, events.c.agent, events.c.record).where(
            and_(*where)
        )
        outcome = ForgetOutcome()
        context = self._reader() if dry_run else self._writer()
        with context as conn:
            if not dry_run:
                self._erase_prepare(conn)
            ids: list[int] = []
            for row_id, event_id, agent, record in conn.execute(query):
                data = orjson.loads(record).get("data")
                if not matcher.matches(data):
                    continue
                ids.append(row_id)
                outcome.agents[agent] = outcome.agents.get(agent, 0) + 1
                if len(outcome.event_ids) < id_limit:
                    outcome.event_ids.append(event_id)
            outcome.deleted_events = len(ids)
            if dry_run or not ids:
                return outcome
            for start in range(0, len(ids), _CHUNK):
                chunk = ids[start : start + _CHUNK]
                conn.execute(
                    update(events)
                    .where(events.c.id.in_(chunk))
                    .values(record=None, checksum=None, fingerprint=None, idempotency_key=None)
                )
                outcome.embeddings_deleted += conn.execute(
                    delete(event_embeddings).where(event_embeddings.c.id.in_(chunk))
                ).rowcount
            outcome.index_rows_deleted = self._erase_in_transaction(conn, ids)
        self._erase_finish()
        return outcome

    # -- state, drift, memory ----------------------------------------------------------------

    def state_at(self, agent: str, at: str, *, max_events: int) -> StateOutcome:
        """See :meth:`QueryStore.state_at`: one ordered read of the state events."""
        with self._reader() as conn:
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
        truncated = len(rows) > max_events
        pairs = ((row[0], orjson.loads(row[1]).get("data") or {}) for row in rows[:max_events])
        return StateOutcome(int(count), fold_state(pairs), truncated)

    def drift_rows(
        self, agent: str, *, since: str | None = None, until: str | None = None
    ) -> list[EventRow]:
        """See :meth:`QueryStore.drift_rows`; ``since``/``until`` bound event timestamps.

        Only tool, step and ``llm_end`` records are read (a ``CASE`` in the query), the rest
        is labelled by its type alone."""
        needs_data = or_(
            events.c.event.startswith("tool_", autoescape=True),
            events.c.event.startswith("step_", autoescape=True),
            events.c.event == "llm_end",
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
        with self._reader() as conn:
            rows = conn.execute(query).all()
        return [
            EventRow(sid, eid, pid, event or "", ts, loads(rec).get("data") if rec else None)
            for sid, eid, pid, event, ts, rec in rows
        ]

    def session_rows(self, session_id: str, *, agent: str | None) -> list[tuple[str, EventRow]]:
        """See :meth:`QueryStore.session_rows`."""
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
        with self._reader() as conn:
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
        """See :meth:`QueryStore.recent_events`."""
        from agentledger.server._store._sql import _EVENT_COLS, _event_dict

        query = select(*_EVENT_COLS).where(events.c.agent == agent, events.c.record.is_not(None))
        if exclude_session is not None:
            query = query.where(
                or_(events.c.session_id.is_(None), events.c.session_id != exclude_session)
            )
        if not include_superseded:
            query = query.where(self._not_superseded())
        query = query.order_by(events.c.timestamp.desc(), events.c.sequence_no.desc()).limit(limit)
        with self._reader() as conn:
            return [_event_dict(row) for row in conn.execute(query)]
