"""The scheduled sweep: a daemon thread that runs :func:`._sweep.sweep` every
``Settings.retention_interval_s`` seconds, off the request path, until the server stops."""

from __future__ import annotations

import logging
import threading
from datetime import UTC, datetime

from sqlalchemy.exc import DBAPIError

from agentledger.server._retention._sweep import sweep
from agentledger.server._search.base import SearchBackend
from agentledger.server._store._sql import SQLStore

__all__ = ["RetentionWorker"]

logger = logging.getLogger("agentledger.server")


class RetentionWorker:
    """Sweeps at start-up and then every ``interval_s`` seconds; :meth:`stop` ends a sweep
    between two batches."""

    def __init__(
        self, store: SQLStore, search: SearchBackend, *, interval_s: float, batch: int
    ) -> None:
        self._store = store
        self._search = search
        self._interval_s = interval_s
        self._batch = batch
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="agentledger-retention", daemon=True)
        #: sweeps finished (tests and the log line read it)
        self.sweeps = 0

    def start(self) -> None:
        """Start the thread."""
        self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        """Ask the thread to stop and wait up to ``timeout_s`` seconds."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout_s)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                outcome = sweep(
                    self._store,
                    self._search,
                    now=datetime.now(UTC),
                    batch=self._batch,
                    trigger="schedule",
                    should_stop=self._stop.is_set,
                )
                self.sweeps += 1
                if outcome.erased:
                    logger.info(
                        "retention sweep %s erased %d event(s) of %d agent(s)",
                        outcome.run_id,
                        outcome.erased,
                        len(outcome.agents),
                    )
            except DBAPIError as error:  # a busy or restarting database: the next period
                logger.warning("retention sweep failed, retrying next period: %s", error)
            except Exception:
                logger.exception("retention sweep: unexpected failure")
            self._stop.wait(self._interval_s)
