"""The reads and head writes of an append as driver SQL: one statement per question and batch.

The ids of a batch go to the database as one bound value (a JSON array that SQLite's
``json_each`` unpacks, a text array for PostgreSQL's ``= ANY``), so no statement is compiled
with hundreds of bound parameters and the driver's statement cache sees one text per question.
Each question is answered by an index (``event_id``, ``(agent, idempotency_key)``,
``event_causes.cause_id``, the ``agents`` primary key).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import orjson
from sqlalchemy import Connection

__all__ = ["Lookups"]

_EXISTING_COLUMNS = (
    "event_id, agent, idempotency_key, sequence_no, timestamp, checksum, chain_hash, fingerprint"
)
_HEAD_COLUMNS = "agent, last_seq, last_hash, event_count, first_seen, last_seen"


class Lookups:
    """The append's statements for one connection's dialect (``sqlite`` or ``postgresql``)."""

    def __init__(self, conn: Connection) -> None:
        sqlite = conn.dialect.name == "sqlite"
        mark = "?" if sqlite else "%s"
        listed = "IN (SELECT value FROM json_each(?))" if sqlite else "= ANY(%s)"
        self._conn = conn
        self._sqlite = sqlite
        self._by_id = f"SELECT {_EXISTING_COLUMNS} FROM events WHERE event_id {listed}"
        self._by_key = (
            f"SELECT {_EXISTING_COLUMNS} FROM events"
            f" WHERE agent = {mark} AND idempotency_key {listed}"
        )
        self._agent_of = f"SELECT event_id, agent FROM events WHERE event_id {listed}"
        self._referenced = f"SELECT DISTINCT cause_id FROM event_causes WHERE cause_id {listed}"
        self._heads = f"SELECT {_HEAD_COLUMNS} FROM agents WHERE agent {listed}"
        self._update_head = (
            f"UPDATE agents SET last_seq = {mark}, last_hash = {mark}, event_count = {mark},"
            f" first_seen = {mark}, last_seen = {mark} WHERE agent = {mark}"
        )
        self._insert_head = f"INSERT INTO agents ({_HEAD_COLUMNS}) VALUES ({', '.join([mark] * 6)})"

    def _listed(self, values: Iterable[str]) -> Any:
        """``values`` as the one bound value of a listed question."""
        return orjson.dumps(list(values)).decode() if self._sqlite else list(values)

    def _rows(self, sql: str, params: tuple[Any, ...]) -> Sequence[Any]:
        return self._conn.exec_driver_sql(sql, params).fetchall()

    def existing_by_id(self, ids: Sequence[str]) -> Sequence[Any]:
        """Stored events with these ids: rows of the existing-event columns."""
        return self._rows(self._by_id, (self._listed(ids),)) if ids else ()

    def existing_by_key(self, agent: str, keys: Sequence[str]) -> Sequence[Any]:
        """Stored events of ``agent`` with these idempotency keys."""
        return self._rows(self._by_key, (agent, self._listed(keys))) if keys else ()

    def agent_of(self, ids: Iterable[str]) -> dict[str, str]:
        """The agent of each of ``ids`` that is stored."""
        named = list(ids)
        if not named:
            return {}
        return {row[0]: row[1] for row in self._rows(self._agent_of, (self._listed(named),))}

    def referenced(self, ids: Sequence[str]) -> set[str]:
        """Those of ``ids`` that a stored edge names as a cause."""
        if not ids:
            return set()
        return {row[0] for row in self._rows(self._referenced, (self._listed(ids),))}

    def heads(self, names: Sequence[str]) -> dict[str, list[Any]]:
        """Each stored agent's head: ``[last_seq, last_hash, event_count, first_seen,
        last_seen, False]`` (the last item: not a new agent)."""
        return {
            row[0]: [row[1], row[2], row[3], row[4], row[5], False]
            for row in self._rows(self._heads, (self._listed(names),))
        }

    def write_heads(self, heads: dict[str, list[Any]]) -> None:
        """Store every head of ``heads``: new agents inserted, the others updated."""
        updates = [(*head[:5], name) for name, head in heads.items() if not head[5]]
        inserts = [(name, *head[:5]) for name, head in heads.items() if head[5]]
        if updates:
            self._conn.exec_driver_sql(self._update_head, updates)
        if inserts:
            self._conn.exec_driver_sql(self._insert_head, inserts)
