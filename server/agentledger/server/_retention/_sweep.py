"""The retention sweep: erase the content of events older than their agent's window.

For each agent with a policy (its own, else the default ``*``), the events whose ``timestamp``
is older than ``now - keep`` and that still have their content become tombstones exactly as
forget writes them (:func:`agentledger.server._query._erase.write_tombstones`: sequence
number, chain link, indexed columns and session kept; content gone; an erasure mark that
verification counts as ``erased``). The work goes in batches of ``batch`` events, one short
write transaction each, with the erasure-log row written in the same transaction, so a batch
is either erased and logged or neither. Between batches the sweep pauses briefly, so the
writer lock is free for ingest.

Two server processes on one PostgreSQL: each batch first takes a transaction-scoped advisory
lock (``pg_try_advisory_xact_lock``); a process that does not get it ends its sweep (the
other one is sweeping), and the batch reads its rows after taking the lock, so no event is
erased or logged twice. On SQLite the single writer lock serialises them the same way.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import orjson
from sqlalchemy import and_, func, or_, select, text

from agentledger.server._ingest import format_ts, now_ts
from agentledger.server._query._erase import MARK_COLUMNS, write_tombstones
from agentledger.server._retention._tables import DEFAULT_AGENT, erasure_log, retention_policies
from agentledger.server._retention._window import format_window
from agentledger.server._search.base import SearchBackend
from agentledger.server._store._sql import SQLStore
from agentledger.server._tables import agents, events

__all__ = ["AgentSweep", "SweepOutcome", "sweep"]

#: The advisory lock key of the sweep on PostgreSQL (any fixed 64-bit number).
SWEEP_LOCK_KEY = 0x616C_7265_7465_6E74  # "alretent"
#: Sessions listed per erasure-log row (the count is always exact).
MAX_LOGGED_SESSIONS = 500


@dataclass(slots=True)
class AgentSweep:
    """What the sweep erased (or, dry run, would erase) for one agent."""

    agent: str
    rule: str
    keep_seconds: int
    cutoff: str
    erased: int = 0
    oldest: str | None = None
    newest: str | None = None
    sessions: list[str] = field(default_factory=list)
    #: the smallest row id erased (SQLite's index clean-up after the sweep)
    first_id: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "rule": self.rule,
            "keep": format_window(self.keep_seconds),
            "cutoff": self.cutoff,
            "erased": self.erased,
            "oldest": self.oldest,
            "newest": self.newest,
            "sessions": self.sessions,
        }


@dataclass(slots=True)
class SweepOutcome:
    """A whole sweep: its id, whether it only counted, and one entry per agent with work."""

    run_id: str
    dry_run: bool
    agents: list[AgentSweep] = field(default_factory=list)
    #: another process held the sweep lock (PostgreSQL): this sweep stopped early
    yielded: bool = False

    @property
    def erased(self) -> int:
        return sum(a.erased for a in self.agents)


def _rules(conn: Any, only: str | None) -> list[tuple[str, str, int]]:
    """``(agent, rule, keep_seconds)`` for every known agent that a policy covers."""
    table = retention_policies
    policies = {
        agent: keep for agent, keep in conn.execute(select(table.c.agent, table.c.keep_seconds))
    }
    query = select(agents.c.agent).order_by(agents.c.agent)
    if only is not None:
        query = query.where(agents.c.agent == only)
    rules = []
    for (agent,) in conn.execute(query):
        if agent in policies:
            rules.append((agent, "agent", policies[agent]))
        elif DEFAULT_AGENT in policies:
            rules.append((agent, "default", policies[DEFAULT_AGENT]))
    return rules


def _due(agent: str, cutoff: str) -> Any:
    return and_(events.c.agent == agent, events.c.timestamp < cutoff, events.c.record.is_not(None))


def _plan(store: SQLStore, rule: AgentSweep) -> None:
    """Fill ``rule`` with what a sweep would erase (one aggregate read, nothing changed)."""
    due = _due(rule.agent, rule.cutoff)
    with store.reader() as conn:
        count, oldest, newest = conn.execute(
            select(func.count(), func.min(events.c.timestamp), func.max(events.c.timestamp)).where(
                due
            )
        ).one()
        rule.erased, rule.oldest, rule.newest = int(count), oldest, newest
        if count:
            rule.sessions = sorted(
                s
                for (s,) in conn.execute(
                    select(events.c.session_id)
                    .where(due, events.c.session_id.is_not(None))
                    .distinct()
                    .limit(MAX_LOGGED_SESSIONS)
                )
            )


def _batch(
    store: SQLStore,
    search: SearchBackend,
    rule: AgentSweep,
    after: tuple[str, int] | None,
    *,
    batch: int,
    run_id: str,
    trigger: str,
) -> tuple[int, tuple[str, int] | None] | None:
    """Erase one batch (oldest first, after ``after``); ``None`` when another process holds the
    sweep lock, else ``(erased, position of the last row)``."""
    postgres = store.engine.dialect.name == "postgresql"
    # the row id, what the tombstone keeps (its erasure mark covers it), the chain link
    columns = (events.c.id, *MARK_COLUMNS, events.c.chain_hash)
    where = [_due(rule.agent, rule.cutoff)]
    if after is not None:
        where.append(
            or_(
                events.c.timestamp > after[0],
                and_(events.c.timestamp == after[0], events.c.sequence_no > after[1]),
            )
        )
    query = (
        select(*columns)
        .where(*where)
        .order_by(events.c.timestamp, events.c.sequence_no)
        .limit(batch)
    )
    if postgres:
        query = query.with_for_update()
    with store.writer() as conn:
        if (
            postgres
            and not conn.execute(
                text("SELECT pg_try_advisory_xact_lock(:key)"), {"key": SWEEP_LOCK_KEY}
            ).scalar_one()
        ):
            return None
        search.erase_prepare(conn)
        rows = conn.execute(query).all()
        if not rows:
            return 0, after
        marks = [
            {
                "row_id": row[0],
                "mark": store.hasher.erasure_mark(row[9], tuple(row[1:9])),
                "session": row[7],
            }
            for row in rows
        ]
        ids = [row[0] for row in rows]
        # SQLite's full-text index removes a tombstone's terms by trigger; its 'optimize'
        # (which rewrites the whole index) runs once after the sweep, not per batch.
        write_tombstones(conn, search, marks, ids, index=postgres)
        sessions = sorted({row[7] for row in rows if row[7] is not None})
        conn.execute(
            erasure_log.insert().values(
                run_id=run_id,
                erased_at=now_ts(),
                trigger=trigger,
                agent=rule.agent,
                rule=rule.rule,
                keep_seconds=rule.keep_seconds,
                cutoff=rule.cutoff,
                erased=len(rows),
                oldest=rows[0][4],
                newest=rows[-1][4],
                sessions=orjson.dumps(sessions[:MAX_LOGGED_SESSIONS]).decode(),
            )
        )
    rule.erased += len(rows)
    rule.first_id = min(ids) if rule.first_id is None else min(rule.first_id, min(ids))
    rule.oldest = rule.oldest or rows[0][4]
    rule.newest = rows[-1][4]
    known = set(rule.sessions)
    rule.sessions.extend(s for s in sessions if s not in known)
    return len(rows), (rows[-1][4], rows[-1][3])


def sweep(
    store: SQLStore,
    search: SearchBackend,
    *,
    now: datetime,
    dry_run: bool = False,
    agent: str | None = None,
    batch: int = 500,
    pause_s: float = 0.005,
    trigger: str = "request",
    should_stop: Callable[[], bool] = lambda: False,
) -> SweepOutcome:
    """Erase (or, ``dry_run``, count) what the retention policies say has expired at ``now``.

    Args:
        agent: only this agent (its own policy, else the default).
        batch: events per write transaction.
        pause_s: the pause between batches (the writer lock is free meanwhile); when a
            writer of this process holds the lock right after a batch, the pause is as long
            as the batch took.
        trigger: ``schedule`` (the background job) or ``request`` (the run route), logged.
        should_stop: polled between batches; ``True`` ends the sweep (server shutdown).
    """
    outcome = SweepOutcome(run_id=uuid.uuid4().hex, dry_run=dry_run)
    with store.reader() as conn:
        rules = _rules(conn, agent)
    for name, rule_name, keep in rules:
        cutoff = format_ts(now - timedelta(seconds=keep))
        rule = AgentSweep(name, rule_name, keep, cutoff)
        if dry_run:
            _plan(store, rule)
        else:
            after: tuple[str, int] | None = None
            while not should_stop():
                started = time.monotonic()
                done = _batch(
                    store, search, rule, after, batch=batch, run_id=outcome.run_id, trigger=trigger
                )
                took = time.monotonic() - started
                if done is None:
                    outcome.yielded = True
                    break
                count, after = done
                if count < batch:
                    break
                # a writer took the lock the moment the batch let go: give it as long as the
                # batch held the lock, so ingest keeps at least half of the writer's time
                time.sleep(max(pause_s, took) if store.writer_busy() else pause_s)
        if rule.erased:
            outcome.agents.append(rule)
        if outcome.yielded or should_stop():
            break
    if outcome.erased and not dry_run:
        if store.engine.dialect.name != "postgresql":
            with store.writer() as conn:
                firsts = [a.first_id for a in outcome.agents if a.first_id is not None]
                search.erase_in_transaction(conn, [min(firsts)])  # one 'optimize' per sweep
        search.erase_finish()
    return outcome
