"""Forget in SQL: find the events whose ``data`` or ``metadata`` matches and the sessions whose
id names the value, then, in one transaction, tombstone the events with their embeddings and
index rows and give the sessions a pseudonym (:mod:`._pseudonyms`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
from sqlalchemy import ColumnElement, Connection, and_, bindparam, delete, or_, select, update

from agentledger.server._query._pseudonyms import find_sessions, rename_sessions
from agentledger.server._query.forget import SEARCHED, ForgetMatcher, prefilters
from agentledger.server._search.base import SearchBackend
from agentledger.server._store._rows import IN_CHUNK
from agentledger.server._store._sql import SQLStore
from agentledger.server._tables import event_embeddings, events

__all__ = ["MARK_COLUMNS", "ForgetOutcome", "forget", "write_tombstones"]

#: The columns a tombstone keeps and its erasure mark covers, in the order
#: :meth:`~agentledger.server._chain.ChainHasher.erasure_mark` takes them; forget and the
#: retention sweep select them in this order (``session_id`` is the session the tombstone
#: keeps, a pseudonym when forget renamed it).
MARK_COLUMNS = (
    events.c.event_id,
    events.c.agent,
    events.c.sequence_no,
    events.c.timestamp,
    events.c.event,
    events.c.parent_id,
    events.c.session_id,
    events.c.supersedes,
)


@dataclass(slots=True)
class ForgetOutcome:
    """What a forget erased (or would erase, ``dry_run``)."""

    deleted_events: int = 0
    event_ids: list[str] = field(default_factory=list)
    agents: dict[str, int] = field(default_factory=dict)
    embeddings_deleted: int = 0
    index_rows_deleted: int = 0
    #: events matched per part of the record (``data``, ``metadata``)
    matched_in: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SEARCHED, 0))
    #: pseudonyms of the sessions whose id named the value
    sessions_renamed: list[str] = field(default_factory=list)
    #: events kept but rewritten with their session's pseudonym
    events_amended: int = 0


def write_tombstones(
    conn: Connection,
    search: SearchBackend,
    marks: list[dict[str, Any]],
    ids: list[int],
    *,
    index: bool = True,
) -> tuple[int, int]:
    """Turn the rows ``ids`` into tombstones inside the caller's write transaction (after
    ``search.erase_prepare(conn)``): ``marks`` holds one ``{"row_id", "mark", "session"}`` per
    row (the erasure mark of :meth:`~agentledger.server._chain.ChainHasher.erasure_mark` and
    the session id the tombstone keeps). Deletes the rows' embeddings and full-text index
    rows (``index=False``: the caller calls ``search.erase_in_transaction`` itself later);
    returns ``(embeddings deleted, index rows deleted)``. Shared by forget and the
    retention sweep (:mod:`agentledger.server._retention`)."""
    # one statement: each tombstone gets its own erasure mark (in ``fingerprint``)
    if marks:
        conn.execute(
            update(events)
            .where(events.c.id == bindparam("row_id"))
            .values(
                record=None,
                checksum=None,
                fingerprint=bindparam("mark"),
                idempotency_key=None,
                session_id=bindparam("session"),
            ),
            marks,
        )
    embeddings = 0
    for start in range(0, len(ids), IN_CHUNK):
        chunk = ids[start : start + IN_CHUNK]
        embeddings += conn.execute(
            delete(event_embeddings).where(event_embeddings.c.id.in_(chunk))
        ).rowcount
    return embeddings, search.erase_in_transaction(conn, ids) if index else 0


def forget(
    store: SQLStore,
    search: SearchBackend,
    filter_key: str,
    filter_value: str,
    *,
    agents: Sequence[str] | None,
    dry_run: bool,
    id_limit: int = 1000,
) -> ForgetOutcome:
    """Erase (tombstone) matching events with their index rows and embeddings and rename the
    sessions whose id names the value, in one transaction; ``dry_run`` only counts.
    ``event_ids`` lists at most ``id_limit`` ids.

    Candidates are narrowed on the canonical record bytes (``search.record_contains`` of
    :func:`~agentledger.server._query.forget.prefilters`), then checked exactly. The tombstone
    keeps ``event_id``, ``sequence_no``, ``chain_hash`` and the indexed columns (type, time,
    parent, session, supersedes), clears ``record``, ``checksum`` and ``idempotency_key``, and
    replaces ``fingerprint`` by the erasure mark
    (:meth:`~agentledger.server._chain.ChainHasher.erasure_mark`): verification counts a
    tombstone with a valid mark as erased, any other NULL record as changed.
    """
    matcher = ForgetMatcher(filter_key, filter_value)
    key_pattern, value_patterns = prefilters(filter_key, filter_value)
    where: list[ColumnElement[bool]] = [events.c.record.is_not(None)]
    key_test = search.record_contains(key_pattern)
    value_tests = [search.record_contains(v) for v in value_patterns]
    if key_test is not None:
        where.append(key_test)
    if value_tests and all(t is not None for t in value_tests):
        where.append(or_(*[t for t in value_tests if t is not None]))
    if agents is not None:
        where.append(events.c.agent.in_(list(agents)))
    query = select(events.c.id, events.c.record, *MARK_COLUMNS, events.c.chain_hash).where(
        and_(*where)
    )
    outcome = ForgetOutcome()
    hasher = store.hasher
    context = store.reader() if dry_run else store.writer()
    with context as conn:
        if not dry_run:
            search.erase_prepare(conn)
        renames = find_sessions(conn, hasher, filter_value, agents)
        outcome.sessions_renamed = sorted(renames.names.values())
        ids: list[int] = []
        marks: list[dict[str, Any]] = []
        for row in conn.execute(query):
            row_id, record, *kept, chain_hash = row
            parts = matcher.matched_in(orjson.loads(record))
            if not parts:
                continue
            for part in parts:
                outcome.matched_in[part] += 1
            ids.append(row_id)
            event_id, agent = kept[0], kept[1]
            session = kept[6] = renames.new_id(agent, kept[6])
            marks.append(
                {
                    "row_id": row_id,
                    "mark": hasher.erasure_mark(chain_hash, tuple(kept)),
                    "session": session,
                }
            )
            outcome.agents[agent] = outcome.agents.get(agent, 0) + 1
            if len(outcome.event_ids) < id_limit:
                outcome.event_ids.append(event_id)
        outcome.deleted_events = len(ids)
        outcome.events_amended = rename_sessions(
            conn, hasher, search, renames, skip=set(ids), dry_run=dry_run
        )
        if dry_run:
            return outcome
        if not ids and not renames.names:
            return outcome
        embeddings, index_rows = write_tombstones(conn, search, marks, ids)
        outcome.embeddings_deleted += embeddings
        outcome.index_rows_deleted = index_rows
    search.erase_finish()
    return outcome
