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
was edited, rows seen out of place), so the merged report is the one a single walk gives, but
for a record naming a sequence number more than ``CONTEXT_ROWS`` away across a cut (one
problem more or fewer) and a forget committed meanwhile (counted in some ranges only). A worker
process starts on the first split (about 0.3 s, while the server process verifies its own
range) and stays for the next one; when workers die or cannot start, verification runs in the
server process for ``retry_after_s``.
Design: ``docs/design/server-chain.md``.
"""

from __future__ import annotations

import itertools
import logging
import multiprocessing
import threading
import time
from concurrent.futures import CancelledError, Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

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
        retry_after_s: after worker processes broke (one died, or they cannot start: a
            server script without an ``if __name__ == "__main__"`` guard re-runs in each),
            verifications run in one walk for this long before workers are tried again.
    """

    def __init__(self, workers: int, split_rows: int, *, retry_after_s: float = 300.0) -> None:
        self.workers = workers
        self.split_rows = split_rows
        self.retry_after_s = retry_after_s
        self._pool: ProcessPoolExecutor | None = None
        self._broken_at: float | None = None
        self._lock = threading.Lock()

    def cuts(self, floor: int, last_seq: int) -> list[int]:
        """The sequence numbers after which a new range starts (empty: no split): ``floor`` is
        the last trusted sequence number, ``last_seq`` the agent head planned from."""
        rows = last_seq - floor
        if self.workers < 1 or rows < self.split_rows:
            return []
        broken_at = self._broken_at
        if broken_at is not None and time.monotonic() - broken_at < self.retry_after_s:
            return []
        parts = min(self.workers + 1, rows * 2 // self.split_rows)
        return [floor + rows * i // parts for i in range(1, parts)]

    def submit(
        self, store: SQLiteStore, agent: str, floor: int, floor_hash: str | None, cuts: list[int]
    ) -> tuple[ProcessPoolExecutor, list[Future[ChainReport]]]:
        """The ranges before the last cut, one task each (the pool starts on first use); the
        pool is returned to pass to :meth:`broke` if it fails.

        Raises:
            BrokenProcessPool, RuntimeError, OSError: the pool is broken, shut down, or its
                processes cannot start.
        """
        with self._lock:
            if self._pool is None:
                self._pool = ProcessPoolExecutor(
                    self.workers,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=worker_init,
                    initargs=(store.hasher,),
                )
            pool = self._pool
        path = store.path  # absolute, as the pool opens it (never symlink-resolved)
        bounds = [floor, *cuts]
        futures = [
            pool.submit(verify_range, path, agent, floor, floor_hash, lo, hi)
            for lo, hi in itertools.pairwise(bounds)
        ]
        return pool, futures

    def pause(self) -> None:
        """Verify in one walk for ``retry_after_s`` (the workers failed)."""
        self._broken_at = time.monotonic()

    def broke(self, pool: ProcessPoolExecutor | None) -> None:
        """The workers failed: verify in one walk for ``retry_after_s``. A broken ``pool`` is
        dropped (unless already replaced; ``None``: the current one); other requests' tasks on
        it fail and fall back by themselves."""
        with self._lock:
            if pool is None or self._pool is pool:
                pool, self._pool = self._pool, None
            else:
                pool = None  # already dropped and shut down by another request
        self.pause()
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        """Stop the worker processes (the next split starts new ones)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def verify_chain_of(
    store: LedgerStore,
    agent: str,
    report: ChainReport,
    *,
    start_seq: int = 0,
    previous_hash: str | None = None,
    verifier: RangeVerifier | None = None,
) -> AgentHead | None:
    """Verify the agent's rows after ``start_seq`` into ``report``, in ranges when
    ``verifier`` is given, the store is SQLite and the chain is long enough.

    Args:
        store: the ledger store.
        agent: the agent whose chain is verified.
        report: the report to add to (anchor checks may already be in it).
        start_seq: sequence number of the last trusted row (0: from the start).
        previous_hash: chain hash of that row (``None`` at the start).
        verifier: the worker processes (``None``: one walk in this process).

    Returns:
        The agent head read in the same snapshot as the last rows (for ``check_head``),
        ``None`` when the agent has no ``agents`` row.

    Raises:
        sqlalchemy.exc.SQLAlchemyError, sqlite3.Error: the store could not be read (a worker
            that fails is not an error: its verification runs in this process).
    """
    cuts: list[int] = []
    if verifier is not None and isinstance(store, SQLiteStore):
        planned = store.chain_head(agent)
        if planned is not None:
            cuts = verifier.cuts(start_seq, planned.last_seq)
    if cuts:
        assert verifier is not None and isinstance(store, SQLiteStore)
        split = _in_ranges(store, agent, start_seq, previous_hash, cuts, verifier)
        if split is not None:
            parts, head = split
            for part in parts:
                report.problems.extend(part.problems)
                report.verified += part.verified
                report.erased += part.erased
                report.amended += part.amended
            tail = parts[-1]  # the last row read, as one walk ends
            report.head_seq, report.head_hash, report.head_event = (
                tail.head_seq,
                tail.head_hash,
                tail.head_event,
            )
            logger.debug("verify: %s in %d ranges, %d rows", agent, len(parts), report.verified)
            return head
    with store.chain_snapshot(agent, after_seq=start_seq) as snapshot:
        verify_rows(
            snapshot.rows,
            store.hasher,
            start_seq=start_seq,
            previous_hash=previous_hash,
            report=report,
            edges=snapshot.edges,
        )
    return snapshot.head


def _in_ranges(
    store: SQLiteStore,
    agent: str,
    floor: int,
    floor_hash: str | None,
    cuts: list[int],
    verifier: RangeVerifier,
) -> tuple[list[ChainReport], AgentHead | None] | None:
    """The range reports in sequence order (the last one verified here, in the head's
    snapshot) and that head; ``None`` when the workers failed (logged; the caller walks in
    one)."""
    try:
        pool, futures = verifier.submit(store, agent, floor, floor_hash, cuts)
    except (BrokenProcessPool, RuntimeError, OSError) as error:  # cannot start, or shut down
        logger.warning("verify: no worker processes (%s), verifying in one walk", error)
        verifier.broke(None)
        return None
    cut = cuts[-1]
    try:
        with store.engine.connect() as conn:  # released before the snapshot takes its own
            start, previous = context_start(
                conn.connection.driver_connection, agent, cut, floor, floor_hash
            )
        with store.chain_snapshot(agent, after_seq=start) as snapshot:
            tail = verify_after(snapshot.rows, snapshot.edges, store.hasher, start, previous, cut)
    except BaseException:
        for future in futures:
            future.cancel()
        raise
    try:
        return [*(future.result() for future in futures), tail], snapshot.head
    except BrokenProcessPool as error:  # a worker died: new ones after retry_after_s
        logger.warning("verify: a worker process died (%s), verifying in one walk", error)
        verifier.broke(pool)
    except CancelledError:  # the server is stopping
        pass
    except Exception:  # a range that failed in its worker (e.g. the file is not readable there)
        logger.warning("verify: a worker's range failed, verifying in one walk", exc_info=True)
        verifier.pause()
    return None
