"""Disk spill: events the server could not take yet, kept as NDJSON segments (one directory
per server URL, one lock per segment) until it answers again; a segment left by a process that
exited is claimed and resent. Layout, locking and limits: docs/design/client-spill.md.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import filelock
import orjson

from agentledger.client._guard import logger

__all__ = ["DEFAULT_MAX_SPILL_BYTES", "Segment", "SpillStore", "destination_dir"]

#: Default size cap of one destination's spill (bytes).
DEFAULT_MAX_SPILL_BYTES: Final = 512 * 1024 * 1024

#: Lines buffered from the agent's thread before one write (bytes).
OVERFLOW_BUFFER_BYTES: Final = 64 * 1024

#: Default size at which the active segment is rotated (bytes).
DEFAULT_SEGMENT_BYTES: Final = 4 * 1024 * 1024


def destination_dir(spill_dir: Path, url: str) -> Path:
    """The sub-directory of ``spill_dir`` for events meant for ``url``."""
    return spill_dir / hashlib.sha256(url.encode()).hexdigest()[:16]


@dataclass
class Segment:
    """One claimed spill file being resent; ``offset`` = lines already delivered."""

    path: Path
    lock: filelock.BaseFileLock
    lines: list[bytes] | None = None
    offset: int = 0
    size: int = 0

    def load(self) -> list[bytes]:
        """Read the file once; a torn last line (crash mid-write) is skipped."""
        if self.lines is None:
            raw = self.path.read_bytes() if self.path.exists() else b""
            self.size = len(raw)
            kept: list[bytes] = []
            for line in raw.split(b"\n"):
                if not line.strip():
                    continue
                try:
                    orjson.loads(line)
                except orjson.JSONDecodeError:
                    logger.warning("agentledger spill: skipping a torn line in %s", self.path)
                    continue
                kept.append(line)
            self.lines = kept
        return self.lines


@dataclass
class _Active:
    path: Path
    fd: int
    lock: filelock.BaseFileLock
    size: int = 0
    unsynced: bool = False
    inherited: list[object] = field(default_factory=list)


class SpillStore:
    """The spill of one client (thread-safe; the caller's thread may append on overflow).

    Args:
        directory: the destination directory (see :func:`destination_dir`); created on demand.
        max_bytes: cap of the whole directory (bytes).
        segment_bytes: rotation size of a segment (bytes).
    """

    def __init__(
        self,
        directory: Path,
        *,
        max_bytes: int = DEFAULT_MAX_SPILL_BYTES,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
    ) -> None:
        self.directory = directory
        self.max_bytes = max_bytes
        self.segment_bytes = segment_bytes
        self._lock = threading.Lock()
        self._active: _Active | None = None
        self._ready: list[Segment] = []  # claimed segments waiting to be resent, oldest first
        self._claimed: set[Path] = set()
        self._bytes = 0
        self._measured = False
        self._inherited: list[object] = []  # objects of the parent after fork (never released)
        # Lines appended with sync=False (the agent's thread on queue overflow) wait here and
        # are written in one os.write per OVERFLOW_BUFFER_BYTES, or by the next sync().
        self._buffer: list[bytes] = []
        self._buffer_bytes = 0

    # -- writing ---------------------------------------------------------------------------

    def _measure(self) -> None:
        if self._measured:
            return
        self._measured = True
        try:
            self._bytes = sum(
                e.stat().st_size for e in os.scandir(self.directory) if e.name.endswith(".ndjson")
            )
        except FileNotFoundError:
            self._bytes = 0

    def _open_active(self) -> _Active:
        self.directory.mkdir(parents=True, exist_ok=True)
        name = f"seg-{time.time_ns():020d}-{os.getpid()}-{secrets.token_hex(4)}.ndjson"
        path = self.directory / name
        lock = filelock.FileLock(str(path) + ".lock", thread_local=False)
        lock.acquire(timeout=0)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._active = _Active(path=path, fd=fd, lock=lock)
        self._claimed.add(path)
        return self._active

    def append(self, lines: list[bytes], *, sync: bool = True) -> bool:
        """Append lines (each one JSON document, no newline).

        With ``sync`` the lines (and any buffered ones) are written and fsynced now (one
        fsync per batch). Without it they are buffered in memory (at most
        :data:`OVERFLOW_BUFFER_BYTES`) so the agent's thread makes no system call per event;
        :meth:`sync` writes them.

        Returns:
            ``False`` when the size cap refuses them (nothing written), else ``True``.

        Raises:
            OSError: the disk write failed (the caller counts the lines as dropped).
        """
        if not lines:
            return True
        payload = b"\n".join(lines) + b"\n"
        with self._lock:
            self._measure()
            if self._bytes + self._buffer_bytes + len(payload) > self.max_bytes:
                return False
            if not sync:
                self._buffer.append(payload)
                self._buffer_bytes += len(payload)
                if self._buffer_bytes >= OVERFLOW_BUFFER_BYTES:
                    self._write_locked(b"", fsync=False)
                return True
            self._write_locked(payload, fsync=True)
        return True

    def _write_locked(self, payload: bytes, *, fsync: bool) -> None:
        if self._buffer:
            payload = b"".join(self._buffer) + payload
            self._buffer.clear()
            self._buffer_bytes = 0
        if not payload:
            if fsync and self._active is not None and self._active.unsynced:
                os.fsync(self._active.fd)
                self._active.unsynced = False
            return
        active = self._active or self._open_active()
        os.write(active.fd, payload)
        active.size += len(payload)
        self._bytes += len(payload)
        active.unsynced = True
        if fsync:
            os.fsync(active.fd)
            active.unsynced = False
        if active.size >= self.segment_bytes:
            self._rotate_locked()

    def sync(self) -> None:
        """Write buffered lines and fsync the active segment."""
        with self._lock:
            self._write_locked(b"", fsync=True)

    def _rotate_locked(self) -> None:
        if self._buffer:
            self._write_locked(b"", fsync=False)  # may rotate itself
        active = self._active
        if active is None:
            return
        self._active = None
        if active.unsynced:
            os.fsync(active.fd)
        os.close(active.fd)
        # Still locked by us: it becomes a ready segment of this process.
        self._ready.append(Segment(path=active.path, lock=active.lock))

    # -- resending -------------------------------------------------------------------------

    def claim_orphans(self) -> int:
        """Claim segments no live process holds (closed or dead writers); returns how many."""
        try:
            entries = sorted(
                e.name for e in os.scandir(self.directory) if e.name.endswith(".ndjson")
            )
        except FileNotFoundError:
            return 0
        claimed = 0
        for name in entries:
            path = self.directory / name
            with self._lock:
                if path in self._claimed:
                    continue
            lock = filelock.FileLock(str(path) + ".lock", thread_local=False)
            try:
                lock.acquire(timeout=0)
            except filelock.Timeout:
                continue
            if not path.exists():  # resent and deleted by its owner meanwhile
                lock.release()
                continue
            with self._lock:
                self._claimed.add(path)
                self._ready.append(Segment(path=path, lock=lock))
                self._ready.sort(key=lambda s: s.path.name)
            claimed += 1
        return claimed

    def has_backlog(self) -> bool:
        """Whether spilled lines wait to be resent (own rotated or claimed segments, or the
        active segment when it holds lines)."""
        with self._lock:
            return (
                bool(self._ready)
                or bool(self._buffer)
                or (self._active is not None and self._active.size > 0)
            )

    def next_batch(self, max_lines: int) -> tuple[Segment, list[bytes]] | None:
        """The oldest up to ``max_lines`` undelivered lines, rotating the active segment when
        nothing else is left. Call :meth:`delivered` after the server took them."""
        with self._lock:
            if not self._ready and (
                self._buffer or (self._active is not None and self._active.size > 0)
            ):
                self._rotate_locked()
            while self._ready:
                segment = self._ready[0]
                lines = segment.load()
                if segment.offset < len(lines):
                    return segment, lines[segment.offset : segment.offset + max_lines]
                self._finish_locked(segment)
            return None

    def delivered(self, segment: Segment, count: int) -> None:
        """Record that ``count`` lines of ``segment`` (from its offset) reached the server."""
        with self._lock:
            if segment not in self._ready:
                return  # released by close() meanwhile; the next process resends it
            segment.offset += count
            if segment.lines is not None and segment.offset >= len(segment.lines):
                self._finish_locked(segment)

    def _finish_locked(self, segment: Segment) -> None:
        if segment in self._ready:
            self._ready.remove(segment)
        size = segment.size or (segment.path.stat().st_size if segment.path.exists() else 0)
        with contextlib.suppress(FileNotFoundError):
            segment.path.unlink()
        self._bytes = max(0, self._bytes - size)
        self._claimed.discard(segment.path)
        segment.lock.release()
        with contextlib.suppress(OSError):
            Path(str(segment.path) + ".lock").unlink()

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def size_bytes(self) -> int:
        """Bytes in the destination directory (plus buffered lines) as this client knows."""
        with self._lock:
            self._measure()
            return self._bytes + self._buffer_bytes

    def close(self, *, sync: bool = True) -> None:
        """Write buffered lines, fsync (when ``sync``) and close the active segment, and
        release every lock (segments stay on disk for the next process)."""
        with self._lock:
            if self._buffer:
                self._write_locked(b"", fsync=sync)
            active, self._active = self._active, None
            if active is not None:
                if active.unsynced and sync:
                    os.fsync(active.fd)
                os.close(active.fd)
                active.lock.release()
            for segment in self._ready:
                segment.lock.release()
            self._ready.clear()
            self._claimed.clear()

    def after_fork_in_child(self) -> None:
        """Forget the parent's files without unlocking them (the locks are shared with the
        parent across ``fork()``; releasing them here would release the parent's)."""
        self._lock = threading.Lock()
        self._buffer = []  # the parent's lines: the parent writes them
        self._buffer_bytes = 0
        if self._active is not None:
            self._inherited.append(self._active)
            with contextlib.suppress(OSError):
                os.close(self._active.fd)
        self._inherited.extend(self._ready)
        self._active = None
        self._ready = []
        self._claimed = set()
        self._measured = False
