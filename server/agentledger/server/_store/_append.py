"""The append algorithm shared by the stores: duplicates, per-agent sequence numbers and chain
links, computed inside the caller's write transaction."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import uuid_utils
from sqlalchemy import Connection

from agentledger.protocol.vocabulary import EDGE_CAUSE
from agentledger.server._canonical import canonical
from agentledger.server._causes import record_edges
from agentledger.server._chain import ChainHasher
from agentledger.server._ingest import PreparedEvent, now_ts
from agentledger.server._store._cycles import CycleCheck
from agentledger.server._store._lookups import Lookups
from agentledger.server._store.base import AppendOutcome

__all__ = ["InsertRows", "append_in", "lookup_existing"]

#: Inserts event rows (tuples in ``INSERT_COLUMNS`` order) on a connection.
InsertRows = Callable[[Connection, list[tuple[Any, ...]]], None]


def lookup_existing(
    lookups: Lookups, items: Sequence[PreparedEvent]
) -> tuple[dict[str, tuple[str | None, AppendOutcome]], dict[tuple[str, str], Any]]:
    """Stored events with the ids or idempotency keys of ``items``: each as its fingerprint
    and the outcome a repeat of it gets."""
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
    wanted = set(ids)
    for found in lookups.existing_by_id(ids):
        if found[0] in wanted:  # an exact match, whatever the column's collation
            remember(found)
    keys: dict[str, set[str]] = {}
    for it in items:
        if it.idempotency_key:
            keys.setdefault(it.agent, set()).add(it.idempotency_key)
    for agent, agent_keys in keys.items():
        for row in lookups.existing_by_key(agent, sorted(agent_keys)):
            remember(row)
    return by_id, by_key


def _named_ids(items: Sequence[PreparedEvent]) -> tuple[set[str], set[str]]:
    """Every event id the items name as a cause (``parent_id`` or ``caused_by``), and every
    id they name in ``supersedes``."""
    causes = {c for it in items for c in (it.parent_id, *(c for c, _ in it.caused_by)) if c}
    return causes, {it.supersedes for it in items if it.supersedes}


class _Named:
    """Which agent each id an item names belongs to: stored events (asked once per batch)
    and the events accepted earlier in the same batch.

    A key bound to one agent may name (as a cause or in ``supersedes``) only events of that
    agent: any other id, stored under another agent or not stored at all, gets the same
    refusal, so the answer never tells whether another agent's event exists.
    """

    def __init__(self, agent_of: dict[str, str], reader_agent: str | None) -> None:
        self.agent_of = agent_of
        self.reader_agent = reader_agent

    def accept(self, event_id: str, agent: str) -> None:
        """An event of this batch was accepted: later items may name it."""
        self.agent_of[event_id] = agent

    def unreadable(self, field: str, named: str) -> str | None:
        """The refusal for a bound key naming ``named`` in ``field``, or ``None``."""
        reader = self.reader_agent
        if reader is None or self.agent_of.get(named) == reader:
            return None
        return f"{field}: no event {named} of agent {reader!r} is stored"

    def supersedes_refusal(self, event_id: str, agent: str, supersedes: str | None) -> str | None:
        """Why event ``event_id`` of ``agent`` may not supersede ``supersedes``, or ``None``:
        an event replaces only another event of its own agent."""
        if supersedes is None:
            return None
        if supersedes == event_id:  # it would hide itself from search and memory
            return "supersedes: an event cannot supersede itself"
        unreadable = self.unreadable("supersedes", supersedes)
        if unreadable is not None:
            return unreadable
        owner = self.agent_of.get(supersedes)
        if owner is not None and owner != agent:
            return (
                f"supersedes: event {supersedes} belongs to another agent; an event replaces "
                "only an event of its own agent"
            )
        return None


def _cause_refusal(
    event_id: str,
    parent_id: str | None,
    caused_by: Sequence[tuple[str, str | None]],
    checks: tuple[set[str], _Named, CycleCheck],
) -> str | None:
    """Why this event cannot have these causes (naming the field), or ``None`` when it can."""
    referenced, named, cycles = checks
    if parent_id == event_id:
        return "parent_id: an event cannot be its own parent"
    if any(cause == event_id for cause, _ in caused_by):
        return "caused_by: an event cannot be its own cause"
    for field, cause in [("parent_id", parent_id), *(("caused_by", c) for c, _ in caused_by)]:
        if cause is not None:
            refusal = named.unreadable(field, cause)
            if refusal is not None:
                return refusal
    if event_id in referenced:
        causes = [c for c, _ in caused_by if c != parent_id]
        if parent_id is not None:
            causes.insert(0, parent_id)
        closing = cycles.closing_cause(event_id, causes)
        if closing is not None:
            field = "parent_id" if closing == parent_id else "caused_by"
            return (
                f"{field}: {closing} descends from event {event_id}; the edge would close a cycle"
            )
    return None


def _edges(
    event_id: str, item: PreparedEvent, parent_id: str | None
) -> tuple[list[tuple[str, str, str, str]], list[dict[str, str]] | None]:
    """The edge rows of one event and its record's ``caused_by`` (``None`` when empty)."""
    causes = [(c, label) for c, label in item.caused_by if c != parent_id or label]
    record = (
        [{"event_id": cause, "kind": label or EDGE_CAUSE} for cause, label in causes]
        if causes
        else None
    )
    rows = [
        (event_id, cause, kind, item.agent)
        for cause, kind in record_edges(item.event, parent_id, record)
    ]
    return rows, record


def append_in(
    conn: Connection,
    items: Sequence[PreparedEvent],
    keep_received_at: Sequence[str | None],
    *,
    hasher: ChainHasher,
    insert_events: InsertRows,
    insert_edges: InsertRows,
    reader_agent: str | None = None,
    lineage_lock: Callable[[Connection], None] | None = None,
) -> list[AppendOutcome]:
    """Write ``items`` on ``conn`` (a write transaction that excludes other writers of the
    same agents); see :meth:`~agentledger.server._store.base.LedgerStore.append`.

    ``lineage_lock`` is for a store whose writers of different agents run at the same time
    (PostgreSQL): it takes a lock that every append which could close a cycle across agents
    holds (one naming a cause not stored yet, or writing an event a stored edge names), so two
    such appends see each other's edges. A store with one writer passes ``None``.
    """
    received = now_ts()
    lookups = Lookups(conn)
    by_id, by_key = lookup_existing(lookups, items)
    new_ids = [it.event_id for it in items if it.event_id is not None and it.event_id not in by_id]
    # Which named causes are stored (and under which agent) is asked BEFORE which new ids
    # stored edges name: a concurrent writer that commits between the two queries is then seen
    # by one of them. Only a bound key (causes it may not read) or a store with concurrent
    # writers of different agents (a cause not stored yet) needs the answer.
    # Every ``supersedes`` needs the answer too (an event replaces only its own agent's).
    unstored = False
    causes, replaced = _named_ids(items)
    agent_of: dict[str, str] = {}
    if lineage_lock is not None or reader_agent is not None:
        agent_of = lookups.agent_of(causes | replaced)
        unstored = bool(causes - agent_of.keys() - {it.event_id for it in items if it.event_id})
    elif replaced:
        agent_of = lookups.agent_of(replaced)
    named = _Named(agent_of, reader_agent)
    # ids a stored event already names as a cause: only these can close a cycle
    referenced = lookups.referenced(new_ids)
    if lineage_lock is not None and (unstored or referenced):
        lineage_lock(conn)
        referenced = lookups.referenced(new_ids)  # edges committed while we waited
    heads = lookups.heads(sorted({it.agent for it in items}))
    link = hasher.link
    checksum_of = hasher.checksum
    column_seal = hasher.column_seal
    outcomes: list[AppendOutcome] = []
    rows: list[tuple[Any, ...]] = []
    edge_rows: list[tuple[str, str, str, str]] = []
    pending: dict[str, list[str]] = {}
    checks = (referenced, named, CycleCheck(conn, pending))
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
                named.accept(str(stored.event_id), item.agent)  # the same body: same agent
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
        refusal = _cause_refusal(event_id, parent_id, item.caused_by, checks)
        if refusal is None:
            refusal = named.supersedes_refusal(event_id, item.agent, item.supersedes)
        if refusal is not None:
            outcomes.append(AppendOutcome(ok=False, status=422, error=refusal))
            continue
        edges, caused_by = _edges(event_id, item, parent_id)
        named.accept(event_id, item.agent)
        pending[event_id] = [edge[1] for edge in edges]
        referenced.update(pending[event_id])
        edge_rows.extend(edges)
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
        if caused_by is not None:  # absent when empty: older records keep their bytes
            record["caused_by"] = caused_by
        if item.scope_id is not None:
            record["scope_id"] = item.scope_id
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
        received_at = kept or received
        rows.append(
            (
                event_id,
                item.agent,
                seq,
                item.timestamp,
                received_at,
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
                column_seal(chain_hash, received_at, item.importance),
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
        # a later item repeating this one gets a copy marked duplicate (built only then)
        by_id[event_id] = (item.fingerprint, outcome)
        if item.idempotency_key is not None:
            by_key[(item.agent, item.idempotency_key)] = (item.fingerprint, outcome)
    if rows:
        insert_events(conn, rows)
        if edge_rows:
            insert_edges(conn, edge_rows)
        lookups.write_heads(heads)
    return outcomes
