"""Retention policies and the erasure log in SQL: set, list and delete policies; read the log
grouped by sweep and agent."""

from __future__ import annotations

from typing import Any

import orjson
from sqlalchemy import delete, func, select

from agentledger.server._ingest import now_ts
from agentledger.server._retention._tables import DEFAULT_AGENT, erasure_log, retention_policies
from agentledger.server._retention._window import format_window
from agentledger.server._store._sql import SQLStore
from agentledger.server._tables import agents

__all__ = ["delete_policy", "erasure_report", "known_agent", "list_policies", "set_policy"]


def _policy(agent: str, keep_seconds: int, updated_at: str) -> dict[str, Any]:
    return {
        "agent": None if agent == DEFAULT_AGENT else agent,
        "keep": format_window(keep_seconds),
        "keep_seconds": keep_seconds,
        "updated_at": updated_at,
    }


def known_agent(store: SQLStore, agent: str) -> bool:
    """Whether the ledger has events of ``agent``."""
    with store.reader() as conn:
        return (
            conn.execute(select(agents.c.agent).where(agents.c.agent == agent)).first() is not None
        )


def set_policy(store: SQLStore, agent: str, keep_seconds: int) -> dict[str, Any]:
    """Create or replace the policy of ``agent`` (:data:`DEFAULT_AGENT`: the default)."""
    at = now_ts()
    table = retention_policies
    with store.writer() as conn:
        changed = conn.execute(
            table.update()
            .where(table.c.agent == agent)
            .values(keep_seconds=keep_seconds, updated_at=at)
        ).rowcount
        if not changed:
            conn.execute(
                table.insert().values(agent=agent, keep_seconds=keep_seconds, updated_at=at)
            )
    return _policy(agent, keep_seconds, at)


def delete_policy(store: SQLStore, agent: str) -> bool:
    """Remove the policy of ``agent``; whether there was one."""
    with store.writer() as conn:
        table = retention_policies
        return bool(conn.execute(delete(table).where(table.c.agent == agent)).rowcount)


def list_policies(store: SQLStore) -> dict[str, Any]:
    """``{"default": policy or None, "policies": [per-agent policies by name]}``."""
    table = retention_policies
    with store.reader() as conn:
        rows = conn.execute(
            select(table.c.agent, table.c.keep_seconds, table.c.updated_at).order_by(table.c.agent)
        ).all()
    default = next((_policy(*row) for row in rows if row[0] == DEFAULT_AGENT), None)
    return {
        "default": default,
        "policies": [_policy(*row) for row in rows if row[0] != DEFAULT_AGENT],
    }


def erasure_report(store: SQLStore, *, agent: str | None, limit: int) -> list[dict[str, Any]]:
    """The erasure log, newest sweep first: one entry per sweep and agent (its batches
    summed), at most ``limit`` entries."""
    log = erasure_log
    query = (
        select(
            log.c.run_id,
            log.c.agent,
            func.min(log.c.erased_at),
            func.max(log.c.erased_at),
            func.min(log.c.trigger),
            func.min(log.c.rule),
            func.min(log.c.keep_seconds),
            func.min(log.c.cutoff),
            func.sum(log.c.erased),
            func.min(log.c.oldest),
            func.max(log.c.newest),
            func.max(log.c.id),
        )
        .group_by(log.c.run_id, log.c.agent)
        .order_by(func.max(log.c.id).desc())
        .limit(limit)
    )
    if agent is not None:
        query = query.where(log.c.agent == agent)
    entries: list[dict[str, Any]] = []
    with store.reader() as conn:
        for row in conn.execute(query).all():
            sessions: set[str] = set()
            for (text,) in conn.execute(
                select(log.c.sessions).where(log.c.run_id == row[0], log.c.agent == row[1])
            ):
                sessions.update(orjson.loads(text))
            entries.append(
                {
                    "run_id": row[0],
                    "agent": row[1],
                    "started_at": row[2],
                    "finished_at": row[3],
                    "trigger": row[4],
                    "rule": row[5],
                    "keep": format_window(int(row[6])),
                    "cutoff": row[7],
                    "erased": int(row[8]),
                    "oldest": row[9],
                    "newest": row[10],
                    "sessions": sorted(sessions),
                }
            )
    return entries
