"""Verification of one agent's chain, split into consecutive ranges verified side by side in
worker processes when the chain is long (SQLite).

Verification is CPU-bound Python (a JSON parse and three hashes per row), so one process
verifies about 100,000 events per second however many cores the host has. A chain of at least
``split_rows`` rows is cut by sequence number into ``workers + 1`` ranges: each worker process
opens the SQLite file read-only and verifies its range with :func:`verify_rows`; the server
process verifies the last range inside its own read snapshot, together with the agent head, so
rows a live agent writes meanwhile are seen by none of them (the earlier ranges end below that
head, and a stored ``chain_hash`` never changes, so a worker's later snapshot reads the same
links).

Each range after the first starts ``CONTEXT_ROWS`` rows early (``_verify_worker``) and drops
what it finds there: those rows belong to the range before, but walking them gives the
verification the state it has at the cut (the link to follow, a row whose own ``chain_hash``
was edited, rows seen out of place), so the merged report is the one a single walk gives. The
one difference: a row moved further than ``CONTEXT_ROWS`` across a cut can be reported once
more, at the row after its new place. A worker process starts on the first split (about
0.3 s, while the server process verifies its own range) and stays for the next one.
Design: ``docs/design/server-chain.md``.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import multiprocessing
import threading
from concurrent.futures import Future, ProcessPoolExecutor

from agentledger.server._chain import ChainReport, verify_rows
from agentledger.server._chain_head import AgentHead
from agentledger.server._store.base import LedgerStore
from agentledger.server._store.sqlite import SQLiteStore
from agentledger.server._verify_worker import (
    context_start,
    verify_after,
    verify_range,
    worker_init,
)

__all__ = ["RangeVerifier", "verify_chain_of"]

logger = logging.getLogger("agentledger")


class RangeVerifier:
    """The worker processes of split verification, started on the first long chain.

    Args:
        workers: processes besides the server's (``0``: never split).
        split_rows: the fewest rows to verify that are split.
    """

    def __init__(self, workers: int, split_rows: int) -> None:
        self.workers = workers
        self.split_rows = split_rows
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()

    def cuts(self, floor: int, last_seq: int) -> list[int]:
        """The sequence numbers after which a new range starts (empty: no split)."""
        rows = last_seq - floor
        if self.workers < 1 or rows < self.split_rows:
            return []
        parts = min(self.workers + 1, rows * 2 // self.split_rows)
        return [floor + rows * i // parts for i in range(1, parts)]

    def submit(
        self, store: SQLiteStore, agent: str, floor: int, floor_hash: str | None, cuts: list[int]
    ) -> list[Future[ChainReport]]:
        """The ranges before the last cut, one task each (the pool starts on first use)."""
        with self._lock:
            if self._pool is None:
                self._pool = ProcessPoolExecutor(
                    self.workers,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=worker_init,
                    initargs=(store.hasher,),
                )
            pool = self._pool
        bounds = [floor, *cuts]
        return [
            pool.submit(verify_range, store.path, agent, floor, floor_hash, lo, hi)
            for lo, hi in itertools.pairwise(bounds)
        ]

    def close(self) -> None:
        """Stop the worker processes (the next split starts new ones)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def _in_one(
    store: LedgerStore, agent: str, report: ChainReport, start_seq: int, previous: str | None
) -> AgentHead | None:
    """The whole walk in this process, in one read snapshot (head first)."""
    with store.chain_snapshot(agent, after_seq=start_seq) as snapshot:
        verify_rows(
            snapshot.rows,
            store.hasher,
            start_seq=start_seq,
            previous_hash=previous,
            report=report,
            edges=snapshot.edges,
        )
    return snapshot.head


def verify_chain_of(
    store: LedgerStore,
    agent: str,
    report: ChainReport,
    *,
    start_seq: int = 0,
    previous_hash: str | None = None,
    verifier: RangeVerifier | None = None,
) -> AgentHead | None:
    """Verify the agent's rows after ``start_seq`` into ``report``; returns the agent head read
    in the same snapshot as the last rows (for :func:`check_head`). Split into ranges when
    ``verifier`` is given, the store is SQLite and the chain is long enough."""
    cuts: list[int] = []
    if verifier is not None and isinstance(store, SQLiteStore):
        planned = store.chain_head(agent)
        if planned is not None:
            cuts = verifier.cuts(start_seq, planned.last_seq)
    if not cuts:
        return _in_one(store, agent, report, start_seq, previous_hash)
    assert verifier is not None and isinstance(store, SQLiteStore)
    try:
        futures = verifier.submit(store, agent, start_seq, previous_hash, cuts)
    except Exception:  # a pool that cannot start: verify in this process
        logger.warning("verify: worker processes unavailable, verifying in one", exc_info=True)
        verifier.close()
        return _in_one(store, agent, report, start_seq, previous_hash)
    cut = cuts[-1]
    with contextlib.ExitStack() as stack:
        conn = stack.enter_context(store.engine.connect())
        start, previous = context_start(
            conn.connection.driver_connection, agent, cut, start_seq, previous_hash
        )
        snapshot = stack.enter_context(store.chain_snapshot(agent, after_seq=start))
        tail = verify_after(snapshot.rows, snapshot.edges, store.hasher, start, previous, cut)
    parts: list[ChainReport] = []
    try:
        parts = [future.result() for future in futures]
    except Exception:  # a worker that died or failed: verify in this process instead
        logger.warning("verify: a worker process failed, verifying in one", exc_info=True)
        verifier.close()
        return _in_one(store, agent, report, start_seq, previous_hash)
    for part in [*parts, tail]:
        report.problems.extend(part.problems)
        report.verified += part.verified
        report.erased += part.erased
        report.amended += part.amended
    report.head_seq, report.head_hash, report.head_event = (
        tail.head_seq,
        tail.head_hash,
        tail.head_event,
    )
    logger.debug("verify: %s in %d ranges, %d rows", agent, len(cuts) + 1, report.verified)
    return snapshot.head
