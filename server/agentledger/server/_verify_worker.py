"""What a worker process of split verification runs (``_verify_ranges``): one range of an
agent's SQLite chain, read in its own read-only snapshot, and the rule that a range walks some
rows before its cut without reporting them. Kept apart from the store and the app so that a
worker starts with nothing more than the chain code imported.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from agentledger.server._chain import ChainHasher, ChainReport, ChainRow, verify_rows

__all__ = ["CONTEXT_ROWS", "context_start", "verify_after", "verify_range", "worker_init"]

#: Rows before a cut that the range after it walks again without reporting them.
CONTEXT_ROWS = 64

_ROWS_SQL = (
    f"SELECT {', '.join(ChainRow._fields)} FROM events"
    " WHERE agent = ? AND sequence_no > ? AND sequence_no <= ? ORDER BY sequence_no"
)
_EDGES_SQL = (
    "SELECT e.sequence_no, c.cause_id, c.kind, c.agent FROM events AS e"
    " JOIN event_causes AS c ON c.effect_id = e.event_id"
    " WHERE e.agent = ? AND e.sequence_no > ? AND e.sequence_no <= ? ORDER BY e.sequence_no"
)
_CONTEXT_SQL = (
    "SELECT sequence_no, chain_hash FROM events WHERE agent = ? AND sequence_no > ?"
    " AND sequence_no <= ? ORDER BY sequence_no DESC LIMIT 1 OFFSET ?"
)


def context_start(
    conn: Any, agent: str, cut: int, floor: int, floor_hash: str | None
) -> tuple[int, str | None]:
    """Where the range after ``cut`` starts walking: ``CONTEXT_ROWS`` stored rows before it,
    never before ``floor`` (the last trusted row of the whole verification).

    Args:
        conn: an open ``sqlite3`` connection to the ledger.
        agent: the agent verified.
        cut: the range's lower bound (exclusive sequence number).
        floor: the last trusted sequence number; ``floor_hash`` its chain hash.

    Returns:
        ``(sequence_no, chain_hash)`` of the row the walk starts after.

    Raises:
        sqlite3.Error: the query failed.
    """
    if cut <= floor:
        return floor, floor_hash
    row = conn.execute(_CONTEXT_SQL, (agent, floor, cut, CONTEXT_ROWS)).fetchone()
    if row is None:
        return floor, floor_hash
    return int(row[0]), str(row[1])


def verify_after(
    rows: Iterable[Any],
    edges: Iterable[tuple[int, str, str, str]],
    hasher: ChainHasher,
    start: int,
    previous: str | None,
    cut: int,
) -> ChainReport:
    """:func:`verify_rows` from ``start``, keeping only what it finds after ``cut`` (rows up to
    it are context, counted and reported by the range before).

    Args:
        rows: chain rows after ``start``, ascending (:class:`ChainRow` order).
        edges: their causal edges as ``(sequence_no, cause_id, kind, agent)``, ascending.
        hasher: the chain's hasher.
        start: the sequence number the walk starts after; ``previous`` its chain hash.
        cut: rows up to this sequence number are context.

    Returns:
        The report of the rows after ``cut`` (its head: the last row read, context or not).
    """
    report = ChainReport()
    before: list[int] = []  # problems, erased, amended and rows of the context, at the cut

    def counted() -> Iterator[Any]:
        seen = 0
        iterator = iter(rows)
        for row in iterator:
            if row[0] > cut:
                before.extend((len(report.problems), report.erased, report.amended, seen))
                yield row
                yield from iterator
                return
            seen += 1
            yield row
        before.extend((len(report.problems), report.erased, report.amended, seen))

    verify_rows(
        counted(), hasher, start_seq=start, previous_hash=previous, report=report, edges=edges
    )
    problems, erased, amended, seen = before
    del report.problems[:problems]
    report.erased -= erased
    report.amended -= amended
    report.verified -= seen
    return report


#: Per worker process: the hasher (sent once, by the pool's initializer) and read-only
#: connections by database file.
_worker: dict[str, Any] = {}


def worker_init(hasher: ChainHasher) -> None:
    """The pool's initializer: keep the chain's ``hasher`` (its key is sent once, here)."""
    _worker["hasher"] = hasher
    _worker["connections"] = {}


def verify_range(
    path: str, agent: str, floor: int, floor_hash: str | None, cut: int, end: int
) -> ChainReport:
    """In a worker: the rows of ``(cut, end]`` verified in one read snapshot of ``path``.

    Args:
        path: the SQLite file (absolute), opened read-only once per worker.
        agent: the agent verified.
        floor: the last trusted sequence number of the whole verification; ``floor_hash`` its
            chain hash.
        cut: the range's lower bound (exclusive); ``end`` its upper bound (inclusive).

    Returns:
        The range's report (:func:`verify_after`).

    Raises:
        sqlite3.Error: the file could not be opened or read.
    """
    connections: dict[str, sqlite3.Connection] = _worker["connections"]
    conn = connections.get(path)
    if conn is None:
        conn = sqlite3.connect(Path(path).as_uri() + "?mode=ro", uri=True)
        conn.isolation_level = None
        connections[path] = conn
    conn.execute("BEGIN")
    try:
        start, previous = context_start(conn, agent, cut, floor, floor_hash)
        rows = conn.execute(_ROWS_SQL, (agent, start, end))
        edges = conn.execute(_EDGES_SQL, (agent, start, end))
        return verify_after(rows, edges, _worker["hasher"], start, previous, cut)
    finally:
        conn.execute("ROLLBACK")
