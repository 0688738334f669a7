"""The embedded default store: one SQLite file in WAL mode, a small LIFO pool, one writer at a
time (process lock plus ``BEGIN IMMEDIATE``); migrations run when it opens.

Design: ``docs/design/server-store.md``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sqlite3
import threading
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import ColumnElement, Connection, create_engine, event, func
from sqlalchemy.engine.url import URL, make_url
from sqlalchemy.pool import ConnectionPoolEntry

from agentledger.server._chain import ChainHasher, ChainRow, ChainRowTuple
from agentledger.server._chain_head import ChainSnapshot
from agentledger.server._store._inline import INLINE_RECORD_MAX_BYTES, InlineReader, WouldBlock
from agentledger.server._store._rows import EVENT_COLS, event_dict
from agentledger.server._store._sql import INSERT_COLUMNS, SQLStore, chain_head_on
from agentledger.server._store.base import KeyRecord

__all__ = ["MIGRATIONS_DIR", "SQLiteStore", "sqlite_path"]

#: :meth:`SQLiteStore.key_by_hash_inline`: the stored fields of :class:`KeyRecord`, in its
#: order (``extra`` is not a column).
_KEY_FIELDS = [field.name for field in dataclasses.fields(KeyRecord) if field.name != "extra"]
_KEY_BY_HASH_SQL = f"SELECT {', '.join(_KEY_FIELDS)} FROM api_keys WHERE key_hash = ?"

assert EVENT_COLS[0].name == "record"  # replaced by the two columns below
#: :meth:`SQLiteStore.get_event_inline`: the length of the record, then the columns of
#: ``EVENT_COLS`` with a record above the inline limit left out (never read on the loop).
_INLINE_EVENT_SQL = (
    f"SELECT length(record), CASE WHEN length(record) <= {INLINE_RECORD_MAX_BYTES}"
    f" THEN record END, {', '.join(column.name for column in EVENT_COLS[1:])}"
    " FROM events WHERE event_id = ?"
)

#: Alembic script location inside the installed package.
MIGRATIONS_DIR = Path(__file__).with_name("_migrations")


def sqlite_path(db: str) -> str:
    """The absolute path of the file named by a path or ``sqlite:///`` URL: the one string the
    pool, the inline reader and the verify workers all open.

    A plain path is read as the pool always read it, as the database part of a
    ``sqlite:///`` URL (``%xx`` decoded, a ``?...`` suffix dropped), so an existing ledger
    keeps its file. ``..`` is removed lexically, as the pool's driver always did, never by
    following a symlink (``os.path.abspath``, not ``Path.resolve``).

    Raises:
        ValueError: an in-memory database (WAL and the pool need a file).
    """
    url = db if db.startswith("sqlite:") else f"sqlite:///{os.path.expanduser(db)}"
    database = make_url(url).database or ""
    if not database or database == ":memory:":
        raise ValueError("the SQLite store needs a file path (':memory:' is not supported)")
    return os.path.abspath(os.path.expanduser(database))


def _on_connect(dbapi_connection: Any, _record: ConnectionPoolEntry) -> None:
    dbapi_connection.isolation_level = None  # driver autocommit; the writer BEGINs itself
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA busy_timeout=10000")
        cursor.execute("PRAGMA foreign_keys=OFF")
        cursor.execute("PRAGMA cache_size=-16384")
        cursor.execute("PRAGMA temp_store=MEMORY")
        cursor.execute("PRAGMA secure_delete=ON")  # forget: erased content is zeroed
    finally:
        cursor.close()


def run_migrations(connection: Connection, hasher: ChainHasher | None = None) -> None:
    """Upgrade the schema to the newest revision shipped in the package. ``hasher`` is the
    store's chain hasher (a data migration marks old forget tombstones with it)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    config.attributes["chain_hasher"] = hasher
    command.upgrade(config, "head")


class SQLiteStore(SQLStore):
    """The SQLite ledger store.

    Args:
        db: a file path or ``sqlite:///`` URL; the file is created when missing.
        chain_key: HMAC key for chain links (``None``: SHA-256).

    Raises:
        ValueError: ``:memory:`` or an empty path.
    """

    def __init__(self, db: str, *, chain_key: str | None = None) -> None:
        path = sqlite_path(db)
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            URL.create("sqlite+pysqlite", database=path),  # exactly this file (no URL parsing)
            pool_size=8,
            max_overflow=32,
            pool_use_lifo=True,  # reuse warm connections: fewer page caches (16 MiB each)
            connect_args={"check_same_thread": False, "timeout": 10.0},
        )
        event.listen(engine, "connect", _on_connect)
        super().__init__(engine, chain_key=chain_key)
        self.path = path
        self._write_lock = threading.Lock()
        self._inline = InlineReader(path)
        columns = ", ".join(INSERT_COLUMNS)
        marks = ", ".join("?" for _ in INSERT_COLUMNS)
        self._insert_sql = f"INSERT INTO events ({columns}) VALUES ({marks})"
        self._chain_sql = (
            f"SELECT {', '.join(ChainRow._fields)} FROM events"
            " WHERE agent = ? AND sequence_no > ? ORDER BY sequence_no"
        )
        self._edge_sql = (
            "SELECT e.sequence_no, c.cause_id, c.kind, c.agent FROM events AS e"
            " JOIN event_causes AS c ON c.effect_id = e.event_id"
            " WHERE e.agent = ? AND e.sequence_no > ? ORDER BY e.sequence_no"
        )
        with self._write_lock, engine.connect() as conn:
            driver = conn.connection.driver_connection
            assert driver is not None
            driver.execute("BEGIN IMMEDIATE")
            try:
                run_migrations(conn, self.hasher)
            except BaseException:
                driver.execute("ROLLBACK")
                raise
            if driver.in_transaction:
                driver.execute("COMMIT")

    def get_event_inline(self, event_id: str) -> dict[str, Any] | None:
        """:meth:`get_event` on the inline reader's connection, which never waits.

        Raises:
            WouldBlock: a lock is held (rare in WAL mode), another thread reads inline, the
                file cannot be read now, the store is closed, or the record is longer than
                :data:`INLINE_RECORD_MAX_BYTES` (parsed in a worker thread instead).
        """
        row = self._inline.run(lambda conn: conn.execute(_INLINE_EVENT_SQL, (event_id,)).fetchone())
        if row is None:
            return None
        if row[0] is not None and row[0] > INLINE_RECORD_MAX_BYTES:
            raise WouldBlock("a large record")  # its bytes were not read: CASE left them out
        return event_dict(row[1:])

    def key_by_hash_inline(self, key_hash: str) -> KeyRecord | None:
        """:meth:`key_by_hash` on the inline reader's connection (see
        :meth:`get_event_inline`).

        Raises:
            WouldBlock: as :meth:`get_event_inline`.
        """

        def lookup(conn: sqlite3.Connection) -> Any:
            cursor = conn.cursor()
            try:  # closed at once: an unfinished statement would hold its read snapshot
                return cursor.execute(_KEY_BY_HASH_SQL, (key_hash,)).fetchone()
            finally:
                cursor.close()

        row = self._inline.run(lookup)
        return KeyRecord(**dict(zip(_KEY_FIELDS, row, strict=True))) if row is not None else None

    def close(self) -> None:
        """Close the inline reader, then dispose of the connection pool."""
        self._inline.close()
        super().close()

    @contextlib.contextmanager
    def writer(self) -> Iterator[Connection]:
        """The process-wide write lock, then ``BEGIN IMMEDIATE`` (other processes wait)."""
        with self._write_lock, self.engine.connect() as conn:
            driver = conn.connection.driver_connection
            assert driver is not None
            driver.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                driver.execute("ROLLBACK")
                raise
            driver.execute("COMMIT")

    def insert_events(self, conn: Connection, rows: list[tuple[Any, ...]]) -> None:
        driver = conn.connection.driver_connection
        assert driver is not None
        driver.executemany(self._insert_sql, rows)

    def insert_edges(self, conn: Connection, rows: list[tuple[Any, ...]]) -> None:
        driver = conn.connection.driver_connection
        assert driver is not None
        driver.executemany(
            "INSERT INTO event_causes (effect_id, cause_id, kind, agent) VALUES (?, ?, ?, ?)", rows
        )

    def chain_rows(self, agent: str, *, after_seq: int = 0) -> Iterator[ChainRowTuple]:
        """Driver tuples straight from ``sqlite3`` (no Row objects: the verify hot path)."""
        return self._driver_rows(self._chain_sql, agent, after_seq)

    def edge_rows(self, agent: str, *, after_seq: int = 0) -> Iterator[tuple[int, str, str, str]]:
        """Driver tuples straight from ``sqlite3``, read in step with :meth:`chain_rows`."""
        return self._driver_rows(self._edge_sql, agent, after_seq)

    @contextlib.contextmanager
    def chain_snapshot(self, agent: str, *, after_seq: int = 0) -> Iterator[ChainSnapshot]:
        """One deferred ``BEGIN`` on one connection: the head query starts the WAL read
        snapshot and both driver cursors read inside it (writers go on; they are not seen)."""
        with self.engine.connect() as conn:
            driver = conn.connection.driver_connection
            assert driver is not None
            driver.execute("BEGIN")
            try:
                head = chain_head_on(conn, agent)
                rows = _cursor_rows(driver, self._chain_sql, agent, after_seq)
                edges = _cursor_rows(driver, self._edge_sql, agent, after_seq)
                try:
                    yield ChainSnapshot(head, rows, edges)
                finally:
                    rows.close()
                    edges.close()
            finally:
                if driver.in_transaction:
                    driver.execute("ROLLBACK")

    def _driver_rows(self, sql: str, agent: str, after_seq: int) -> Iterator[Any]:
        with self.engine.connect() as conn:
            driver = conn.connection.driver_connection
            assert driver is not None
            yield from _cursor_rows(driver, sql, agent, after_seq)

    def distinct_list(self, column: ColumnElement[Any]) -> ColumnElement[Any]:
        """``json_group_array(DISTINCT column)``."""
        return func.json_group_array(column.distinct())

    def writer_busy(self) -> bool:
        """Whether this process's write lock is held."""
        return self._write_lock.locked()


def _cursor_rows(driver: Any, sql: str, agent: str, after_seq: int) -> Generator[Any, None, None]:
    cursor = driver.execute(sql, (agent, after_seq))
    try:
        while rows := cursor.fetchmany(2000):
            yield from rows
    finally:
        cursor.close()
