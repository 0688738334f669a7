"""Shared SQL helpers of the stores: the column lists and the row -> wire-shape converters.

Both backends (and the query features) read events through these, so an event looks the same
whichever store and route produced it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import orjson
from sqlalchemy import Connection, select

from agentledger.server._chain import ChainRow
from agentledger.server._store.base import KeyRecord
from agentledger.server._tables import events

__all__ = [
    "CHAIN_COLS",
    "EVENT_COLS",
    "INSERT_COLUMNS",
    "IN_CHUNK",
    "chain_row",
    "event_dict",
    "event_fragment",
    "events_by_ids",
    "export_line",
    "key_record",
]

#: Most values bound in one ``IN (...)`` list.
IN_CHUNK = 500

#: Columns read for an event in wire shape; order matters for event_dict/export_line.
EVENT_COLS = (
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

#: Column order of the row tuples handed to :meth:`SQLStore.insert_events`.
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
    "seal",
)

CHAIN_COLS = (
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
    events.c.supersedes,
    events.c.fingerprint,
    events.c.received_at,
    events.c.importance,
    events.c.seal,
)


#: One event by id, the columns of :data:`EVENT_COLS`, in the driver's named-parameter style
#: (``{p}`` is ``:event_id`` for sqlite3, ``%(event_id)s`` for psycopg).
_GET_EVENT_SQL: Final = "SELECT {cols} FROM events WHERE event_id = {p}".format(
    cols=", ".join(column.name for column in EVENT_COLS), p="{p}"
)
_EVENT_PARAM: Final = {"sqlite": ":event_id", "postgresql": "%(event_id)s"}


def fetch_event_row(conn: Connection, event_id: str) -> Sequence[Any] | None:
    """The :data:`EVENT_COLS` row of ``event_id`` read on the driver's cursor (a plain tuple;
    SQLAlchemy's statement building and row objects cost about three times the query)."""
    driver = conn.connection.driver_connection
    assert driver is not None
    cursor = driver.cursor()
    try:
        cursor.execute(
            _GET_EVENT_SQL.format(p=_EVENT_PARAM[conn.dialect.name]), {"event_id": event_id}
        )
        row: Sequence[Any] | None = cursor.fetchone()
    finally:
        cursor.close()
    return row


def event_dict(row: Sequence[Any]) -> dict[str, Any]:
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


def event_fragment(row: Sequence[Any]) -> Any:
    """An event in wire shape as pre-serialized JSON (``orjson.Fragment``), spliced from the
    stored canonical bytes: list, why and impact responses skip a parse and a re-serialize."""
    if row[0] is None:
        return event_dict(row)
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


def export_line(row: Sequence[Any]) -> bytes:
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


def chain_row(row: Sequence[Any]) -> ChainRow:
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
        row[10],
        row[11],
        row[12],
        row[13],
        row[14],
    )


def key_record(row: Any) -> KeyRecord:
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


def events_by_ids(conn: Connection, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """Events in wire shape by ``events.id`` (row ids not found are left out)."""
    found: dict[int, dict[str, Any]] = {}
    for start in range(0, len(ids), IN_CHUNK):
        chunk = list(ids[start : start + IN_CHUNK])
        query = select(events.c.id, *EVENT_COLS).where(events.c.id.in_(chunk))
        for row in conn.execute(query):
            found[row[0]] = event_dict(row[1:])
    return found
