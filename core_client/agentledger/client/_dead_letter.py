"""The dead-letter file: events the server refused for good, with the reason, never retried.

One NDJSON file per destination, ``<spill dir>/<destination>/dead-letter/dead-letter.ndjson``;
each line is ``{"reason", "status", "refused_at", "event"}`` with ``event`` the exact wire
object that was sent (already redacted). Written with ``O_APPEND`` and one ``write`` per call,
so several processes may append to the same file. ``agentledger import`` can resend the
``event`` objects once the cause is fixed (see docs/pages/client.md, "Delivery").
"""

from __future__ import annotations

import datetime as dt
import os
import threading
from pathlib import Path

import orjson

__all__ = ["DeadLetterFile"]


class DeadLetterFile:
    """Appends refused events to ``directory/dead-letter.ndjson`` (created on demand)."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / "dead-letter.ndjson"
        self._lock = threading.Lock()

    def after_fork_in_child(self) -> None:
        """A fresh lock in a forked child (the parent's may have been held at the fork)."""
        self._lock = threading.Lock()

    def append(self, entries: list[tuple[bytes, int | None, str]]) -> None:
        """Write ``(event line, status, reason)`` entries and fsync.

        Raises:
            OSError: the write failed (the caller counts the events as failed, not
                dead-lettered).
        """
        if not entries:
            return
        now = dt.datetime.now(dt.UTC).isoformat().replace("+00:00", "Z")
        payload = b"".join(
            b'{"reason":'
            + orjson.dumps(reason)
            + b',"status":'
            + orjson.dumps(status)
            + b',"refused_at":"'
            + now.encode()
            + b'","event":'
            + line
            + b"}\n"
            for line, status, reason in entries
        )
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                size = os.fstat(fd).st_size
                try:
                    written = os.write(fd, payload)
                    if written != len(payload):
                        raise OSError(f"short write to {self.path}")
                    os.fsync(fd)
                except OSError:
                    os.ftruncate(fd, size)  # no half line left behind
                    raise
            finally:
                os.close(fd)
