"""Stored embeddings: the per-model watermark, storing vectors, and exact cosine search."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import orjson
from sqlalchemy import Connection, delete, func, insert, select, update

from agentledger.server._query._conditions import SearchFilters, conditions, scored
from agentledger.server._query.text import event_text
from agentledger.server._store._rows import IN_CHUNK
from agentledger.server._store._sql import SQLStore
from agentledger.server._tables import event_embeddings, events, ledger_meta

__all__ = ["embeddings_pending", "search_vectors", "store_embeddings", "unembedded"]


def _meta_name(model: str) -> str:
    return "embeddings_through:" + hashlib.sha256(model.encode()).hexdigest()[:32]


def _watermark(conn: Connection, model: str) -> int:
    value = conn.execute(
        select(ledger_meta.c.value).where(ledger_meta.c.name == _meta_name(model))
    ).scalar()
    return int(value) if value is not None else 0


def search_vectors(
    store: SQLStore, query: Any, model: str, filters: SearchFilters, *, limit: int
) -> list[tuple[dict[str, Any], float]]:
    """Exact cosine with numpy over the candidate vectors of ``model``, streamed in
    partitions (bounded memory); ``[(event, cosine)]`` best first."""
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
            *conditions(filters),
        )
    )
    best_ids: list[int] = []
    best_scores: Any = np.empty(0, dtype=np.float32)
    with store.reader() as conn:
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
        return scored(conn, hits)


def unembedded(
    store: SQLStore, model: str, *, limit: int
) -> tuple[list[tuple[int, str, str]], int]:
    """``([(row id, agent, text)], last row id read)`` of events after ``model``'s watermark,
    oldest first."""
    with store.reader() as conn:
        mark = _watermark(conn, model)
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
    store: SQLStore, model: str, vectors: Sequence[tuple[int, str, bytes, int]], *, through: int
) -> int:
    """Store ``(row id, agent, float32 bytes, dim)`` for events still not erased and move the
    watermark to ``through``; returns rows stored (serialized with forget by the writer)."""
    with store.writer() as conn:
        alive: set[int] = set()
        ids = [v[0] for v in vectors]
        for start in range(0, len(ids), IN_CHUNK):
            chunk = ids[start : start + IN_CHUNK]
            alive.update(
                conn.execute(
                    select(events.c.id).where(events.c.id.in_(chunk), events.c.record.is_not(None))
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


def embeddings_pending(store: SQLStore, model: str, agents: Sequence[str] | None = None) -> int:
    """Events after ``model``'s watermark (of ``agents`` only, when given)."""
    with store.reader() as conn:
        mark = _watermark(conn, model)
        query = select(func.count()).select_from(events).where(events.c.id > mark)
        if agents is not None:
            query = query.where(events.c.agent.in_(agents))
        return int(conn.execute(query).scalar_one())
