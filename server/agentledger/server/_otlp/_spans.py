"""The span area (``otlp_spans``) and the write of one export: one transaction.

An export's new spans are stored; every trace that now has its root span, and every span that
has waited longer than the pending bound, is turned into events (:func:`._link.trace_events`),
prepared like every other write (limits, redaction, fingerprint) and appended on the same
connection, and its spans are marked written. A span already stored (a re-sent export) is
skipped, so it is never written twice.

The ready traces are appended at once, under a savepoint. When the store refuses one of their
events (an input check, an event id already stored with another body, a value the database
cannot store), that savepoint is rolled back and the traces are appended again one by one,
each under a savepoint of its own: a refused trace leaves none of its events behind, and its
waiting spans are marked refused (``materialised = 2``, never retried); the others are written.
Any other database failure rolls the whole export back and is raised.

On PostgreSQL each transaction first takes the OTLP advisory lock (:data:`OTLP_LOCK_KEY`), so
two server processes never write the same trace twice; the timer's flush only tries it.
Design: ``docs/design/server-otlp.md``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from sqlalchemy import Connection, and_, select, text, update

from agentledger.server._ingest import ItemError, PreparedEvent, now_ts, prepare, validate_items
from agentledger.server._otlp._link import trace_events
from agentledger.server._store._each import refused_content
from agentledger.server._store._sql import SQLStore
from agentledger.server._tables import otlp_spans

__all__ = ["OTLP_LOCK_KEY", "PENDING_S", "REFUSED", "IngestResult", "ingest_spans"]

#: How long a span waits for its trace's root span before it is written without it (seconds).
PENDING_S = 30.0
#: At most this many waiting traces are written by one transaction besides the export's own.
STALE_TRACES = 100
#: ``otlp_spans.materialised`` of a span whose trace the store refused (never retried).
REFUSED = 2
#: The PostgreSQL advisory lock key that serialises OTLP writes across server processes.
OTLP_LOCK_KEY = 0x6F746C7073706E73  # 'otlpspns'
_SAVEPOINT = "agentledger_otlp_trace"


@dataclass
class IngestResult:
    """What one export (or one flush) did."""

    received: int = 0
    duplicates: int = 0
    pending: int = 0
    written: int = 0
    #: spans of this export whose trace the store refused
    rejected: int = 0
    #: traces turned into events (written or refused)
    traces: int = 0
    #: the PostgreSQL lock was busy (a flush that only tried it did nothing)
    busy: bool = False
    errors: list[str] = field(default_factory=list)


def _traces(
    conn: Connection, trace_ids: Iterable[str]
) -> dict[str, dict[str, tuple[dict[str, Any], int]]]:
    out: dict[str, dict[str, tuple[dict[str, Any], int]]] = {}
    ids = sorted(set(trace_ids))
    for start in range(0, len(ids), 500):
        rows = conn.execute(
            select(
                otlp_spans.c.trace_id,
                otlp_spans.c.span_id,
                otlp_spans.c.span,
                otlp_spans.c.materialised,
            ).where(otlp_spans.c.trace_id.in_(ids[start : start + 500]))
        ).all()
        for trace_id, span_id, body, done in rows:
            out.setdefault(trace_id, {})[span_id] = (orjson.loads(body), int(done))
    return out


def _mark(conn: Connection, trace_ids: list[str], value: int) -> None:
    """Flip the waiting spans of ``trace_ids`` to ``value`` (written or refused)."""
    ids = sorted(trace_ids)
    for first in range(0, len(ids), 500):
        conn.execute(
            update(otlp_spans)
            .where(
                and_(
                    otlp_spans.c.trace_id.in_(ids[first : first + 500]),
                    otlp_spans.c.materialised == 0,
                )
            )
            .values(materialised=value)
        )


def _lock_agents(store: SQLStore, conn: Connection, prepared: list[PreparedEvent]) -> None:
    """On PostgreSQL, the agents' advisory locks that every append of theirs takes."""
    if store.engine.dialect.name != "postgresql":
        return
    from agentledger.server._store.postgres import advisory_key  # psycopg only here

    for key in sorted({advisory_key(item.agent) for item in prepared}):
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": key})


def _prepare(
    raws: list[dict[str, Any]], *, max_depth: int, patterns: Collection[str], received: str
) -> tuple[list[PreparedEvent], list[str]]:
    prepared: list[PreparedEvent] = []
    errors: list[str] = []
    for raw, item in zip(raws, validate_items(raws), strict=True):
        try:
            if isinstance(item, ItemError):
                raise item
            prepared.append(
                prepare(item, max_depth=max_depth, patterns=patterns, received_at=received)
            )
        except ItemError as error:
            errors.append(
                f"{raw['event']} of span {raw['metadata']['otel']['span_id']}: {error.detail}"
            )
    return prepared, errors


@dataclass
class _Ready:
    """A trace to write now: its waiting spans, its events, why they cannot be written."""

    trace_id: str
    waiting: set[str]
    mine: set[str]  # its spans of this export
    reader: str | None
    prepared: list[PreparedEvent]
    errors: list[str]


def _append(
    store: SQLStore, conn: Connection, prepared: list[PreparedEvent], reader: str | None
) -> tuple[int, list[str]]:
    """Append under a savepoint: ``(written, [])``, or ``(0, reasons)`` with the savepoint
    rolled back when the store refused an item (any other failure is raised)."""
    written = 0
    errors: list[str] = []
    conn.exec_driver_sql(f"SAVEPOINT {_SAVEPOINT}")
    _lock_agents(store, conn, prepared)
    try:
        outcomes = store.append_on(conn, prepared, (), reader)
    except Exception as error:  # SQLAlchemy-wrapped, or the driver's own from a bulk path
        reason = refused_content(error)
        if reason is None:
            raise
        errors.append(reason)
    else:
        for outcome in outcomes:
            if not outcome.ok:
                errors.append(f"event {outcome.event_id}: {outcome.error}")
            elif not outcome.duplicate:
                written += 1
    if errors:
        conn.exec_driver_sql(f"ROLLBACK TO SAVEPOINT {_SAVEPOINT}")
        written = 0
    conn.exec_driver_sql(f"RELEASE SAVEPOINT {_SAVEPOINT}")
    return written, errors


def _write(store: SQLStore, conn: Connection, ready: list[_Ready], result: IngestResult) -> None:
    """Write the ready traces: all of one reader in one append (the usual case); when the
    store refuses something, again trace by trace, a refused trace leaving nothing behind."""
    refused: list[_Ready] = [r for r in ready if r.errors]
    written: list[_Ready] = []
    groups: dict[str | None, list[_Ready]] = {}
    for entry in ready:
        if not entry.errors and entry.prepared:
            groups.setdefault(entry.reader, []).append(entry)
        elif not entry.errors:
            written.append(entry)
    for reader, group in groups.items():
        count, errors = _append(store, conn, [p for r in group for p in r.prepared], reader)
        if not errors:
            result.written += count
            written.extend(group)
            continue
        for entry in group:
            count, entry.errors = _append(store, conn, entry.prepared, reader)
            result.written += count
            (refused if entry.errors else written).append(entry)
    _mark(conn, [r.trace_id for r in written], 1)
    _mark(conn, [r.trace_id for r in refused], REFUSED)
    result.traces += len(ready)
    for entry in refused:
        result.rejected += len(entry.waiting & entry.mine)
        result.errors.append(
            f"trace {entry.trace_id}: {len(entry.waiting)} span(s) not written ({entry.errors[0]})"
        )


def ingest_spans(
    store: SQLStore,
    spans: list[dict[str, Any]],
    *,
    bound_agent: str | None,
    max_depth: int,
    patterns: Collection[str],
    pending_s: float = PENDING_S,
    wait_lock: bool = True,
) -> IngestResult:
    """Store an export's spans and write the events of every trace that is ready (design:
    ``docs/design/server-otlp.md``). With no spans, this writes the traces whose spans waited
    longer than ``pending_s`` (the timer's flush, with ``wait_lock=False``: on PostgreSQL it
    does nothing when another process holds the OTLP lock)."""
    result = IngestResult(received=len(spans))
    received = now_ts()
    cutoff = (datetime.now(UTC) - timedelta(seconds=pending_s)).isoformat(timespec="microseconds")
    with store.writer() as conn:
        if store.engine.dialect.name == "postgresql":
            lock = "pg_advisory_xact_lock" if wait_lock else "pg_try_advisory_xact_lock"
            got = conn.execute(text(f"SELECT {lock}(:k)"), {"k": OTLP_LOCK_KEY}).scalar()
            if got is False:
                result.busy = True
                return result
        known = _traces(conn, (s["trace_id"] for s in spans))
        fresh: dict[tuple[str, str], dict[str, Any]] = {}
        for span in spans:
            key = (span["trace_id"], span["span_id"])
            if span["span_id"] in known.get(key[0], {}) or key in fresh:
                result.duplicates += 1
            else:
                # the key's agent binding travels with the span: a later flush of its trace
                # (by the timer, or by another key's export) writes it under the same agent
                fresh[key] = {**span, "bound_agent": bound_agent}
        if fresh:
            conn.execute(
                otlp_spans.insert(),
                [
                    {
                        "trace_id": t,
                        "span_id": s,
                        "parent_span_id": span["parent_span_id"],
                        "received_at": received,
                        "materialised": 0,
                        "span": orjson.dumps(span),
                    }
                    for (t, s), span in fresh.items()
                ],
            )
        for (t, s), span in fresh.items():
            known.setdefault(t, {})[s] = (span, 0)
        stale = set(
            conn.execute(
                select(otlp_spans.c.trace_id)
                .where(and_(otlp_spans.c.materialised == 0, otlp_spans.c.received_at < cutoff))
                .distinct()
                .limit(STALE_TRACES)
            )
            .scalars()
            .all()
        )
        known.update(_traces(conn, [t for t in stale if t not in known]))
        ready: list[_Ready] = []
        for trace_id in sorted(known):
            rows = known[trace_id]
            waiting = {sid for sid, (_, done) in rows.items() if not done}
            if not waiting:
                continue
            mine = {s for (t, s) in fresh if t == trace_id}
            has_root = any(span["parent_span_id"] is None for span, _ in rows.values())
            if not (has_root or trace_id in stale):
                result.pending += len(waiting & mine)
                continue
            trace = {sid: span for sid, (span, _) in rows.items()}
            raws = trace_events(trace, waiting, bound_agent=None)
            prepared, errors = _prepare(
                raws, max_depth=max_depth, patterns=patterns, received=received
            )
            reader = next((trace[s].get("bound_agent") for s in sorted(waiting)), None)
            ready.append(_Ready(trace_id, waiting, mine, reader, prepared, errors))
        _write(store, conn, ready, result)
    return result
