"""Point reads answered on the calling thread, without waiting.

A sync route costs a hand-off to a worker thread and back, which on SQLite costs several times
the point query itself (``docs/design/server-store.md``, "Reads on the event loop"). The
reader here keeps one SQLite connection, used by one thread at a time (in practice: the event
loop's), with a busy timeout of zero. A read that would wait (for a lock, for another thread
reading inline, or because the store is closing) fails at once with :class:`WouldBlock`, and
the route runs the usual pooled read in a worker thread instead.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import anyio.to_thread

__all__ = ["INLINE_RECORD_MAX_BYTES", "InlineReader", "WouldBlock", "read_inline_or_in_thread"]

_T = TypeVar("_T")

#: A stored record longer than this is parsed and answered in a worker thread, so that one
#: large event cannot hold the event loop (orjson parses 64 KiB in well under a millisecond).
INLINE_RECORD_MAX_BYTES = 64 * 1024


class WouldBlock(Exception):
    """The read cannot be answered at once on this thread (a lock is held, another thread
    reads inline, the store cannot read inline, or it is closed): run the usual read in a
    worker thread."""


class _Token:
    """A thread's claim on the connection: held only by that thread's ``threading.local``, so
    it is freed when the thread ends (also a thread not started by :mod:`threading`)."""

    __slots__ = ("__weakref__",)


class InlineReader:
    """One query-only connection to the SQLite file at ``path``, owned by the first thread
    that reads through it (another thread takes it over once that one has ended).

    Args:
        path: the database file as the store's pool opens it (absolute; ``..`` is not
            resolved through symlinks here either), already created and migrated by the
            store (never created here: a missing file is a :class:`WouldBlock`).
    """

    def __init__(self, path: str) -> None:
        self._uri = Path(os.path.abspath(path)).as_uri() + "?mode=rw"
        self._lock = threading.Lock()
        self._local = threading.local()
        self._owner: weakref.ref[_Token] | None = None
        self._conn: sqlite3.Connection | None = None
        self._closed = False

    def run(self, query: Callable[[sqlite3.Connection], _T]) -> _T:
        """``query(connection)`` on this thread, now or not at all.

        Args:
            query: a short read on the connection; it must leave no statement open (an
                unfinished one would hold its read snapshot).

        Returns:
            What ``query`` returned.

        Raises:
            WouldBlock: another thread owns the connection or is reading, the store is
                closed, or SQLite raised (a lock held elsewhere, a file that cannot be read).
        """
        if not self._lock.acquire(blocking=False):
            raise WouldBlock("another thread is reading inline")
        try:
            if self._closed:
                raise WouldBlock("the store is closed")
            try:
                return query(self._connection())
            except sqlite3.Error as error:
                raise WouldBlock(str(error)) from error
        finally:
            self._lock.release()

    def _connection(self) -> sqlite3.Connection:
        token: _Token | None = getattr(self._local, "token", None)
        if token is None:
            token = self._local.token = _Token()
        # no local names the owner's token: a WouldBlock's traceback keeps this frame, and
        # would keep an ended owner's claim alive with it
        if self._owner is None or self._owner() is not token:
            if self._owner is not None and self._owner() is not None:
                raise WouldBlock("another thread reads inline")
            if self._conn is not None:  # its owner has ended
                self._conn.close()
                self._conn = None
            self._owner = weakref.ref(token)
        if self._conn is None:
            conn = sqlite3.connect(
                self._uri, uri=True, timeout=0, isolation_level=None, check_same_thread=False
            )
            conn.execute("PRAGMA query_only=ON")
            self._conn = conn
        return self._conn

    def close(self) -> None:
        """Close the connection after a read in progress ends; later reads raise
        :class:`WouldBlock`."""
        with self._lock:
            self._closed = True
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()


async def read_inline_or_in_thread(
    inline: Callable[[str], _T], pooled: Callable[[str], _T], key: str
) -> _T:
    """``inline(key)`` on this thread; when it raises :class:`WouldBlock`, ``pooled(key)`` in a
    worker thread (the store's usual read, which waits for locks and reports errors as usual).
    """
    try:
        return inline(key)
    except WouldBlock:
        return await anyio.to_thread.run_sync(pooled, key)
