"""A dialect-neutral SQL store on SQLAlchemy Core; backends subclass it.

A subclass supplies the engine, the serialized write transaction (:meth:`SQLStore._writer`) and
the dialect's aggregate for distinct lists (:meth:`SQLStore._distinct_list`). Everything else,
including the recursive lineage queries (``why`` = one recursive CTE over ``parent_id``,
``impact`` = one recursive CTE over the children index), is written once here.
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import orjson
import uuid_utils
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
    tuple_,
    update,
)

from agentledger.server._canonical import canonical
from agentledger.server._chain import ChainHasher, ChainRow, ChainRowTuple
from agentledger.server._ingest import PreparedEvent, now_ts
from agentledger.server._query._store import QueryStoreMixin
from agentledger.server._store._tables import agents, api_keys, events
from agentledger.server._store.base import (
    AppendOutcome,
    EventPage,
    KeyRecord,
    LedgerStore,
    WhyResult,
)

__all__ = ["INSERT_COLUMNS", "SQLStore"]

_IN_CHUNK = 500

# Columns read for an event in wire shape; order matters for _event_dict/_export_line.
_EVENT_COLS = (
    events.c.record,
    events.c.received_at,
    events.c.importance,
    events.c.idempotency_key,
    events.c.checksum,
    events.c.chain_hash,
    events.c.event_id,
    events.c.agent,
    events.c.sequence_no,
    events.c.timestamp,
    events.c.event,
    events.c.parent_id,
    events.c.session_id,
    events.c.supersedes,
)

#: Column order of the row tuples handed to :meth:`SQLStore._insert_events`.
INSERT_COLUMNS = (
    "event_id",
    "agent",
    "sequence_no",
    "timestamp",
    "received_at",
    "event",
    "parent_id",
    "session_id",
    "supersedes",
    "importance",
    "idempotency_key",
    "fingerprint",
    "record",
    "checksum",
    "chain_hash",
)

_CHAIN_COLS = (
    events.c.sequence_no,
    events.c.event_id,
    events.c.agent,
    events.c.timestamp,
    events.c.event,
    events.c.parent_id,
    events.c.session_id,
    events.c.record,
    events.c.checksum,
    events.c.chain_hash,
)


def _event_dict(row: Sequence[Any]) -> dict[str, Any]:
    record = row[0]
    if record is not None:
        out: dict[str, Any] = orjson.loads(record)
    else:  # forget tombstone
        out = {
            "event_id": row[6],
            "agent": row[7],
            "sequence_no": row[8],
            "timestamp": row[9],
            "event": row[10] or "",
            "data": {},
            "parent_id": row[11],
            "session_id": row[12],
            "metadata": None,
            "supersedes": row[13],
            "erased": True,
        }
    out["received_at"] = row[1]
    out["importance"] = row[2]
    out["idempotency_key"] = row[3]
    out["checksum"] = row[4]
    out["chain_hash"] = row[5]
    return out


def _event_fragment(row: Sequence[Any]) -> Any:
    """An event in wire shape as pre-serialized JSON (``orjson.Fragment``), spliced from the
    stored canonical bytes: list, why and impact responses skip a parse and a re-serialize."""
    if row[0] is None:
        return _event_dict(row)
    extras = orjson.dumps(
        {
            "received_at": row[1],
            "importance": row[2],
            "idempotency_key": row[3],
            "checksum": row[4],
            "chain_hash": row[5],
        }
    )
    return orjson.Fragment(bytes(row[0][:-1]) + b"," + extras[1:])


def _export_line(row: Sequence[Any]) -> bytes:
    """One NDJSON line, spliced from the stored canonical bytes without re-parsing."""
    extras = orjson.dumps(
        {
            "received_at": row[1],
            "importance": row[2],
            "idempotency_key": row[3],
            "checksum": row[4],
            "chain_hash": row[5],
        }
    )
    return bytes(row[0][:-1]) + b"," + extras[1:] + b"\n"


def _chain_row(row: Sequence[Any]) -> ChainRow:
    record = row[7]
    return ChainRow(
        row[0],
        row[1],
        row[2],
        row[3],
        row[4],
        row[5],
        row[6],
        bytes(record) if record is not None else None,
        row[8],
        row[9],
    )


def _key_record(row: Any) -> KeyRecord:
    return KeyRecord(
        key_id=row.key_id,
        name=row.name,
        key_hash=row.key_hash,
        prefix=row.prefix,
        agent=row.agent,
        scope=row.scope,
        created_at=row.created_at,
        expires_at=row.expires_at,
        revoked_at=row.revoked_at,
    )


class SQLStore(QueryStoreMixin, LedgerStore):
    """The shared SQL implementation; see the module docstring for what subclasses supply."""

    def __init__(self, engine: Engine, *, chain_key: str | None = None) -> None:
        self.engine = engine
        self.hasher = ChainHasher(chain_key)

    # -- dialect hooks -----------------------------------------------------------------------

    @abc.abstractmethod
    def _writer(self) -> contextlib.AbstractContextManager[Connection]:
        """A connection inside a write transaction that excludes every other writer."""

    @abc.abstractmethod
    def _distinct_list(self, column: ColumnElement[Any]) -> ColumnElement[Any]:
        """An aggregate returning the distinct values as a JSON array (text or native)."""

    def _insert_events(self, conn: Connection, rows: list[tuple[Any, ...]]) -> None:
        """Insert new event rows (tuples in :data:`INSERT_COLUMNS` order), one statement.

        The default goes through Core; a dialect may override it with its driver's fastest
        bulk path (the SQLite store uses ``executemany`` on the driver cursor).
        """
        conn.execute(events.insert(), [dict(zip(INSERT_COLUMNS, row, strict=True)) for row in rows])

    @contextlib.contextmanager
    def _reader(self) -> Iterator[Connection]:
        with self.engine.connect() as conn:
            yield conn

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        """Dispose of the connection pool."""
        self.engine.dispose()

    def ping(self) -> None:
        """``SELECT 1``."""
        with self._reader() as conn:
            conn.execute(select(literal(1))).scalar_one()

    # -- writes ------------------------------------------------------------------------------

    def append(
        self, items: Sequence[PreparedEvent], *, keep_received_at: Sequence[str | None] = ()
    ) -> list[AppendOutcome]:
        """See :meth:`LedgerStore.append`."""
        if not items:
            return []
        with self._writer() as conn:
            return self._append_in(conn, items, keep_received_at)

    def _lookup_existing(
        self, conn: Connection, items: Sequence[PreparedEvent]
    ) -> tuple[dict[str, tuple[str | None, AppendOutcome]], dict[tuple[str, str], Any]]:
        cols = (
            events.c.event_id,
            events.c.agent,
            events.c.idempotency_key,
            events.c.sequence_no,
            events.c.timestamp,
            events.c.checksum,
            events.c.chain_hash,
            events.c.fingerprint,
        )
        by_id: dict[str, tuple[str | None, AppendOutcome]] = {}
        by_key: dict[tuple[str, str], tuple[str | None, AppendOutcome]] = {}

        def remember(row: Any) -> None:
            outcome = AppendOutcome(
                ok=True,
                status=200,
                event_id=row[0],
                sequence_no=row[3],
                timestamp=row[4],
                checksum=row[5],
                chain_hash=row[6],
                duplicate=True,
            )
            by_id[row[0]] = (row[7], outcome)
            if row[2] is not None:
                by_key[(row[1], row[2])] = (row[7], outcome)

        ids = [it.event_id for it in items if it.event_id is not None]
        for start in range(0, len(ids), _IN_CHUNK):
            chunk = ids[start : start + _IN_CHUNK]
            for row in conn.execute(select(*cols).where(events.c.event_id.in_(chunk))):
                remember(row)
        keys = sorted({(it.agent, it.idempotency_key) for it in items if it.idempotency_key})
        for start in range(0, len(keys), _IN_CHUNK):
            chunk_keys = keys[start : start + _IN_CHUNK]
            pair = tuple_(events.c.agent, events.c.idempotency_key)
            query = select(*cols).where(pair.in_(chunk_keys))
            for row in conn.execute(query):
                remember(row)
        return by_id, by_key

    def _append_in(
        self,
        conn: Connection,
        items: Sequence[PreparedEvent],
        keep_received_at: Sequence[str | None],
    ) -> list[AppendOutcome]:
        received = now_ts()
        by_id, by_key = self._lookup_existing(conn, items)
        names = sorted({it.agent for it in items})
        heads: dict[str, list[Any]] = {}
        for start in range(0, len(names), _IN_CHUNK):
            query = select(
                agents.c.agent,
                agents.c.last_seq,
                agents.c.last_hash,
                agents.c.event_count,
                agents.c.first_seen,
                agents.c.last_seen,
            ).where(agents.c.agent.in_(names[start : start + _IN_CHUNK]))
            for row in conn.execute(query):
                heads[row[0]] = [row[1], row[2], row[3], row[4], row[5], False]
        hasher = self.hasher
        link = hasher.link
        checksum_of = hasher.checksum
        outcomes: list[AppendOutcome] = []
        rows: list[tuple[Any, ...]] = []
        for index, item in enumerate(items):
            parent_id = item.parent_id
            if item.parent_index is not None:
                if item.parent_index >= index:
                    outcomes.append(
                        AppendOutcome(
                            ok=False,
                            status=422,
                            error=f"parent_index: must name an earlier item (< {index})",
                        )
                    )
                    continue
                parent = outcomes[item.parent_index]
                if not parent.ok:
                    outcomes.append(
                        AppendOutcome(
                            ok=False,
                            status=422,
                            error=f"parent_index: item {item.parent_index} was not written",
                        )
                    )
                    continue
                parent_id = parent.event_id
            hit = None
            field_name = "event_id"
            if item.event_id is not None:
                hit = by_id.get(item.event_id)
            if hit is None and item.idempotency_key is not None:
                hit = by_key.get((item.agent, item.idempotency_key))
                field_name = "idempotency_key"
            if hit is not None:
                fingerprint, stored = hit
                if fingerprint == item.fingerprint:
                    outcomes.append(
                        AppendOutcome(
                            ok=True,
                            status=200,
                            event_id=stored.event_id,
                            sequence_no=stored.sequence_no,
                            timestamp=stored.timestamp,
                            checksum=stored.checksum,
                            chain_hash=stored.chain_hash,
                            duplicate=True,
                        )
                    )
                else:
                    outcomes.append(
                        AppendOutcome(
                            ok=False,
                            status=409,
                            event_id=stored.event_id,
                            error=(
                                f"{field_name}: already used by event {stored.event_id} "
                                "with a different body"
                            ),
                        )
                    )
                continue
            event_id = item.event_id or str(uuid_utils.uuid7())
            head = heads.get(item.agent)
            if head is None:
                head = [0, None, 0, item.timestamp, item.timestamp, True]
                heads[item.agent] = head
            seq = head[0] + 1
            record = {
                "event_id": event_id,
                "agent": item.agent,
                "sequence_no": seq,
                "timestamp": item.timestamp,
                "event": item.event,
                "data": item.data,
                "parent_id": parent_id,
                "session_id": item.session_id,
                "metadata": item.metadata,
                "supersedes": item.supersedes,
            }
            canon = canonical(record, fast_ok=item.fast_ok)
            checksum = checksum_of(canon)
            chain_hash = link(head[1], canon)
            head[0] = seq
            head[1] = chain_hash
            head[2] += 1
            if item.timestamp < head[3]:
                head[3] = item.timestamp
            if item.timestamp > head[4]:
                head[4] = item.timestamp
            kept = keep_received_at[index] if index < len(keep_received_at) else None
            rows.append(
                (
                    event_id,
                    item.agent,
                    seq,
                    item.timestamp,
                    kept or received,
                    item.event,
                    parent_id,
                    item.session_id,
                    item.supersedes,
                    item.importance,
                    item.idempotency_key,
                    item.fingerprint,
                    canon,
                    checksum,
                    chain_hash,
                )
            )
            outcome = AppendOutcome(
                ok=True,
                status=201,
                event_id=event_id,
                sequence_no=seq,
                timestamp=item.timestamp,
                checksum=checksum,
                chain_hash=chain_hash,
            )
            outcomes.append(outcome)
            dup = AppendOutcome(
                ok=True,
                status=200,
                event_id=event_id,
                sequence_no=seq,
                timestamp=item.timestamp,
                checksum=checksum,
                chain_hash=chain_hash,
                duplicate=True,
            )
            by_id[event_id] = (item.fingerprint, dup)
            if item.idempotency_key is not None:
                by_key[(item.agent, item.idempotency_key)] = (item.fingerprint, dup)
        if rows:
            self._insert_events(conn, rows)
            new_heads = []
            for name, (seq, chain_hash, count, first, last, is_new) in heads.items():
                if is_new:
                    new_heads.append(
                        {
                            "agent": name,
                            "last_seq": seq,
                            "last_hash": chain_hash,
                            "event_count": count,
                            "first_seen": first,
                            "last_seen": last,
                        }
                    )
                else:
                    conn.execute(
                        update(agents)
                        .where(agents.c.agent == name)
                        .values(
                            last_seq=seq,
                            last_hash=chain_hash,
                            event_count=count,
                            first_seen=first,
                            last_seen=last,
                        )
                    )
            if new_heads:
                conn.execute(agents.insert(), new_heads)
        return outcomes

    # -- reads -------------------------------------------------------------------------------

    def get_event(self, event_id: str) -> dict[str, Any] | None:
        """See :meth:`LedgerStore.get_event`."""
        with self._reader() as conn:
            row = conn.execute(select(*_EVENT_COLS).where(events.c.event_id == event_id)).first()
        return _event_dict(row) if row is not None else None

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
        query: Select[Any] = select(*_EVENT_COLS).where(events.c.agent == agent)
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
        with self._reader() as conn:
            return [_event_fragment(row) for row in conn.execute(query)]

    def why(self, event_id: str, *, depth: int, agent_scope: str | None) -> WhyResult | None:
        """See :meth:`LedgerStore.why`: one recursive CTE, ``depth + 1`` hops at most."""
        max_hop = depth + 1
        seed = select(
            events.c.event_id, events.c.parent_id, events.c.agent, literal(0).label("hop")
        ).where(events.c.event_id == event_id)
        anc = seed.cte("anc", recursive=True)
        parent = events.alias("p")
        step = select(parent.c.event_id, parent.c.parent_id, parent.c.agent, anc.c.hop + 1).where(
            parent.c.event_id == anc.c.parent_id, anc.c.hop < max_hop
        )
        if agent_scope is not None:
            step = step.where(anc.c.agent == agent_scope)
        anc = anc.union_all(step)
        query = (
            select(anc.c.hop, *_EVENT_COLS)
            .join_from(anc, events, events.c.event_id == anc.c.event_id)
            .order_by(anc.c.hop.desc())
        )
        with self._reader() as conn:
            rows = conn.execute(query).all()
        if not rows:
            return None
        result = WhyResult(chain=[], anchor_agent=rows[-1][8])
        top = rows[0]
        if top[0] == max_hop:
            result.depth_truncated = True
            rows = rows[1:]
        elif agent_scope is not None and top[8] != agent_scope and top[0] > 0:
            result.scoped_agent_limited = True
            rows = rows[1:]
        elif top[12] is not None:
            result.missing_parent = top[12]
        result.chain = [_event_fragment(row[1:]) for row in rows]
        return result

    def impact(self, event_id: str, *, limit: int, agent_scope: str | None) -> EventPage | None:
        """See :meth:`LedgerStore.impact`: one recursive CTE over the ``parent_id`` index."""
        with self._reader() as conn:
            exists = conn.execute(
                select(events.c.agent).where(events.c.event_id == event_id)
            ).first()
            if exists is None:
                return None
            # seeded from the row itself (not a literal) so the column's type and collation
            # match the recursive term on every dialect; rows are fetched back by primary key
            seed = select(events.c.id, events.c.event_id).where(events.c.event_id == event_id)
            desc = seed.cte("descendants", recursive=True)
            child = events.alias("c")
            step = select(child.c.id, child.c.event_id).where(child.c.parent_id == desc.c.event_id)
            if agent_scope is not None:
                step = step.where(child.c.agent == agent_scope)
            desc = desc.union(step)
            query = (
                select(*_EVENT_COLS)
                .where(events.c.id.in_(select(desc.c.id)), events.c.event_id != event_id)
                .order_by(events.c.timestamp, events.c.agent, events.c.sequence_no)
                .limit(limit + 1)
            )
            rows = conn.execute(query).all()
        truncated = len(rows) > limit
        return EventPage([_event_fragment(row) for row in rows[:limit]], truncated)

    def sessions(self, agent: str | None, *, limit: int) -> list[dict[str, Any]]:
        """See :meth:`LedgerStore.sessions`."""
        query = select(
            events.c.session_id,
            func.count(),
            self._distinct_list(events.c.event),
            func.min(events.c.timestamp),
            func.max(events.c.timestamp),
            self._distinct_list(events.c.agent),
        ).where(events.c.session_id.is_not(None))
        if agent is not None:
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
        with self._reader() as conn:
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
        query = select(*_EVENT_COLS).where(events.c.session_id == session_id)
        if agent is not None:
            query = query.where(events.c.agent == agent)
        query = query.order_by(events.c.timestamp, events.c.agent, events.c.sequence_no).limit(
            limit
        )
        with self._reader() as conn:
            return [_event_fragment(row) for row in conn.execute(query)]

    def agents(self, *, agent: str | None = None) -> list[dict[str, Any]]:
        """See :meth:`LedgerStore.agents`."""
        query = select(
            agents.c.agent, agents.c.first_seen, agents.c.last_seen, agents.c.event_count
        ).order_by(agents.c.agent)
        if agent is not None:
            query = query.where(agents.c.agent == agent)
        with self._reader() as conn:
            return [
                {"agent": r[0], "first_seen": r[1], "last_seen": r[2], "event_count": r[3]}
                for r in conn.execute(query)
            ]

    def export_lines(self, agent: str, *, page_size: int = 2000) -> Iterator[bytes]:
        """See :meth:`LedgerStore.export_lines`: keyset pages over ``(agent, sequence_no)``."""
        last = 0
        while True:
            query = (
                select(*_EVENT_COLS)
                .where(
                    events.c.agent == agent,
                    events.c.sequence_no > last,
                    events.c.record.is_not(None),
                )
                .order_by(events.c.sequence_no)
                .limit(page_size)
            )
            with self._reader() as conn:
                rows = conn.execute(query).all()
            if not rows:
                return
            yield b"".join(_export_line(row) for row in rows)
            last = rows[-1][8]
            if len(rows) < page_size:
                return

    # -- chain -------------------------------------------------------------------------------

    def chain_rows(self, agent: str, *, after_seq: int = 0) -> Iterator[ChainRowTuple]:
        """See :meth:`LedgerStore.chain_rows`."""
        query = (
            select(*_CHAIN_COLS)
            .where(events.c.agent == agent, events.c.sequence_no > after_seq)
            .order_by(events.c.sequence_no)
        )
        with self._reader() as conn:
            result = conn.execution_options(yield_per=5000).execute(query)
            for partition in result.partitions():
                yield from map(_chain_row, partition)

    def chain_head(self, agent: str) -> tuple[int, str] | None:
        """See :meth:`LedgerStore.chain_head`."""
        query = select(agents.c.last_seq, agents.c.last_hash).where(agents.c.agent == agent)
        with self._reader() as conn:
            row = conn.execute(query).first()
        return (int(row[0]), str(row[1])) if row is not None else None

    def chain_row_at(self, agent: str, sequence_no: int) -> ChainRow | None:
        """See :meth:`LedgerStore.chain_row_at`."""
        query = select(*_CHAIN_COLS).where(
            events.c.agent == agent, events.c.sequence_no == sequence_no
        )
        with self._reader() as conn:
            row = conn.execute(query).first()
        return _chain_row(row) if row is not None else None

    def chain_row_by_hash(self, agent: str, chain_hash: str) -> ChainRow | None:
        """See :meth:`LedgerStore.chain_row_by_hash`."""
        query = select(*_CHAIN_COLS).where(
            events.c.agent == agent, events.c.chain_hash == chain_hash
        )
        with self._reader() as conn:
            row = conn.execute(query).first()
        return _chain_row(row) if row is not None else None

    # -- keys --------------------------------------------------------------------------------

    def create_key(self, key: KeyRecord) -> None:
        """See :meth:`LedgerStore.create_key`."""
        with self._writer() as conn:
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
        with self._reader() as conn:
            row = conn.execute(select(api_keys).where(api_keys.c.key_hash == key_hash)).first()
        return _key_record(row) if row is not None else None

    def list_keys(self) -> list[KeyRecord]:
        """See :meth:`LedgerStore.list_keys`."""
        with self._reader() as conn:
            rows = conn.execute(select(api_keys).order_by(api_keys.c.created_at)).all()
        return [_key_record(row) for row in rows]

    def revoke_key(self, key_id: str, *, at: str) -> bool:
        """See :meth:`LedgerStore.revoke_key`."""
        with self._writer() as conn:
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
        with self._reader() as conn:
            return int(conn.execute(query).scalar_one())
