"""The span area (``otlp_spans``) and the write of one export: one transaction.

An export's new spans are stored; every trace that now has its root span, and every span that
has waited longer than :data:`PENDING_S`, is turned into events (:func:`._link.trace_events`),
prepared like every other write (limits, redaction, fingerprint) and appended on the same
connection, and its spans are marked written. A span already stored (a re-sent export) is
skipped, so it is never written twice.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from sqlalchemy import Connection, and_, select, update

from agentledger.server._ingest import ItemError, PreparedEvent, now_ts, prepare, validate_items
from agentledger.server._otlp._link import trace_events
from agentledger.server._store._sql import SQLStore
from agentledger.server._tables import otlp_spans

__all__ = ["PENDING_S", "IngestResult", "ingest_spans"]

#: How long a span waits for its trace's root span before it is written without it (seconds).
PENDING_S = 30.0
#: At most this many waiting traces are written by one export besides its own.
_STALE_TRACES = 100


@dataclass
class IngestResult:
    """What one export did."""

    received: int = 0
    duplicates: int = 0
    pending: int = 0
    written: int = 0
    failed: int = 0
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


def ingest_spans(
    store: SQLStore,
    spans: list[dict[str, Any]],
    *,
    bound_agent: str | None,
    max_depth: int,
    patterns: Collection[str],
) -> IngestResult:
    """Store an export's spans and write the events of every trace that is ready (design:
    ``docs/design/server-otlp.md``)."""
    result = IngestResult(received=len(spans))
    received = now_ts()
    cutoff = (datetime.now(UTC) - timedelta(seconds=PENDING_S)).isoformat(timespec="microseconds")
    with store.writer() as conn:
        known = _traces(conn, (s["trace_id"] for s in spans))
        fresh: dict[tuple[str, str], dict[str, Any]] = {}
        for span in spans:
            key = (span["trace_id"], span["span_id"])
            if span["span_id"] in known.get(key[0], {}) or key in fresh:
                result.duplicates += 1
            else:
                fresh[key] = span
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
        stale = (
            conn.execute(
                select(otlp_spans.c.trace_id)
                .where(and_(otlp_spans.c.materialised == 0, otlp_spans.c.received_at < cutoff))
                .distinct()
                .limit(_STALE_TRACES)
            )
            .scalars()
            .all()
        )
        missing = [t for t in stale if t not in known]
        known.update(_traces(conn, missing))
        ready: list[tuple[str, set[str]]] = []
        for trace_id, rows in known.items():
            waiting = {sid for sid, (_, done) in rows.items() if not done}
            if not waiting:
                continue
            has_root = any(span["parent_span_id"] is None for span, _ in rows.values())
            if has_root or trace_id in stale:
                ready.append((trace_id, waiting))
            else:
                result.pending += len(waiting & {s for (t, s) in fresh if t == trace_id})
        raws: list[dict[str, Any]] = []
        for trace_id, waiting in ready:
            rows = known[trace_id]
            raws.extend(
                trace_events(
                    {sid: span for sid, (span, _) in rows.items()}, waiting, bound_agent=bound_agent
                )
            )
        ready_ids = sorted(t for t, _ in ready)
        for start in range(0, len(ready_ids), 500):
            # every waiting row of these traces was loaded above, under the write lock
            conn.execute(
                update(otlp_spans)
                .where(
                    and_(
                        otlp_spans.c.trace_id.in_(ready_ids[start : start + 500]),
                        otlp_spans.c.materialised == 0,
                    )
                )
                .values(materialised=1)
            )
        prepared: list[PreparedEvent] = []
        for raw, item in zip(raws, validate_items(raws), strict=True):
            try:
                if isinstance(item, ItemError):
                    raise item
                prepared.append(
                    prepare(item, max_depth=max_depth, patterns=patterns, received_at=received)
                )
            except ItemError as error:
                result.failed += 1
                span_id = raw["metadata"]["otel"]["span_id"]
                result.errors.append(f"{raw['event']} of span {span_id}: {error.detail}")
        if prepared:
            for outcome in store.append_on(conn, prepared, (), bound_agent):
                if not outcome.ok:
                    result.failed += 1
                    result.errors.append(f"event {outcome.event_id}: {outcome.error}")
                elif not outcome.duplicate:
                    result.written += 1
    return result
