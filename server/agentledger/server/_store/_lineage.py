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
from operator import itemgetter
from typing import Any, Final, Literal

import orjson
from sqlalchemy import Connection, select

from agentledger.server._store._rows import EVENT_COLS, IN_CHUNK, event_dict
from agentledger.server._store.base import Lineage
from agentledger.server._tables import events

__all__ = ["lineage", "lineage_sql"]

Direction = Literal["why", "impact"]

#: The columns a walked event's row carries: what its wire shape is spliced from (the stored
#: record and the five columns outside it) and its sort key. ``agent`` is never NULL for a
#: stored event, so a NULL there marks an id that is not stored. An erased event (its record
#: NULL) is read again whole: rare, and keeping its other columns out of every row saves a
#: fifth of the statement.
LEAN_COLS: Final = (
    "record",
    "received_at",
    "importance",
    "idempotency_key",
    "checksum",
    "chain_hash",
    "agent",
    "sequence_no",
    "timestamp",
)
_OFF: Final = 1  # where LEAN_COLS start in a walked id's row
_REC, _AGENT, _SEQ, _TS = _OFF, _OFF + 6, _OFF + 7, _OFF + 8
_time_key: Final = itemgetter(_TS, _AGENT, _SEQ)  # a walked row's place in time


#: Joins the ends and kind of each edge, and the edges, in the one aggregated edge row: ids
#: are UUIDs and kinds ``[a-z0-9_]`` (both checked on every write path), so it is in neither.
_SEP: Final = "\x1f"


def lineage_sql(direction: Direction, dialect: str, *, scoped: bool) -> str:
    """The walk statement in the driver's parameter style (``:name`` for sqlite3,
    ``%(name)s`` for psycopg); parameters ``event_id``, ``budget`` and, scoped, ``scope``.

    Two kinds of row from one walk: per walked id ``(id, *LEAN_COLS)`` (the columns all
    ``NULL`` for an id that is not stored), then one ``(NULL, NULL, edges, NULL, ...)`` (in
    the text column ``received_at``: the record is binary on PostgreSQL) where
    ``edges`` is every edge leading away from the asked event as ``near, far, kind`` joined
    by ``_SEP`` (``NULL`` when there is none)."""
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
        sep, aggregate = "chr(31)", "string_agg"
    else:  # SQLite: a LIMIT on the recursive CTE ends the recursion; MATERIALIZED: walk once
        walk = (
            "WITH RECURSIVE walk(node) AS ("
            "SELECT event_id FROM events WHERE event_id = :event_id "
            f"UNION SELECT e.{far} FROM event_causes e JOIN walk w ON e.{near} = w.node{scope}"
            " LIMIT :budget), capped AS MATERIALIZED (SELECT node FROM walk)"
        )
        sep, aggregate = "char(31)", "group_concat"
    columns = ", ".join(f"events.{name}" for name in LEAN_COLS)
    blanks = ", NULL" * (len(LEAN_COLS) - 2)
    # The edges as one aggregated string over a join (one index range per walked id): a row
    # per edge cost a fifth of the statement in the driver, a string per event (a correlated
    # subquery) a third.
    edge = f"e.{near} || {sep} || e.{far} || {sep} || e.kind"
    sql = (
        f"{walk} SELECT c.node, {columns} "
        "FROM capped c LEFT JOIN events ON events.event_id = c.node "
        f"UNION ALL SELECT NULL, NULL, {aggregate}({edge}, {sep}){blanks} "
        f"FROM capped c JOIN event_causes e ON e.{near} = c.node{scope}"
    )
    return re.sub(r":(\w+)", r"%(\1)s", sql) if dialect == "postgresql" else sql


def _order(nodes: list[Sequence[Any]], edges: list[tuple[str, str, str]]) -> list[str]:
    """The ids of the walked rows ``nodes`` with every cause before its effects; ties (and
    any stored loop) by time.

    Causes are nearly always older than their effects, so the time order usually is such an
    order already: one sort and one pass over the edges confirm it. Otherwise (clocks out of
    step, client-chosen timestamps) Kahn's algorithm with the time as tie-break decides.
    """
    by_time = [row[0] for row in sorted(nodes, key=_time_key)]
    position = {node: i for i, node in enumerate(by_time)}
    if all(
        position[cause] < position[effect]
        for effect, cause, _ in edges
        if effect in position and cause in position and effect != cause
    ):
        return by_time
    key = {row[0]: _time_key(row) for row in nodes}
    waiting = dict.fromkeys(by_time, 0)
    effects: dict[str, list[str]] = {}
    for effect, cause, _ in edges:
        if effect in position and cause in position and effect != cause:
            waiting[effect] += 1
            effects.setdefault(cause, []).append(effect)
    ready = [(key[n], n) for n in by_time if waiting[n] == 0]
    heapq.heapify(ready)
    out: list[str] = []
    while ready:
        _, node = heapq.heappop(ready)
        out.append(node)
        for effect in effects.get(node, ()):
            waiting[effect] -= 1
            if waiting[effect] == 0:
                heapq.heappush(ready, (key[effect], effect))
    if len(out) < len(by_time):  # a loop written before cycles were refused: keep every event
        placed = set(out)
        out.extend(n for n in by_time if n not in placed)
    return out


def _hops(event_id: str, links: dict[str, list[str]], bound: int) -> dict[str, int]:
    """Fewest edges from ``event_id`` to each node (breadth first), up to ``bound``."""
    hop = {event_id: 0}
    level = [event_id]
    distance = 0
    while level and distance < bound:
        distance += 1
        following = []
        for node in level:
            for far in links.get(node, ()):
                if far not in hop:
                    hop[far] = distance
                    following.append(far)
        level = following
    return hop


def _wire(conn: Connection, rows: dict[str, Sequence[Any]], ordered: list[str]) -> list[Any]:
    """The events in wire shape: pre-serialised JSON (``orjson.Fragment``) spliced from each
    stored record and the five columns outside it; an erased event (no record) read whole."""
    erased = [node for node in ordered if rows[node][_REC] is None]
    whole: dict[str, Any] = {}
    for start in range(0, len(erased), IN_CHUNK):
        query = select(*EVENT_COLS).where(events.c.event_id.in_(erased[start : start + IN_CHUNK]))
        whole.update((row.event_id, event_dict(row)) for row in conn.execute(query))
    out: list[Any] = []
    dumps, fragment = orjson.dumps, orjson.Fragment
    for node in ordered:
        row = rows[node]
        record = row[_REC]
        if record is None:
            out.append(whole[node])
            continue
        extras = dumps(
            {
                "received_at": row[_REC + 1],
                "importance": row[_REC + 2],
                "idempotency_key": row[_REC + 3],
                "checksum": row[_REC + 4],
                "chain_hash": row[_REC + 5],
            }
        )
        out.append(fragment(bytes(record[:-1]) + b"," + extras[1:]))
    return out


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
    why = direction == "why"
    cap = limit + (0 if why else 1)  # impact leaves the asked event out
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
    rows: dict[str, Sequence[Any]] = {}  # walked id -> its row
    links: list[tuple[str, str, str]] = []  # edges away from the asked event: near, far, kind
    for row in fetched:
        if row[0] is not None:
            rows[row[0]] = row
        elif row[2]:
            ends = iter(row[2].split(_SEP))
            links = list(zip(ends, ends, ends, strict=True))
    anchor = rows.get(event_id)
    if anchor is None or anchor[_AGENT] is None:
        return None
    walked_all = len(rows) <= cap
    hop: dict[str, int] | None = None
    if walked_all and depth >= len(rows):
        within = list(rows)  # no path among n events is longer than n - 1 edges
    else:
        away: dict[str, list[str]] = {}
        for node, far, _ in links:
            away.setdefault(node, []).append(far)
        hop = _hops(event_id, away, depth + 1)
        within = [node for node in rows if hop.get(node, depth + 1) <= depth]
    if agent_scope is None:
        kept = [node for node in within if rows[node][_AGENT] is not None]
    else:
        kept = [node for node in within if rows[node][_AGENT] == agent_scope]
    keep = set(kept)
    missing = sorted(node for node in within if node not in keep)
    result = Lineage(events=[], edges=[], anchor_agent=str(anchor[_AGENT]))
    result.size_truncated = not walked_all
    if len(kept) > cap:
        assert hop is not None  # more events than the cap: the walk was cut, hops were counted
        nearest = hop
        kept.sort(key=lambda n: (nearest[n], rows[n][_TS], rows[n][_SEQ]))
        kept = kept[:cap]
        keep = set(kept)
        result.size_truncated = True
    # why: a cause that is not stored is part of the answer (``missing``); impact: an edge
    # whose effect is not a stored event is no effect at all (only tampering writes one)
    reach = keep | set(missing) if why else keep
    phantom = set() if why else {node for node, row in rows.items() if row[_AGENT] is None}
    edges: list[tuple[str, str, str]] = []
    cut: set[str] = set()
    for node, far, kind in links:
        if node in keep:
            if far in reach:
                edges.append((node, far, kind) if why else (far, node, kind))
            elif far not in phantom:
                cut.add(node)
    result.depth_truncated = hop is not None and any(hop[n] == depth for n in cut)
    ordered = _order([rows[node] for node in kept], edges)
    if not why:
        ordered = [node for node in ordered if node != event_id]
    result.events = _wire(conn, rows, ordered)
    edges.sort()
    result.edges = [
        {"effect": effect, "cause": cause, "kind": kind} for effect, cause, kind in edges
    ]
    result.missing = missing
    result.cut_at = sorted(cut)
    if why:
        caused = {node for node, _, _ in links}
        result.roots = [node for node in ordered if node not in caused]
    result.scoped_agent_limited = agent_scope is not None and bool(missing)
    return result
