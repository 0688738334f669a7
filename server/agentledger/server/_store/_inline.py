"""Point reads answered on the calling thread, without waiting.

A sync route costs a hand-off to a worker thread and back, which on SQLite costs several times
the point query itself (``docs/design/server-store.md``, "Reads on the event loop"). The
reader here keeps one SQLite connection per calling thread (in practice: the event loop's)
with a busy timeout of zero, so a read that would wait for a lock fails at once with
:class:`WouldBlock` and the route runs the usual pooled read in a worker thread instead.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from typing import TypeVar

import anyio.to_thread

__all__ = ["InlineReader", "WouldBlock", "read_inline_or_in_thread"]

_T = TypeVar("_T")


class WouldBlock(Exception):
    """The read cannot be answered at once on this thread (a lock is held, the store cannot
    read inline, or it is closed): run the usual read in a worker thread."""


class InlineReader:
    """One query-only connection per thread to the SQLite file at ``path``.

    Args:
        path: the database file (already created and migrated by the store).
    """

    def __init__(self, path: str) -> None:
        self._path = path
        self._local = threading.local()
        self._opened: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._closed = False

    def connection(self) -> sqlite3.Connection:
        """This thread's connection, opened on first use.

        Raises:
            WouldBlock: the reader is closed, or the file cannot be opened now.
        """
        if self._closed:
            raise WouldBlock("the store is closed")
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        try:
            conn = sqlite3.connect(
                self._path, timeout=0, isolation_level=None, check_same_thread=False
            )
            conn.execute("PRAGMA query_only=ON")
        except sqlite3.Error as error:
            raise WouldBlock(str(error)) from error
        with self._lock:
            if self._closed:
                conn.close()
                raise WouldBlock("the store is closed")
            self._opened.append(conn)
        self._local.conn = conn
        return conn

    def close(self) -> None:
        """Close every thread's connection; later reads raise :class:`WouldBlock`."""
        with self._lock:
            self._closed = True
            opened, self._opened = self._opened, []
        for conn in opened:
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
