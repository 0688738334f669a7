"""``why()`` and ``impact()`` over causal edges: one recursive query each, shaped into a DAG.

Both walk ``event_causes`` (the parent edge and every ``caused_by`` entry of each event) from
one event: ``why`` from effects to causes over the primary key, ``impact`` from causes to
effects over the cause index. The walk's rows are event ids and ``UNION`` keeps each once
however many paths reach it, so the work is linear in what is walked, and it stops after
``limit`` events (the walk is breadth first on both databases, so the nearest are kept). In the
same statement each walked event is joined to its stored row once and to its own edges (one
indexed lookup). Hop counts (for ``depth``) are then taken breadth first over those edges; an
edge leading outside the answer tells exactly where it was cut.

The result is ordered so that every cause comes before its effects, each event once: the time
order when it already is such an order (nearly always), else Kahn's algorithm with time as
the tie-break. For a key bound to one agent, the walk never follows an edge written by
another agent's event, and a cause stored under another agent is reported as ``missing`` exactly
as an unknown id is (the answer does not tell whether it exists). Design:
``docs/design/server-lineage.md``.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Sequence
from typing import Any, Final, Literal

from sqlalchemy import Connection

from agentledger.server._store._rows import EVENT_COLS, event_fragment
from agentledger.server._store.base import Lineage

__all__ = ["lineage", "lineage_sql"]

Direction = Literal["why", "impact"]

_EVENT_COLUMNS: Final = ", ".join(f"events.{column.name}" for column in EVENT_COLS)
_COL = {column.name: index for index, column in enumerate(EVENT_COLS)}
_OFF: Final = 3  # where EVENT_COLS start in a walked id's row
_TS, _AGENT, _SEQ, _ID = _COL["timestamp"], _COL["agent"], _COL["sequence_no"], _COL["event_id"]


def lineage_sql(direction: Direction, dialect: str, *, scoped: bool) -> str:
    """The walk statement in the driver's parameter style (``:name`` for sqlite3,
    ``%(name)s`` for psycopg); parameters ``event_id``, ``budget`` and, scoped, ``scope``.

    Two kinds of row from one walk: per walked id ``(id, NULL, NULL, *EVENT_COLS)`` (the
    columns all ``NULL`` for an id that is not stored), and per edge leading away from the
    asked event ``(near id, far id, kind, NULL, ...)``."""
    near, far = ("effect_id", "cause_id") if direction == "why" else ("cause_id", "effect_id")
    scope = " AND e.agent = :scope" if scoped else ""
    if dialect == "postgresql":
        # LATERAL: one index lookup per walked id whatever the planner estimates (a hash join
        # over the whole edge table per step would make a long chain quadratic); no LIMIT
        # inside a recursive query, so the outer scan stops the walk. ``capped`` is read
        # twice below, so PostgreSQL materialises it: the walk runs once. The server's
        # sessions run with JIT off (compiling this statement cost more than running it).
        walk = (
            "WITH RECURSIVE walk(node) AS ("
            "SELECT event_id FROM events WHERE event_id = :event_id "
            f"UNION SELECT x.{far} FROM walk w, LATERAL (SELECT e.{far} FROM event_causes e "
            f"WHERE e.{near} = w.node{scope} OFFSET 0) x"
            "), capped AS (SELECT node FROM walk LIMIT :budget)"
        )
    else:  # SQLite: a LIMIT on the recursive CTE ends the recursion; MATERIALIZED: walk once
        walk = (
            "WITH RECURSIVE walk(node) AS ("
            "SELECT event_id FROM events WHERE event_id = :event_id "
            f"UNION SELECT e.{far} FROM event_causes e JOIN walk w ON e.{near} = w.node{scope}"
            " LIMIT :budget), capped AS MATERIALIZED (SELECT node FROM walk)"
        )
    blanks = ", NULL" * len(EVENT_COLS)
    # The edges as a join (one index range per walked id), not a string aggregated per id
    # in a correlated subquery and split again in Python, which cost a third of the time.
    sql = (
        f"{walk} SELECT c.node, NULL, NULL, {_EVENT_COLUMNS} "
        "FROM capped c LEFT JOIN events ON events.event_id = c.node "
        f"UNION ALL SELECT e.{near}, e.{far}, e.kind{blanks} "
        f"FROM capped c JOIN event_causes e ON e.{near} = c.node{scope}"
    )
    return re.sub(r":(\w+)", r"%(\1)s", sql) if dialect == "postgresql" else sql


def _order(
    nodes: Sequence[str], edges: set[tuple[str, str, str]], key: dict[str, tuple[Any, ...]]
) -> list[str]:
    """``nodes`` with every cause before its effects; ties (and any stored loop) by time.

    Causes are nearly always older than their effects, so the time order usually is such an
    order already: one sort and one pass over the edges confirm it. Otherwise (clocks out of
    step, client-chosen timestamps) Kahn's algorithm with the time as tie-break decides.
    """
    by_time = sorted(nodes, key=key.__getitem__)
    position = {node: i for i, node in enumerate(by_time)}
    if all(
        position[cause] < position[effect]
        for effect, cause, _ in edges
        if effect in position and cause in position and effect != cause
    ):
        return by_time
    waiting = dict.fromkeys(nodes, 0)
    effects: dict[str, list[str]] = {}
    for effect, cause, _ in edges:
        if effect in position and cause in position and effect != cause:
            waiting[effect] += 1
            effects.setdefault(cause, []).append(effect)
    ready = [(key[n], n) for n in nodes if waiting[n] == 0]
    heapq.heapify(ready)
    out: list[str] = []
    while ready:
        _, node = heapq.heappop(ready)
        out.append(node)
        for effect in effects.get(node, ()):
            waiting[effect] -= 1
            if waiting[effect] == 0:
                heapq.heappush(ready, (key[effect], effect))
    if len(out) < len(nodes):  # a loop written before cycles were refused: keep every event
        placed = set(out)
        out.extend(n for n in by_time if n not in placed)
    return out


def _hops(event_id: str, links: dict[str, list[tuple[str, str]]], bound: int) -> dict[str, int]:
    """Fewest edges from ``event_id`` to each node (breadth first), up to ``bound``."""
    hop = {event_id: 0}
    level = [event_id]
    distance = 0
    while level and distance < bound:
        distance += 1
        following = []
        for node in level:
            for far, _ in links.get(node, ()):
                if far not in hop:
                    hop[far] = distance
                    following.append(far)
        level = following
    return hop


def lineage(
    conn: Connection,
    event_id: str,
    *,
    direction: Direction,
    depth: int,
    limit: int,
    agent_scope: str | None,
) -> Lineage | None:
    """The causal ancestry (``why``) or descendants (``impact``) of ``event_id`` within
    ``depth`` hops and ``limit`` events; ``None`` when the event is not stored."""
    cap = limit + (1 if direction == "impact" else 0)  # impact leaves the asked event out
    params: dict[str, Any] = {"event_id": event_id, "budget": cap + 1}
    if agent_scope is not None:
        params["scope"] = agent_scope
    sql = lineage_sql(direction, conn.dialect.name, scoped=agent_scope is not None)
    # the driver's cursor: plain tuples (SQLAlchemy rows cost a third of the walk here)
    driver = conn.connection.driver_connection
    assert driver is not None
    cursor = driver.cursor()
    try:
        cursor.execute(sql, params)
        fetched = cursor.fetchall()
    finally:
        cursor.close()
    rows: dict[str, Sequence[Any]] = {}
    # per walked node, its edges away from the asked event: (far end, kind)
    links: dict[str, list[tuple[str, str]]] = {}
    for row in fetched:
        if row[1] is None:
            rows[row[0]] = row
        else:
            links.setdefault(row[0], []).append((row[1], row[2]))
    anchor = rows.get(event_id)
    if anchor is None or anchor[_OFF + _ID] is None:
        return None
    hop = _hops(event_id, links, depth + 1)
    stored = {
        node: row
        for node, row in rows.items()
        if row[_OFF + _ID] is not None
        and (agent_scope is None or row[_OFF + _AGENT] == agent_scope)
    }
    within = [node for node in rows if hop.get(node, depth + 1) <= depth]
    kept = [node for node in within if node in stored]
    missing = sorted(node for node in within if node not in stored)
    result = Lineage(events=[], edges=[], anchor_agent=str(anchor[_OFF + _AGENT]))
    result.size_truncated = len(rows) > cap
    if len(kept) > cap:
        kept.sort(key=lambda n: (hop[n], stored[n][_OFF + _TS], stored[n][_OFF + _SEQ]))
        kept = kept[:cap]
        result.size_truncated = True
    keep = set(kept)
    # why: a cause that is not stored is part of the answer (``missing``); impact: an edge
    # whose effect is not a stored event is no effect at all (only tampering writes one)
    reach = keep | set(missing) if direction == "why" else keep
    phantom = {n for n in rows if rows[n][_OFF + _ID] is None} if direction == "impact" else set()
    edges: set[tuple[str, str, str]] = set()
    cut: set[str] = set()
    for node in kept:
        for far, kind in links.get(node, ()):
            if far in reach:
                edges.add((node, far, kind) if direction == "why" else (far, node, kind))
            elif far not in phantom:
                cut.add(node)
    result.depth_truncated = any(hop[n] == depth for n in cut)
    key = {
        n: (stored[n][_OFF + _TS], stored[n][_OFF + _AGENT], stored[n][_OFF + _SEQ]) for n in kept
    }
    ordered = _order(kept, edges, key)
    if direction == "impact":
        ordered = [n for n in ordered if n != event_id]
    result.events = [event_fragment(stored[n][_OFF:]) for n in ordered]
    result.edges = [
        {"effect": effect, "cause": cause, "kind": kind} for effect, cause, kind in sorted(edges)
    ]
    result.missing = missing
    result.cut_at = sorted(cut)
    if direction == "why":
        result.roots = [n for n in ordered if not links.get(n)]
    result.scoped_agent_limited = agent_scope is not None and bool(missing)
    return result
