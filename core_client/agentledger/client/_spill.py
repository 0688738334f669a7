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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import filelock
import orjson

from agentledger.client._guard import logger

__all__ = ["DEFAULT_MAX_SPILL_BYTES", "Segment", "SpillStore", "destination_dir"]

#: Default size cap of one destination's spill (bytes).
DEFAULT_MAX_SPILL_BYTES: Final = 512 * 1024 * 1024

#: Default size at which the active segment is rotated (bytes).
DEFAULT_SEGMENT_BYTES: Final = 4 * 1024 * 1024


def destination_dir(spill_dir: Path, url: str) -> Path:
    """The sub-directory of ``spill_dir`` for events meant for ``url``."""
    return spill_dir / hashlib.sha256(url.encode()).hexdigest()[:16]


@dataclass
class Segment:
    """One spill file ready to be resent; ``offset`` = lines already delivered.

    ``own``: written by this process (its events count as ``in_spill``); otherwise adopted
    from a process that exited (they count as ``in_backlog``)."""

    path: Path
    lock: filelock.BaseFileLock
    own: bool
    lines: list[bytes] | None = None
    offset: int = 0
    size: int = 0
    #: lines counted when the segment was claimed (adopted segments only)
    counted: int | None = None
    #: counted lines that turned out not to be events (torn or corrupt), not yet reported
    unreadable: int = 0
    #: lines were replaced in memory (kept lines at the head): the file no longer matches
    edited: bool = False

    def load(self) -> list[bytes]:
        """Read the file once; a torn last line (crash mid-write) is skipped."""
        if self.lines is None:
            raw = self.path.read_bytes() if self.path.exists() else b""
            self.size = len(raw)
            kept: list[bytes] = []
            if self.own:  # written whole by this process (a failed write is cut back)
                self.lines = [line for line in raw.split(b"\n") if line]
                return self.lines
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
            if self.counted is not None and self.counted > len(kept):
                self.unreadable = self.counted - len(kept)
        return self.lines

    @property
    def remaining(self) -> int:
        """Lines not yet delivered (the file is read if it was not)."""
        return len(self.load()) - self.offset


@dataclass
class _Active:
    path: Path
    fd: int
    lock: filelock.BaseFileLock
    size: int = 0
    lines: int = 0
    unsynced: bool = False


def _segment_key(path: Path) -> int:
    """The ordering key in a segment's name (``seg-<key>-<pid>-<random>.ndjson``)."""
    try:
        return int(path.name.split("-")[1])
    except (IndexError, ValueError):
        return 0


class SpillStore:
    """The spill of one client (thread-safe; the caller's thread may append on overflow).

    Everything this process spilled is older than what it still holds in memory, and the
    segments are resent in name order, so a process's events reach the server in the order
    they were logged (docs/design/client-spill.md).

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
        self._ready: list[Segment] = []  # segments waiting to be resent, in name order
        self._claimed: set[Path] = set()
        self._bytes = 0
        self._measured = False
        self._inherited: list[object] = []  # objects of the parent after fork (never released)

    # -- writing ---------------------------------------------------------------------------

    def _room_locked(self, size: int) -> bool:
        """Whether ``size`` more bytes fit under the cap; measured again from the disk
        before refusing (another client sharing the directory may have freed room)."""
        self._measure()
        if self._bytes + size <= self.max_bytes:
            return True
        self._measured = False
        self._measure()
        return self._bytes + size <= self.max_bytes

    def _measure(self) -> None:
        if self._measured:
            return
        self._measured = True
        try:
            self._bytes = sum(
                e.stat().st_size for e in os.scandir(self.directory) if e.name.endswith(".ndjson")
            )
        except OSError:  # not there yet (or unusable: the first write will say so)
            self._bytes = 0

    def _new_segment(self, key: int) -> tuple[Path, filelock.BaseFileLock, int]:
        self.directory.mkdir(parents=True, exist_ok=True)
        name = f"seg-{key:020d}-{os.getpid()}-{secrets.token_hex(4)}.ndjson"
        path = self.directory / name
        lock = filelock.FileLock(str(path) + ".lock", thread_local=False)
        lock.acquire(timeout=0)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._claimed.add(path)
        return path, lock, fd

    def append(self, lines: list[bytes], *, sync: bool = True) -> bool:
        """Append lines (each one JSON document, no newline) after everything spilled so far,
        in one ``write``; fsynced when ``sync``.

        Returns:
            ``False`` when the size cap refuses them (nothing written), else ``True``.

        Raises:
            OSError: the disk write failed; nothing of it is left in the file.
        """
        if not lines:
            return True
        payload = _payload(lines)
        with self._lock:
            if not self._room_locked(len(payload)):
                return False
            active = self._active
            if active is None:
                path, lock, fd = self._new_segment(time.time_ns())
                active = self._active = _Active(path=path, fd=fd, lock=lock)
            _write_whole(active.fd, payload, active.size)
            active.size += len(payload)
            active.lines += len(lines)
            self._bytes += len(payload)
            active.unsynced = True
            if sync:
                os.fsync(active.fd)
                active.unsynced = False
            if active.size >= self.segment_bytes:
                self._rotate_locked()
        return True

    def append_fitting(self, lines: list[bytes], *, sync: bool = True) -> int:
        """:meth:`append` of the longest head of ``lines`` that fits under the cap; returns
        how many lines were written (raises like :meth:`append`)."""
        with self._lock:
            self._room_locked(0)
            room = self.max_bytes - self._bytes
        count = used = 0
        for line in lines:
            used += len(line) + 1
            if used > room:
                break
            count += 1
        head = lines if count in (0, len(lines)) else lines[:count]  # none fit: append refuses
        return len(head) if self.append(head, sync=sync) else 0

    def prepend(self, lines: list[bytes]) -> bool:
        """Write lines *before* everything this process spilled (a batch that was in flight
        while newer events were spilled): a new segment named to sort first, fsynced.

        Returns and raises like :meth:`append`."""
        if not lines:
            return True
        payload = _payload(lines)
        with self._lock:
            if not self._room_locked(len(payload)):
                return False
            keys = [_segment_key(s.path) for s in self._ready if s.own]
            if self._active is not None:
                keys.append(_segment_key(self._active.path))
            path, lock, fd = self._new_segment(min(keys) - 1 if keys else time.time_ns())
            try:
                _fill_new_file(fd, payload)
            except OSError:
                self._drop_file_locked(path, lock)
                raise
            self._bytes += len(payload)
            segment = Segment(path=path, lock=lock, own=True, lines=list(lines), size=len(payload))
            self._ready.append(segment)
            self._ready.sort(key=lambda s: s.path.name)
        return True

    def hold(self, lines: list[bytes]) -> bool:
        """Park lines the server refused for this client's key in a file of their own,
        left unlocked: this process does not resend them (it would be refused again), a
        process with another key adopts them. Returns and raises like :meth:`append`."""
        if not lines:
            return True
        payload = _payload(lines)
        with self._lock:
            if not self._room_locked(len(payload)):
                return False
            self.directory.mkdir(parents=True, exist_ok=True)
            name = f"held-{time.time_ns():020d}-{os.getpid()}-{secrets.token_hex(4)}.ndjson"
            path = self.directory / name
            self._claimed.add(path)  # never adopted back by this process
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                _fill_new_file(fd, payload)
            except OSError:
                with contextlib.suppress(OSError):
                    path.unlink()
                raise
            self._bytes += len(payload)
        return True

    def _drop_file_locked(self, path: Path, lock: filelock.BaseFileLock) -> None:
        with contextlib.suppress(OSError):
            path.unlink()
        self._claimed.discard(path)
        lock.release()
        with contextlib.suppress(OSError):
            Path(str(path) + ".lock").unlink()

    def sync(self) -> None:
        """fsync the active segment if lines were written to it without."""
        with self._lock:
            active = self._active
            if active is not None and active.unsynced:
                os.fsync(active.fd)
                active.unsynced = False

    def _rotate_locked(self) -> None:
        active = self._active
        if active is None:
            return
        self._active = None
        if active.unsynced:
            os.fsync(active.fd)
        os.close(active.fd)
        # Still locked by us: it becomes a ready segment of this process.
        self._ready.append(Segment(path=active.path, lock=active.lock, own=True))
        self._ready.sort(key=lambda s: s.path.name)

    # -- resending -------------------------------------------------------------------------

    def claim_orphans(self) -> int:
        """Claim segments no live process holds (closed or dead writers); returns how many
        lines they hold (read now, so the caller can count the adopted backlog)."""
        try:
            entries = sorted(
                e.name for e in os.scandir(self.directory) if e.name.endswith(".ndjson")
            )
        except OSError:  # no spill yet, or a directory that cannot be read
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
            segment = Segment(path=path, lock=lock, own=False)
            try:
                count = segment.counted = _count_lines(path)
            except OSError as error:
                logger.warning("agentledger spill: cannot read %s: %s", path, error)
                lock.release()
                continue
            with self._lock:
                self._claimed.add(path)
                self._ready.append(segment)
                self._ready.sort(key=lambda s: s.path.name)
            claimed += count
        return claimed

    def has_backlog(self) -> bool:
        """Whether spilled lines wait to be resent (ready segments, or the active segment
        when it holds lines)."""
        with self._lock:
            return bool(self._ready) or (self._active is not None and self._active.size > 0)

    def has_own_backlog(self) -> bool:
        """Whether lines this process spilled wait to be resent."""
        with self._lock:
            return any(s.own for s in self._ready) or (
                self._active is not None and self._active.size > 0
            )

    def next_batch(self, max_lines: int) -> tuple[Segment, list[bytes]] | None:
        """The oldest up to ``max_lines`` undelivered lines, rotating the active segment when
        nothing else is left. Call :meth:`delivered` after the server answered for them."""
        with self._lock:
            if not self._ready and self._active is not None and self._active.size > 0:
                self._rotate_locked()
            while self._ready:
                segment = self._ready[0]
                lines = segment.load()
                if segment.offset < len(lines):
                    return segment, lines[segment.offset : segment.offset + max_lines]
                self._finish_locked(segment)
            return None

    def delivered(
        self,
        segment: Segment,
        count: int,
        keep: list[bytes] | None = None,
        before: Callable[[], object] | None = None,
    ) -> bool:
        """Record that the server answered for ``count`` lines of ``segment`` from its
        offset; ``keep``: lines among them to send again (they stay at the segment's head;
        at close the file is rewritten with what is left). ``before`` runs under the lock
        while the segment is still ours and its file still there (dead letters go first).

        Returns:
            ``False`` when close() released the segment meanwhile (``before`` did not run):
            the next process answers for these lines; the caller counts nothing.
        """
        with self._lock:
            if segment not in self._ready or segment.lines is None:
                return False
            if before is not None:
                before()
            if keep:
                start = segment.offset
                segment.lines[start : start + count] = keep
                segment.edited = True
                return True
            segment.offset += count
            if segment.offset >= len(segment.lines):
                self._finish_locked(segment)
            return True

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
        """Bytes in the destination directory as this client knows."""
        with self._lock:
            self._measure()
            return self._bytes

    def close(self, *, sync: bool = True) -> None:
        """fsync (when ``sync``) and close the active segment, and release every lock
        (segments stay on disk for the next process)."""
        with self._lock:
            active, self._active = self._active, None
            if active is not None:
                if active.unsynced and sync:
                    os.fsync(active.fd)
                os.close(active.fd)
                active.lock.release()
            for segment in self._ready:
                with contextlib.suppress(OSError):
                    _keep_only_undelivered(segment, sync=sync)
                segment.lock.release()
            self._ready.clear()
            self._claimed.clear()

    def after_fork_in_child(self) -> None:
        """Forget the parent's files without unlocking them (the locks are shared with the
        parent across ``fork()``; releasing them here would release the parent's)."""
        self._lock = threading.Lock()
        if self._active is not None:
            self._inherited.append(self._active)
            with contextlib.suppress(OSError):
                os.close(self._active.fd)
        self._inherited.extend(self._ready)
        self._active = None
        self._ready = []
        self._claimed = set()
        self._measured = False


def _payload(lines: list[bytes]) -> bytes:
    """The bytes of ``lines`` as written to a spill file: one per line, newline-terminated."""
    return b"\n".join(lines) + b"\n"


def _fill_new_file(fd: int, payload: bytes) -> None:
    """Write ``payload`` whole to a just-created file and fsync it; ``fd`` is closed either
    way. Raises ``OSError`` (the caller removes the file)."""
    try:
        _write_whole(fd, payload, 0)
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_whole(fd: int, payload: bytes, size_before: int) -> None:
    """One ``os.write`` of ``payload``; on failure or a short write (disk full) the file is
    cut back to ``size_before``, so no partial line stays and the caller can count every
    line of ``payload`` as not written."""
    try:
        written = os.write(fd, payload)
        if written != len(payload):
            raise OSError(28, f"short write ({written} of {len(payload)} bytes)")
    except OSError:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, size_before)
        raise


def _count_lines(path: Path) -> int:
    """Complete lines in a spill file (a torn last line has no newline and is not counted;
    every line is one event), read in chunks so a large backlog is not held in memory."""
    count = 0
    with path.open("rb") as file:
        while chunk := file.read(1 << 20):
            count += chunk.count(b"\n")
    return count


def _keep_only_undelivered(segment: Segment, *, sync: bool) -> None:
    """Rewrite a partly delivered segment with only the lines still to send (atomically:
    a temporary file renamed over it), so the next process neither resends what the server
    already answered for nor refuses an event twice."""
    lines = segment.lines
    if lines is None or (segment.offset == 0 and not segment.edited):
        return
    rest = lines[segment.offset :]
    if not rest:
        segment.path.unlink()
        return
    temporary = segment.path.with_suffix(".tmp")
    with temporary.open("wb") as file:
        file.write(b"".join(line + b"\n" for line in rest))
        file.flush()
        if sync:
            os.fsync(file.fileno())
    os.replace(temporary, segment.path)
