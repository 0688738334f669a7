"""The core SQL store shared by both backends: events, lineage, chain and keys.

A backend (:class:`~agentledger.server._store.sqlite.SQLiteStore`,
:class:`~agentledger.server._store.postgres.PostgresStore`) subclasses :class:`SQLStore` once and
supplies the engine, the serialized write transaction (:meth:`SQLStore.writer`) and the dialect's
aggregate for distinct lists (:meth:`SQLStore.distinct_list`). The queries themselves, including
the recursive lineage queries (``why`` and ``impact``: one recursive query each over the causal
edges, :mod:`._lineage`), are written once here, over the helpers of :mod:`._rows` and
:mod:`._append`. Query features (search, forget, drift, ...) are not part of the store: they take
one (:class:`agentledger.server._query.queries.QueryStore`).
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import Any

import orjson
from sqlalchemy import (
    ColumnElement,
    Connection,
    Engine,
    Select,
    and_,
    func,
    literal,
    or_,
    select,
    update,
)

from agentledger.server._chain import ChainHasher, ChainRow, ChainRowTuple
from agentledger.server._chain_head import AgentHead, ChainSnapshot
from agentledger.server._ingest import PreparedEvent, now_ts
from agentledger.server._store._append import append_in
from agentledger.server._store._each import append_each, refused_content
from agentledger.server._store._lineage import lineage
from agentledger.server._store._rows import (
    CHAIN_COLS,
    EVENT_COLS,
    INSERT_COLUMNS,
    chain_row,
    event_dict,
    event_fragment,
    export_line,
    fetch_event_row,
    key_record,
)
from agentledger.server._store.base import (
    AppendOutcome,
    KeyRecord,
    LedgerStore,
    Lineage,
)
from agentledger.server._tables import agents, api_keys, event_causes, events

__all__ = ["INSERT_COLUMNS", "SQLStore", "chain_head_on"]


class SQLStore(LedgerStore):
    """The shared SQL implementation; see the module docstring for what a backend supplies."""

    def __init__(self, engine: Engine, *, chain_key: str | None = None) -> None:
        self.engine = engine
        self.hasher = ChainHasher(chain_key)

    # -- dialect hooks -----------------------------------------------------------------------

    @abc.abstractmethod
    def writer(self) -> contextlib.AbstractContextManager[Connection]:
        """A connection inside a write transaction that excludes every other writer."""

    @abc.abstractmethod
    def distinct_list(self, column: ColumnElement[Any]) -> ColumnElement[Any]:
        """An aggregate returning the distinct values as a JSON array (text or native)."""

    def insert_events(self, conn: Connection, rows: list[tuple[Any, ...]]) -> None:
        """Insert new event rows (tuples in :data:`INSERT_COLUMNS` order), one statement.

        The default goes through Core; a dialect may override it with its driver's fastest
        bulk path (the SQLite store uses ``executemany`` on the driver cursor).
        """
        conn.execute(events.insert(), [dict(zip(INSERT_COLUMNS, row, strict=True)) for row in rows])

    def insert_edges(self, conn: Connection, rows: list[tuple[Any, ...]]) -> None:
        """Insert causal edge rows ``(effect_id, cause_id, kind, agent)``, one statement."""
        conn.execute(
            event_causes.insert(),
            [{"effect_id": r[0], "cause_id": r[1], "kind": r[2], "agent": r[3]} for r in rows],
        )

    #: Taken by an append that could close a cycle across agents, when writers of different
    #: agents run at the same time (see :func:`._append.append_in`); ``None`` for a store
    #: with one writer.
    lineage_lock: Callable[[Connection], None] | None = None

    def writer_busy(self) -> bool:
        """Whether a write transaction of this process runs right now (background work such as
        the full-text indexer then gives way). The default: never known to be busy."""
        return False

    @contextlib.contextmanager
    def reader(self) -> Iterator[Connection]:
        """A read connection."""
        with self.engine.connect() as conn:
            yield conn

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        """Dispose of the connection pool."""
        self.engine.dispose()

    def ping(self) -> None:
        """``SELECT 1``."""
        with self.reader() as conn:
            conn.execute(select(literal(1))).scalar_one()

    # -- writes ------------------------------------------------------------------------------

    def append(
        self,
        items: Sequence[PreparedEvent],
        *,
        keep_received_at: Sequence[str | None] = (),
        reader_agent: str | None = None,
    ) -> list[AppendOutcome]:
        """See :meth:`LedgerStore.append`: one transaction; when the database refuses a value
        of an item, a second one writes the items one by one (:mod:`._each`)."""
        if not items:
            return []
        try:
            with self.writer() as conn:
                return self.append_on(conn, items, keep_received_at, reader_agent)
        except Exception as error:
            if refused_content(error) is None:
                raise
        with self.writer() as conn:
            return self.append_each_on(conn, items, keep_received_at, reader_agent)

    def append_on(
        self,
        conn: Connection,
        items: Sequence[PreparedEvent],
        keep_received_at: Sequence[str | None],
        reader_agent: str | None = None,
    ) -> list[AppendOutcome]:
        """The append of :meth:`append` on a write transaction the caller holds."""
        return append_in(
            conn,
            items,
            keep_received_at,
            hasher=self.hasher,
            insert_events=self.insert_events,
            insert_edges=self.insert_edges,
            reader_agent=reader_agent,
            lineage_lock=self.lineage_lock,
        )

    def append_each_on(
        self,
        conn: Connection,
        items: Sequence[PreparedEvent],
        keep_received_at: Sequence[str | None],
        reader_agent: str | None = None,
    ) -> list[AppendOutcome]:
        """The append of :meth:`append` item by item, an item the database refuses failing
        alone (:func:`._each.append_each`)."""
        return append_each(
            conn,
            items,
            keep_received_at,
            lambda on, some, kept: self.append_on(on, some, kept, reader_agent),
        )

    # -- reads -------------------------------------------------------------------------------

    def get_event(self, event_id: str) -> dict[str, Any] | None:
        """See :meth:`LedgerStore.get_event`."""
        with self.reader() as conn:
            row = fetch_event_row(conn, event_id)
        return event_dict(row) if row is not None else None

    def list_events(
        self,
        agent: str,
        *,
        limit: int,
        offset: int = 0,
        before: str | None = None,
        after: str | None = None,
        event_type: str | None = None,
        session_id: str | None = None,
        cursor: tuple[str, int] | None = None,
    ) -> list[Any]:
        """See :meth:`LedgerStore.list_events`."""
        query: Select[Any] = select(*EVENT_COLS).where(events.c.agent == agent)
        if before is not None:
            query = query.where(events.c.timestamp < before)
        if after is not None:
            query = query.where(events.c.timestamp > after)
        if event_type is not None:
            query = query.where(events.c.event == event_type)
        if session_id is not None:
            query = query.where(events.c.session_id == session_id)
        if cursor is not None:
            ts, seq = cursor
            query = query.where(
                or_(
                    events.c.timestamp < ts,
                    and_(events.c.timestamp == ts, events.c.sequence_no < seq),
                )
            )
        query = (
            query.order_by(events.c.timestamp.desc(), events.c.sequence_no.desc())
            .limit(limit)
            .offset(offset)
        )
        with self.reader() as conn:
            return [event_fragment(row) for row in conn.execute(query)]

    def why(
        self, event_id: str, *, depth: int, limit: int, agent_scope: str | None
    ) -> Lineage | None:
        """See :meth:`LedgerStore.why`: one recursive query over the causal edges."""
        with self.reader() as conn:
            return lineage(
                conn, event_id, direction="why", depth=depth, limit=limit, agent_scope=agent_scope
            )

    def impact(
        self, event_id: str, *, depth: int, limit: int, agent_scope: str | None
    ) -> Lineage | None:
        """See :meth:`LedgerStore.impact`: one recursive query over the cause index."""
        with self.reader() as conn:
            return lineage(
                conn,
                event_id,
                direction="impact",
                depth=depth,
                limit=limit,
                agent_scope=agent_scope,
            )

    def sessions(
        self, agent: str | None, *, limit: int, agent_scope: str | None = None
    ) -> list[dict[str, Any]]:
        """See :meth:`LedgerStore.sessions`."""
        query = select(
            events.c.session_id,
            func.count(),
            self.distinct_list(events.c.event),
            func.min(events.c.timestamp),
            func.max(events.c.timestamp),
            self.distinct_list(events.c.agent),
        ).where(events.c.session_id.is_not(None))
        if agent_scope is not None:
            query = query.where(events.c.agent == agent_scope)
        if agent is not None and agent != agent_scope:
            in_agent = (
                select(events.c.session_id)
                .where(events.c.agent == agent, events.c.session_id.is_not(None))
                .distinct()
            )
            query = query.where(events.c.session_id.in_(in_agent))
        query = (
            query.group_by(events.c.session_id)
            .order_by(func.max(events.c.timestamp).desc())
            .limit(limit)
        )
        with self.reader() as conn:
            rows = conn.execute(query).all()

        def as_list(value: Any) -> list[str]:
            items = orjson.loads(value) if isinstance(value, str | bytes) else list(value or [])
            return sorted(str(v) for v in items if v is not None)

        return [
            {
                "session_id": row[0],
                "event_count": row[1],
                "event_types": as_list(row[2]),
                "started_at": row[3],
                "ended_at": row[4],
                "agents": as_list(row[5]),
            }
            for row in rows
        ]

    def session_events(self, session_id: str, *, agent: str | None, limit: int) -> list[Any]:
        """See :meth:`LedgerStore.session_events`."""
        query = select(*EVENT_COLS).where(events.c.session_id == session_id)
        if agent is not None:
            query = query.where(events.c.agent == agent)
        query = query.order_by(events.c.timestamp, events.c.agent, events.c.sequence_no).limit(
            limit
        )
        with self.reader() as conn:
            return [event_fragment(row) for row in conn.execute(query)]

    def agents(self, *, agent: str | None = None) -> list[dict[str, Any]]:
        """See :meth:`LedgerStore.agents`."""
        query = select(
            agents.c.agent, agents.c.first_seen, agents.c.last_seen, agents.c.event_count
        ).order_by(agents.c.agent)
        if agent is not None:
            query = query.where(agents.c.agent == agent)
        with self.reader() as conn:
            return [
                {"agent": r[0], "first_seen": r[1], "last_seen": r[2], "event_count": r[3]}
                for r in conn.execute(query)
            ]

    def export_lines(self, agent: str, *, page_size: int = 2000) -> Iterator[bytes]:
        """See :meth:`LedgerStore.export_lines`: keyset pages over ``(agent, sequence_no)``."""
        last = 0
        while True:
            query = (
                select(*EVENT_COLS)
                .where(
                    events.c.agent == agent,
                    events.c.sequence_no > last,
                    events.c.record.is_not(None),
                )
                .order_by(events.c.sequence_no)
                .limit(page_size)
            )
            with self.reader() as conn:
                rows = conn.execute(query).all()
            if not rows:
                return
            yield b"".join(export_line(row) for row in rows)
            last = rows[-1][8]
            if len(rows) < page_size:
                return

    # -- chain -------------------------------------------------------------------------------

    def chain_rows(self, agent: str, *, after_seq: int = 0) -> Iterator[ChainRowTuple]:
        """See :meth:`LedgerStore.chain_rows`."""
        with self.reader() as conn:
            yield from _chain_rows_on(conn, agent, after_seq)

    def edge_rows(self, agent: str, *, after_seq: int = 0) -> Iterator[tuple[int, str, str, str]]:
        """See :meth:`LedgerStore.edge_rows`: the agent's events joined to their edges."""
        with self.reader() as conn:
            yield from _edge_rows_on(conn, agent, after_seq)

    def chain_head(self, agent: str) -> AgentHead | None:
        """See :meth:`LedgerStore.chain_head`."""
        with self.reader() as conn:
            return chain_head_on(conn, agent)

    @contextlib.contextmanager
    def chain_snapshot(self, agent: str, *, after_seq: int = 0) -> Iterator[ChainSnapshot]:
        """See :meth:`LedgerStore.chain_snapshot`: one ``REPEATABLE READ`` transaction (one
        snapshot for every statement in it on PostgreSQL), two streamed result sets."""
        with (
            self.engine.connect().execution_options(isolation_level="REPEATABLE READ") as conn,
            conn.begin(),
        ):
            head = chain_head_on(conn, agent)
            rows = _chain_rows_on(conn, agent, after_seq)
            edges = _edge_rows_on(conn, agent, after_seq)
            try:
                yield ChainSnapshot(head, rows, edges)
            finally:
                rows.close()
                edges.close()

    def chain_row_at(self, agent: str, sequence_no: int) -> ChainRow | None:
        """See :meth:`LedgerStore.chain_row_at`."""
        query = select(*CHAIN_COLS).where(
            events.c.agent == agent, events.c.sequence_no == sequence_no
        )
        with self.reader() as conn:
            row = conn.execute(query).first()
        return chain_row(row) if row is not None else None

    def chain_row_by_hash(self, agent: str, chain_hash: str) -> ChainRow | None:
        """See :meth:`LedgerStore.chain_row_by_hash`."""
        query = select(*CHAIN_COLS).where(
            events.c.agent == agent, events.c.chain_hash == chain_hash
        )
        with self.reader() as conn:
            row = conn.execute(query).first()
        return chain_row(row) if row is not None else None

    # -- keys --------------------------------------------------------------------------------

    def create_key(self, key: KeyRecord) -> None:
        """See :meth:`LedgerStore.create_key`."""
        with self.writer() as conn:
            conn.execute(
                api_keys.insert().values(
                    key_id=key.key_id,
                    name=key.name,
                    key_hash=key.key_hash,
                    prefix=key.prefix,
                    agent=key.agent,
                    scope=key.scope,
                    created_at=key.created_at,
                    expires_at=key.expires_at,
                    revoked_at=key.revoked_at,
                )
            )

    def key_by_hash(self, key_hash: str) -> KeyRecord | None:
        """See :meth:`LedgerStore.key_by_hash`."""
        with self.reader() as conn:
            row = conn.execute(select(api_keys).where(api_keys.c.key_hash == key_hash)).first()
        return key_record(row) if row is not None else None

    def list_keys(self) -> list[KeyRecord]:
        """See :meth:`LedgerStore.list_keys`."""
        with self.reader() as conn:
            rows = conn.execute(select(api_keys).order_by(api_keys.c.created_at)).all()
        return [key_record(row) for row in rows]

    def revoke_key(self, key_id: str, *, at: str) -> bool:
        """See :meth:`LedgerStore.revoke_key`."""
        with self.writer() as conn:
            result = conn.execute(
                update(api_keys)
                .where(api_keys.c.key_id == key_id, api_keys.c.revoked_at.is_(None))
                .values(revoked_at=at)
            )
            return bool(result.rowcount)

    def count_active_keys(self) -> int:
        """See :meth:`LedgerStore.count_active_keys`."""
        now = now_ts()
        query = (
            select(func.count())
            .select_from(api_keys)
            .where(
                api_keys.c.revoked_at.is_(None),
                or_(api_keys.c.expires_at.is_(None), api_keys.c.expires_at > now),
            )
        )
        with self.reader() as conn:
            return int(conn.execute(query).scalar_one())


def _chain_rows_on(
    conn: Connection, agent: str, after_seq: int
) -> Generator[ChainRowTuple, None, None]:
    query = (
        select(*CHAIN_COLS)
        .where(events.c.agent == agent, events.c.sequence_no > after_seq)
        .order_by(events.c.sequence_no)
    )
    result = conn.execution_options(yield_per=5000).execute(query)
    for partition in result.partitions():
        yield from map(chain_row, partition)


def _edge_rows_on(
    conn: Connection, agent: str, after_seq: int
) -> Generator[tuple[int, str, str, str], None, None]:
    query = (
        select(
            events.c.sequence_no,
            event_causes.c.cause_id,
            event_causes.c.kind,
            event_causes.c.agent,
        )
        .join_from(events, event_causes, event_causes.c.effect_id == events.c.event_id)
        .where(events.c.agent == agent, events.c.sequence_no > after_seq)
        .order_by(events.c.sequence_no)
    )
    result = conn.execution_options(yield_per=5000).execute(query)
    for partition in result.partitions():
        yield from (tuple(row) for row in partition)


def chain_head_on(conn: Connection, agent: str) -> AgentHead | None:
    """:meth:`LedgerStore.chain_head` on an open connection (inside a caller's snapshot)."""
    query = select(
        agents.c.last_seq,
        agents.c.last_hash,
        agents.c.event_count,
        agents.c.first_seen,
        agents.c.last_seen,
    ).where(agents.c.agent == agent)
    # both bounds walk the (agent, timestamp) index from one end
    earliest = select(func.min(events.c.timestamp)).where(events.c.agent == agent)
    latest = select(func.max(events.c.timestamp)).where(events.c.agent == agent)
    row = conn.execute(query).first()
    if row is None:
        return None
    first = conn.execute(earliest).scalar()
    last = conn.execute(latest).scalar()
    return AgentHead(*row, first, last)
