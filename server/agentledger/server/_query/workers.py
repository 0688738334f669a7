"""Background workers that drain work the write path leaves behind.

Modelled on OpenTelemetry's batch processor: one daemon thread per worker, a ``step`` that
does one bounded unit of work and returns how much it did, a short idle sleep when there was
nothing to do, exponential backoff (capped) after an expected failure, and ``stop()`` that
wakes the thread and joins it.

* the full-text indexer: ``store.index_catch_up`` in batches (SQLite FTS5, see
  :mod:`agentledger.server._search.sqlite`);
* the embedder: events after the model's watermark → endpoint → ``store.store_embeddings``.

Expected failures (endpoint down, database busy) are logged as warnings without a traceback;
anything else is a bug and is logged with its traceback at ERROR.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from sqlalchemy.exc import OperationalError

from agentledger.server._query.embeddings import Embedder, EmbeddingError
from agentledger.server._query.queries import QueryStore

__all__ = ["DrainWorker", "embed_step", "index_step"]

logger = logging.getLogger("agentledger.server.query")

_EXPECTED = (EmbeddingError, OperationalError)


class DrainWorker:
    """Runs ``step`` in a daemon thread until stopped.

    Args:
        name: thread name (shown in logs).
        step: does one bounded unit of work, returns the amount done (0 = idle, negative =
            busy now, retry after ``busy_s``).
        idle_s: sleep when idle, seconds.
        busy_s: sleep when the step reported busy, seconds.
        max_backoff_s: longest sleep after consecutive failures, seconds.
    """

    def __init__(
        self,
        name: str,
        step: Callable[[], int],
        *,
        idle_s: float = 0.2,
        busy_s: float = 0.01,
        max_backoff_s: float = 30.0,
    ) -> None:
        self.name = name
        self._step = step
        self._idle_s = idle_s
        self._busy_s = busy_s
        self._max_backoff_s = max_backoff_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        """Start the thread."""
        self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        """Ask the thread to stop and wait up to ``timeout_s`` seconds."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout_s)

    def _run(self) -> None:
        failures = 0
        while not self._stop.is_set():
            try:
                done = self._step()
                failures = 0
            except _EXPECTED as error:
                failures += 1
                delay = min(self._max_backoff_s, self._idle_s * 2**failures)
                logger.warning("%s: %s (retrying in %.1f s)", self.name, error, delay)
                self._stop.wait(delay)
                continue
            except Exception:
                failures += 1
                logger.exception("%s: unexpected failure", self.name)
                self._stop.wait(min(self._max_backoff_s, self._idle_s * 2**failures))
                continue
            if done < 0:
                self._stop.wait(self._busy_s)
            elif not done:
                self._stop.wait(self._idle_s)


def index_step(
    store: QueryStore,
    *,
    small_rows: int = 1000,
    large_rows: int = 10_000,
    quiet_s: float = 0.5,
    max_lag_rows: int = 100_000,
) -> Callable[[], int]:
    """A step that adds events to the full-text index, giving way to ingest.

    While writers were seen in the last ``quiet_s`` seconds the index waits, unless more than
    ``max_lag_rows`` events are pending, and then works in slices of ``small_rows`` (short
    lock holds); once writes pause it drains in slices of ``large_rows`` (FTS5 is cheaper per
    row in big batches). Every search catches the index up first, so results never miss a
    completed write however far the background index lags."""
    last_busy = [0.0]
    lag = [0.0, 0.0]  # [checked at, lagging (1.0) or not (0.0)]

    def step() -> int:
        now = time.monotonic()
        if store.writer_busy():
            last_busy[0] = now
        contended = now - last_busy[0] < quiet_s
        if contended:
            if now - lag[0] > 1.0:  # the pending count is a query: at most once a second
                lag[:] = [now, float(store.index_pending() >= max_lag_rows)]
            if not lag[1]:
                return -1
        done = store.index_catch_up(
            max_rows=small_rows if contended else large_rows, background=True
        )
        if done < 0:
            last_busy[0] = time.monotonic()
        return done

    return step


def embed_step(store: QueryStore, embedder: Embedder) -> Callable[[], int]:
    """A step that embeds the next batch of events after the model's watermark."""
    last = [-1]

    def step() -> int:
        items, through = store.unembedded(embedder.model, limit=embedder.config.batch)
        if not items and through == last[0]:
            return 0
        vectors = embedder.embed([text for _, _, text in items])
        rows = [
            (row_id, agent, vector.astype("<f4").tobytes(), int(vector.shape[0]))
            for (row_id, agent, _), vector in zip(items, vectors, strict=True)
        ]
        store.store_embeddings(embedder.model, rows, through=through)
        moved = through != last[0]
        last[0] = through
        return len(items) or int(moved)

    return step
