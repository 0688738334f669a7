"""The append's slow path: when the database refuses a batch for what one of its items holds
(a data error, such as a value out of a column's range), the batch is written again item by
item, each under a savepoint, so that item fails alone (422 naming the reason) and the others
are stored in order, with gapless sequence numbers and an intact chain.

The fast path (one transaction, one bulk insert for the whole batch) is untouched; this runs
only after it failed. Design: ``docs/design/server-store.md``.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import sqlite3
from collections.abc import Callable, Sequence

from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError

from agentledger.server._ingest import PreparedEvent
from agentledger.server._store._rows import INSERT_COLUMNS
from agentledger.server._store.base import AppendOutcome

__all__ = ["AppendOn", "append_each", "refused_content"]

logger = logging.getLogger("agentledger.server.store")

#: Appends items on a connection inside the caller's write transaction (``append_on``).
AppendOn = Callable[
    [Connection, Sequence[PreparedEvent], Sequence[str | None]], list[AppendOutcome]
]

#: SQLSTATE classes that mean "this value cannot be stored": 22 data exception (a number out of
#: range, a character the encoding lacks), 54 program limit exceeded (a value too large).
_CONTENT_CLASSES = ("22", "54")
#: The request field each stored column comes from; ``record`` and ``search`` hold ``data``.
_FIELD_OF = {
    "agent": "agent",
    "event": "event",
    "event_id": "event_id",
    "timestamp": "timestamp",
    "parent_id": "parent_id",
    "session_id": "session_id",
    "supersedes": "supersedes",
    "importance": "importance",
    "idempotency_key": "idempotency_key",
}
_COLUMNS = (*INSERT_COLUMNS, "search")
_PARAMETER = re.compile(r"parameter \$(\d+)")
_COLUMN = re.compile(r"column (\w+)")
_SAVEPOINT = "agentledger_item"
#: The longest database message quoted in an item's error.
_MESSAGE_CHARS = 200


def _field(context: str) -> str:
    """The request field a PostgreSQL error context names (``data`` when none)."""
    column = None
    if found := _PARAMETER.search(context):  # "unnamed portal parameter $16 = '...'"
        position = int(found.group(1)) - 1
        column = _COLUMNS[position] if 0 <= position < len(_COLUMNS) else None
    elif found := _COLUMN.search(context):  # "COPY events, line 1, column search: ..."
        column = found.group(1)
    return _FIELD_OF.get(column or "", "data")


def refused_content(error: BaseException) -> str | None:
    """``"field: reason"`` when the database refused a row for a value it holds, else ``None``
    (a lost connection, a timeout, a race or a bug is not the item's fault)."""
    origin = error.orig if isinstance(error, DBAPIError) else error
    if isinstance(origin, sqlite3.DataError):  # e.g. a string or blob over SQLite's limit
        return f"data: the database cannot store this value ({origin})"
    state = getattr(origin, "sqlstate", None)
    if not isinstance(state, str) or not state.startswith(_CONTENT_CLASSES):
        return None
    diag = getattr(origin, "diag", None)
    message = str(getattr(diag, "message_primary", None) or origin).splitlines()[0]
    if len(message) > _MESSAGE_CHARS:
        message = message[:_MESSAGE_CHARS] + "..."
    field = _field(str(getattr(diag, "context", None) or ""))
    return f"{field}: the database cannot store this value ({message})"


def append_each(
    conn: Connection,
    items: Sequence[PreparedEvent],
    keep_received_at: Sequence[str | None],
    append_on: AppendOn,
) -> list[AppendOutcome]:
    """Append ``items`` one at a time on ``conn`` (the caller's write transaction), each under
    a savepoint: an item the database refuses for its content gets a 422 outcome and leaves
    nothing behind; an item whose ``parent_index`` names it fails too.

    Raises:
        Exception: any error not caused by an item's content, as raised.
    """
    outcomes: list[AppendOutcome] = []
    for index, item in enumerate(items):
        parent_index = item.parent_index
        if parent_index is not None:
            if not 0 <= parent_index < index:
                error = f"parent_index: must name an earlier item (< {index})"
                outcomes.append(AppendOutcome(ok=False, status=422, error=error))
                continue
            parent = outcomes[parent_index]
            if not parent.ok:
                error = f"parent_index: item {parent_index} was not written"
                outcomes.append(AppendOutcome(ok=False, status=422, error=error))
                continue
            item = dataclasses.replace(item, parent_id=parent.event_id, parent_index=None)
        kept = keep_received_at[index] if index < len(keep_received_at) else None
        conn.exec_driver_sql(f"SAVEPOINT {_SAVEPOINT}")
        try:
            (outcome,) = append_on(conn, [item], [kept])
        except Exception as error:  # SQLAlchemy-wrapped, or the driver's own from a bulk path
            reason = refused_content(error)
            if reason is None:
                raise
            conn.exec_driver_sql(f"ROLLBACK TO SAVEPOINT {_SAVEPOINT}")
            # a value the input checks let through: worth a look, though the caller got a 422
            logger.warning(
                "the database refused item %d of agent %r: %s", index, item.agent, reason
            )
            outcome = AppendOutcome(ok=False, status=422, error=reason)
        conn.exec_driver_sql(f"RELEASE SAVEPOINT {_SAVEPOINT}")
        outcomes.append(outcome)
    return outcomes
