"""Publishing signed heads outside the ledger: one JSON file per head in a directory, and a
webhook POST (httpx, retried with backoff) from a background thread, so a write never waits.
Design: ``docs/design/evidence.md``.
"""

from __future__ import annotations

import logging
import os
import queue
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import orjson

from agentledger.protocol.head_files import (
    HeadFileError,
    head_file_name,
    head_file_paths,
    load_head_file,
)

__all__ = ["HeadPublisher", "head_file_name", "read_published"]

logger = logging.getLogger("agentledger.server")


def read_published(directory: str | Path, agent: str) -> list[dict[str, Any]]:
    """The heads of ``agent`` published in ``directory``, oldest first (unreadable files are
    skipped with a warning; ``agentledger signing check`` reads them strictly instead)."""
    heads = []
    for path in head_file_paths(directory, agent):
        try:
            head = load_head_file(path)
        except HeadFileError as error:
            logger.warning("%s; skipped", error)
            continue
        if head["agent"] == agent:
            heads.append(head)
    return heads


class HeadPublisher:
    """Sends each signed head to a directory and/or a webhook.

    Args:
        directory: where head files go (``None``: no files).
        url: the webhook (``None``: no POSTs).
        attempts: POST attempts per head (5xx, 429 and connection errors are retried).
        transport: an httpx transport (tests use a real server; this is for proxies).
    """

    def __init__(
        self,
        directory: str | None,
        url: str | None,
        *,
        attempts: int = 5,
        backoff_s: float = 0.5,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.directory = Path(directory) if directory else None
        self.url = url
        self.attempts = attempts
        self.backoff_s = backoff_s
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue(maxsize=10_000)
        self._thread: threading.Thread | None = None
        self._transport = transport
        self.delivered = 0
        self.failed = 0

    def publish(self, head: dict[str, Any]) -> None:
        """Write the head's file now (small, local) and queue the POST; never raises."""
        if self.directory is not None:
            try:
                self._write(head)
            except OSError:
                logger.exception("could not publish signed head to %s", self.directory)
        if self.url is None:
            return
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="agentledger-head-webhook", daemon=True
            )
            self._thread.start()
        try:
            self._queue.put_nowait(head)
        except queue.Full:
            self.failed += 1
            logger.warning("signed-head webhook queue full: head dropped (it stays in the ledger)")

    def _write(self, head: dict[str, Any]) -> None:
        assert self.directory is not None
        path = self.directory / head_file_name(head)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".head-")
        with os.fdopen(fd, "wb") as out:
            out.write(orjson.dumps(head, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
        os.replace(tmp, path)

    def _run(self) -> None:
        with httpx.Client(timeout=10.0, transport=self._transport) as client:
            while (head := self._queue.get()) is not None:
                self._post(client, head)
                self._queue.task_done()
            self._queue.task_done()

    def _post(self, client: httpx.Client, head: dict[str, Any]) -> None:
        assert self.url is not None
        for attempt in range(self.attempts):
            try:
                answer = client.post(self.url, json=head)
                if answer.status_code < 300:
                    self.delivered += 1
                    return
                if answer.status_code < 500 and answer.status_code != 429:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(self.backoff_s * 2**attempt)
        self.failed += 1
        logger.warning(
            "signed head of %s at %s not delivered to %s",
            head["agent"],
            head["sequence_no"],
            self.url,
        )

    def join(self, timeout_s: float = 10.0) -> bool:
        """Wait until every queued POST is done (tests, shutdown); ``True`` when drained."""
        deadline = time.monotonic() + timeout_s
        while self._queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.01)
        return not self._queue.unfinished_tasks

    def close(self) -> None:
        """Stop the webhook thread after what is queued."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(timeout=15)
            self._thread = None
