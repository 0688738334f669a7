"""The OTLP flush timer: a daemon thread that writes the traces whose spans waited longer than
the pending bound (a root span that never arrives), every ``interval_s`` seconds, off the
request path, until the server stops.

Without it such spans were written only when the next export came in. On PostgreSQL with two
server processes, a flush only *tries* the OTLP advisory lock (:data:`._spans.OTLP_LOCK_KEY`):
when another process holds it, that process is writing (and flushes stale traces itself), so
this one waits for its next period.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection
from datetime import UTC, datetime, timedelta

from sqlalchemy import and_, select
from sqlalchemy.exc import DBAPIError

from agentledger.server._otlp._spans import STALE_TRACES, ingest_spans
from agentledger.server._store._sql import SQLStore
from agentledger.server._tables import otlp_spans

__all__ = ["OtlpFlusher"]

logger = logging.getLogger("agentledger.server")
#: At most this many transactions per period (each writes up to ``STALE_TRACES`` traces).
_ROUNDS = 10


class OtlpFlusher:
    """Flushes stale OTLP traces every ``interval_s`` seconds; :meth:`stop` ends it."""

    def __init__(
        self,
        store: SQLStore,
        *,
        interval_s: float,
        pending_s: float,
        max_depth: int,
        patterns: Collection[str],
    ) -> None:
        self._store = store
        self._interval_s = interval_s
        self._pending_s = pending_s
        self._max_depth = max_depth
        self._patterns = tuple(patterns)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="agentledger-otlp", daemon=True)
        #: flush periods finished, and traces written by them (tests and logs read them)
        self.flushes = 0
        self.traces = 0

    def start(self) -> None:
        """Start the thread."""
        self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        """Ask the thread to stop and wait up to ``timeout_s`` seconds."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout_s)

    def _any_stale(self) -> bool:
        """Whether a span waits longer than the bound (a read: no writer lock when none does,
        which is every period of a server that gets no OTLP)."""
        cutoff = datetime.now(UTC) - timedelta(seconds=self._pending_s)
        query = (
            select(otlp_spans.c.trace_id)
            .where(
                and_(
                    otlp_spans.c.materialised == 0,
                    otlp_spans.c.received_at < cutoff.isoformat(timespec="microseconds"),
                )
            )
            .limit(1)
        )
        with self._store.reader() as conn:
            return conn.execute(query).first() is not None

    def flush(self) -> int:
        """Write the stale traces now; the number of traces written or refused."""
        done = 0
        if not self._any_stale():
            return done
        for _ in range(_ROUNDS):
            result = ingest_spans(
                self._store,
                [],
                bound_agent=None,
                max_depth=self._max_depth,
                patterns=self._patterns,
                pending_s=self._pending_s,
                wait_lock=False,
            )
            done += result.traces
            for error in result.errors:
                logger.warning("OTLP flush: %s", error)
            if result.busy or result.traces < STALE_TRACES or self._stop.is_set():
                break
        return done

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            try:
                self.traces += self.flush()
                self.flushes += 1
            except DBAPIError as error:  # a busy or restarting database: the next period
                logger.warning("OTLP flush failed, retrying next period: %s", error)
            except Exception:
                logger.exception("OTLP flush: unexpected failure")
