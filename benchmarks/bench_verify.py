"""Chain verification, stage by stage, in-process on an embedded SQLite ledger.

Run: ``python benchmarks/bench_verify.py`` (20,000 events) or ``--quick`` (4,000). No HTTP:
this splits the cost of ``GET /v1/events/chain`` (``bench_server.py`` times it over HTTP) into
what it is made of, each measured on the same rows in interleaved rounds (medians, µs per
event):

* the server's verification as the route runs it on a short chain (one read snapshot,
  ``verify_rows``);
* the same rows in ranges, as the route verifies a long chain: earlier ranges in worker
  processes, the last in this one (``verify_chain_of``; the split threshold is lowered so
  these rows are split; one warm-up call starts the workers before the rounds);
* the direct pass that ``bench_server.py`` uses as the reference (the three hashes only);
* its parts: reading the chain rows, reading the causal edges, reading and parsing every
  record;
* two alternatives that were tried for the record-to-column comparison and the edge check:
  comparing the indexed columns with the record's fields in SQL (``json_extract``), and
  reading each event's edges as a correlated subquery of the chain query.

Events alternate a step and a LangChain-shaped ``llm_end`` (float ``duration_ms``, token
usage), each caused by the one before; every tenth also names its cause in ``caused_by``.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from bench_server import direct_verify_pass, event_data, langchain_data

from agentledger.server._chain import ChainReport, ChainRow, verify_rows
from agentledger.server._ingest import now_ts, prepare, validate_item
from agentledger.server._settings import default_verify_workers
from agentledger.server._store import open_store
from agentledger.server._store.base import LedgerStore
from agentledger.server._store.sqlite import SQLiteStore
from agentledger.server._verify_ranges import RangeVerifier, verify_chain_of

AGENT = "bench-verify"
ROUNDS = 7

#: The seven indexed columns and sequence_no compared with the record's fields in SQL.
_COLUMNS = ("sequence_no", "event_id", "agent", "timestamp", "event", "parent_id")
_COLUMNS += ("session_id", "supersedes")
SQL_COMPARE = (
    "SELECT sequence_no, record, checksum, chain_hash, received_at, importance, seal, "
    "CASE WHEN json_valid(r) THEN ("
    + " AND ".join(f"json_extract(r, '$.{c}') IS {c}" for c in _COLUMNS)
    + ") ELSE 0 END, json_extract(r, '$.caused_by')"
    " FROM (SELECT *, CAST(record AS TEXT) AS r FROM events"
    " WHERE agent = ? AND sequence_no > ? ORDER BY sequence_no)"
)
SQL_EDGES_INLINE = (
    f"SELECT {', '.join('e.' + f for f in ChainRow._fields)}, (SELECT group_concat("
    "c.cause_id || ' ' || c.kind || ' ' || c.agent, ',') FROM event_causes AS c"
    " WHERE c.effect_id = e.event_id)"
    " FROM events AS e WHERE e.agent = ? AND e.sequence_no > ? ORDER BY e.sequence_no"
)


def fill(store: LedgerStore, n: int) -> None:
    """``n`` events in batches of 500, each caused by the one before."""
    parent: str | None = None
    received = now_ts()
    for start in range(0, n, 500):
        items = []
        for i in range(start, min(n, start + 500)):
            event_id = str(uuid.uuid4())
            llm = i % 2 == 1
            item: dict[str, Any] = {
                "agent": AGENT,
                "event": "llm_end" if llm else "step",
                "event_id": event_id,
                "session_id": "session-1",
                "data": langchain_data(i) if llm else event_data(i),
            }
            if parent is not None:
                item["parent_id"] = parent
                if i % 10 == 0:
                    item["caused_by"] = [{"event_id": parent, "kind": "read"}]
            items.append(
                prepare(validate_item(item), max_depth=64, patterns=(), received_at=received)
            )
            parent = event_id
        assert all(outcome.ok for outcome in store.append(items))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="4,000 events instead of 20,000")
    args = parser.parse_args()
    n = 4_000 if args.quick else 20_000
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "ledger.db"
        store = open_store(str(db))
        assert isinstance(store, SQLiteStore)
        fill(store, n)
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        # the server's own two queries, so a change to them is what this measures
        chain_sql, edge_sql = store._chain_sql, store._edge_sql

        def server() -> int:
            with store.chain_snapshot(AGENT) as snapshot:
                report = verify_rows(snapshot.rows, store.hasher, edges=snapshot.edges)
            assert report.intact, report.problems[:2]
            return report.verified

        workers = max(1, default_verify_workers())
        verifier = RangeVerifier(workers, split_rows=1_000)

        def in_ranges() -> int:
            report = ChainReport()
            verify_chain_of(store, AGENT, report, verifier=verifier)
            assert report.intact, report.problems[:2]
            assert report.verified == n, report.verified
            return report.verified

        def count(sql: str) -> Callable[[], int]:
            def read() -> int:
                rows = 0
                for _ in conn.execute(sql, (AGENT, 0)):
                    rows += 1
                return rows

            return read

        def parse() -> int:
            rows = 0
            loads = orjson.loads
            for (record,) in conn.execute("SELECT record FROM events WHERE agent = ?", (AGENT,)):
                loads(record)
                rows += 1
            return rows

        def sql_compare() -> int:
            rows = 0
            for row in conn.execute(SQL_COMPARE, (AGENT, 0)):
                assert row[7] == 1, row[0]
                rows += 1
            return rows

        def sql_edges_inline() -> int:
            rows = 0
            for row in conn.execute(SQL_EDGES_INLINE, (AGENT, 0)):
                if row[5] and row[-1] is None:
                    raise AssertionError(row[0])
                rows += 1
            return rows

        def direct() -> int:
            rows = direct_verify_pass(db, AGENT)
            assert rows == n
            return rows

        stages: list[tuple[str, Callable[[], int]]] = [
            ("server: verify_rows on one read snapshot (rows, edges, every check)", server),
            ("reference: direct pass, three hashes per row (bench_server.py)", direct),
            (f"server: the same in ranges, {workers + 1} processes side by side", in_ranges),
            ("part: read the chain rows (15 columns)", count(chain_sql)),
            ("part: read the causal edges (join)", count(edge_sql)),
            ("part: read every record and orjson.loads it", parse),
            ("tried: compare the columns in SQL (json_extract), no hashes", sql_compare),
            ("tried: chain rows with their edges as a subquery", sql_edges_inline),
        ]
        samples: dict[str, list[float]] = {name: [] for name, _ in stages}
        in_ranges()  # starts the worker processes (spawn), as a server's first long verify does
        # a failed worker falls back to one walk and pauses splitting (no cuts): the rounds
        # must time the split
        assert verifier.cuts(0, n), "the workers failed"
        for _ in range(ROUNDS):
            for name, fn in stages:
                start = time.perf_counter()
                fn()
                samples[name].append((time.perf_counter() - start) / n * 1e6)
        conn.close()
        assert verifier.cuts(0, n), "a worker failed: the split rows timed one walk"
        verifier.close()
    reference = statistics.median(samples[stages[1][0]])
    print(f"\nverify, {n:,} events, SQLite {sqlite3.sqlite_version}, medians of {ROUNDS} rounds")
    print(f"{'stage':<72} {'us/event':>9} {'/ direct':>9}")
    for name, _ in stages:
        median = statistics.median(samples[name])
        print(f"{name:<72} {median:>9.2f} {median / reference:>8.2f}x")


if __name__ == "__main__":
    main()
