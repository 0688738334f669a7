"""The PostgreSQL store: several server processes on one shared, durable database, appends
serialised per agent by advisory locks, clear start-up errors, ``COPY`` for bulk inserts.

Design (locking, idempotency under races, timeouts, schema differences):
``docs/design/server-store.md``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
from collections.abc import Iterator, Sequence
from typing import Any

try:  # the driver SQLAlchemy loads; imported here so a missing extra fails with its name
    import psycopg  # noqa: F401
except ImportError as error:  # pragma: no cover - the postgres extra is installed in tests
    raise ImportError("psycopg 3 is missing: pip install 'agentledger[postgres]'") from error
from sqlalchemy import ColumnElement, Connection, create_engine, func, text
from sqlalchemy.engine.url import URL, make_url
from sqlalchemy.exc import DBAPIError, OperationalError

from agentledger.protocol.errors import LedgerError
from agentledger.server._ingest import PreparedEvent
from agentledger.server._search.postgres import search_vector
from agentledger.server._store._each import refused_content
from agentledger.server._store._sql import INSERT_COLUMNS, SQLStore
from agentledger.server._store.base import AppendOutcome
from agentledger.server._store.sqlite import run_migrations

__all__ = ["PostgresStore", "StoreStartupError", "advisory_key", "postgres_url"]

#: Retries of an append transaction after a unique violation on ``event_id`` (a race between
#: agents on one client id) or a deadlock; the retried look-up finds the winner's row.
#: The advisory lock key of :meth:`PostgresStore.lineage_lock`. It is taken after the agents'
#: keys, so even equal to one of them it can only order two writers, never deadlock them.
_LINEAGE_LOCK = 0x6167656E746C6564  # 'agentled'

_RETRIES = 3
#: Advisory lock serializing migrations of concurrently starting processes.
_MIGRATION_LOCK = 0x616C_6D69_6772  # "almigr"
#: Below this many rows an append inserts with ``executemany`` instead of ``COPY``.
_COPY_MIN_ROWS = 8
_EVENT_AT = INSERT_COLUMNS.index("event")
_RECORD_AT = INSERT_COLUMNS.index("record")
_RETRY_STATES = frozenset({"23505", "40P01", "40001"})


class StoreStartupError(LedgerError, ValueError):
    """The PostgreSQL store cannot start: unreachable, login refused, or missing rights.

    The message names the database (password hidden) and what to change.
    """


def postgres_url(db: str) -> URL:
    """The SQLAlchemy URL (psycopg 3 driver) for a ``postgresql://`` or ``postgres://`` URL.

    Raises:
        ValueError: not a PostgreSQL URL, or a driver other than psycopg.
    """
    url = make_url(db.replace("postgres://", "postgresql://", 1))
    if url.get_backend_name() != "postgresql":
        raise ValueError(f"not a PostgreSQL URL: {url.render_as_string(hide_password=True)}")
    if url.drivername not in ("postgresql", "postgresql+psycopg"):
        raise ValueError(f"unsupported PostgreSQL driver {url.drivername!r}; use postgresql://")
    return url.set(drivername="postgresql+psycopg")


def advisory_key(agent: str) -> int:
    """The advisory lock key of ``agent``: BLAKE2b's first 8 bytes as a signed 64-bit int."""
    digest = hashlib.blake2b(agent.encode(), digest_size=8, person=b"agentledger").digest()
    return int.from_bytes(digest, "big", signed=True)


def _sqlstate(error: BaseException) -> str | None:
    """SQLSTATE of a psycopg error, bare or wrapped in a SQLAlchemy ``DBAPIError``."""
    origin = error.orig if isinstance(error, DBAPIError) else error
    state = getattr(origin, "sqlstate", None)
    return state if isinstance(state, str) else None


class PostgresStore(SQLStore):
    """The PostgreSQL ledger store (see the module docstring for the design).

    Args:
        db: ``postgresql://user[:password]@host[:port]/dbname[?sslmode=...]``.
        chain_key: HMAC key for chain links (``None``: SHA-256).
        pool_size: connections kept per process; up to as many again are opened under load.
        statement_timeout_s: statement and lock timeout in seconds.

    Raises:
        StoreStartupError: the database is unreachable, refuses the login, or the role may
            not create or use the schema.
        ValueError: a malformed URL or configuration value.
    """

    def __init__(
        self,
        db: str,
        *,
        chain_key: str | None = None,
        pool_size: int = 10,
        statement_timeout_s: float = 30.0,
    ) -> None:
        url = postgres_url(db)
        #: the URL as given, password hidden (for messages)
        self.display_url = make_url(db).render_as_string(hide_password=True)
        size = int(pool_size)
        timeout_s = float(statement_timeout_s)
        if size < 1 or timeout_s <= 0:
            raise ValueError("pool size must be >= 1 and the statement timeout > 0 s")
        timeout_ms = int(timeout_s * 1000)
        # jit=off: the ledger's queries are short lookups and walks whose cost estimates can
        # look large (a recursive walk); compiling them took longer than running them
        # (350 ms of JIT for a 250 ms why() of 10,000 events)
        options = (
            f"-c statement_timeout={timeout_ms} -c lock_timeout={timeout_ms} "
            "-c idle_in_transaction_session_timeout=60000 -c jit=off"
        )
        engine = create_engine(
            url,
            pool_size=size,
            max_overflow=size,
            pool_pre_ping=True,
            pool_timeout=timeout_s,
            connect_args={
                "options": options,
                "application_name": "agentledger",
                "connect_timeout": 10,
            },
        )
        super().__init__(engine, chain_key=chain_key)
        # the shared columns plus ``search`` (tsvector text computed here, migration 0003)
        columns = ", ".join(f'"{name}"' for name in (*INSERT_COLUMNS, "search"))
        self._copy_sql = f"COPY events ({columns}) FROM STDIN"
        marks = ", ".join(["%s"] * len(INSERT_COLUMNS) + ["%s::tsvector"])
        self._insert_sql = f"INSERT INTO events ({columns}) VALUES ({marks})"
        try:
            self._migrate()
            self._check_rights()
        except BaseException:
            engine.dispose()
            raise

    # -- start-up ----------------------------------------------------------------------------

    def _migrate(self) -> None:
        try:
            with self.engine.begin() as conn:
                conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _MIGRATION_LOCK})
                run_migrations(conn, self.hasher)
        except OperationalError as error:
            raise StoreStartupError(self._explain(error)) from None
        except DBAPIError as error:
            if _sqlstate(error) == "42501":  # insufficient_privilege
                raise StoreStartupError(
                    f"the PostgreSQL role may not create or read the ledger schema in "
                    f"{self.display_url}: {_first_line(error)}. Start the server once as the "
                    "database owner (it migrates the schema), then GRANT SELECT, INSERT, "
                    "UPDATE, DELETE ON ALL TABLES IN SCHEMA public and USAGE ON ALL SEQUENCES "
                    "IN SCHEMA public to this role (or GRANT CREATE ON SCHEMA public)"
                ) from None
            raise

    def _check_rights(self) -> None:
        # has_table_privilege is true only when the role holds *all* the listed rights
        query = text(
            "SELECT c.relname FROM pg_class AS c "
            "JOIN pg_namespace AS n ON n.oid = c.relnamespace "
            "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') "
            "AND c.relname <> 'alembic_version' "
            "AND NOT (has_table_privilege(current_user, c.oid, 'SELECT') "
            "AND has_table_privilege(current_user, c.oid, 'INSERT') "
            "AND has_table_privilege(current_user, c.oid, 'UPDATE') "
            "AND has_table_privilege(current_user, c.oid, 'DELETE')) ORDER BY c.relname"
        )
        sequence = text("SELECT has_sequence_privilege(current_user, 'events_id_seq', 'USAGE')")
        with self.engine.connect() as conn:
            missing = [row[0] for row in conn.execute(query)]
            if not conn.execute(sequence).scalar_one():
                missing.append("events_id_seq (USAGE)")
            role = conn.execute(text("SELECT current_user")).scalar_one()
        if missing:
            raise StoreStartupError(
                f"PostgreSQL role {role!r} lacks SELECT, INSERT, UPDATE, DELETE on "
                f"{', '.join(missing)} in {self.display_url}; GRANT them to the role"
            )

    def _explain(self, error: OperationalError) -> str:
        detail = _first_line(error)
        state = _sqlstate(error)
        if state == "3D000":
            hint = "the database does not exist (createdb it first)"
        elif state in ("28P01", "28000"):
            hint = "the login was refused (check user, password and pg_hba.conf)"
        else:
            hint = "is PostgreSQL running and reachable at that host and port?"
        return f"cannot open PostgreSQL at {self.display_url}: {detail} ({hint})"

    # -- dialect hooks -----------------------------------------------------------------------

    @contextlib.contextmanager
    def writer(self) -> Iterator[Connection]:
        """A plain transaction: row locks and the per-agent advisory locks of :meth:`append`
        are what serialize writers on PostgreSQL."""
        with self.engine.begin() as conn:
            yield conn

    def distinct_list(self, column: ColumnElement[Any]) -> ColumnElement[Any]:
        """``array_agg(DISTINCT column)``."""
        return func.array_agg(column.distinct())

    def insert_events(self, conn: Connection, rows: list[tuple[Any, ...]]) -> None:
        """``COPY ... FROM STDIN`` on the driver connection (psycopg 3), the bulk path that
        PostgreSQL parses fastest; a few rows go through ``executemany``. Each row carries its
        ``search`` vector (:func:`search_vector`)."""
        driver = conn.connection.driver_connection
        assert driver is not None
        full = [(*row, search_vector(row[_EVENT_AT], row[_RECORD_AT])) for row in rows]
        with driver.cursor() as cursor:
            if len(full) < _COPY_MIN_ROWS:
                cursor.executemany(self._insert_sql, full)
                return
            with cursor.copy(self._copy_sql) as copy:
                for row in full:
                    copy.write_row(row)

    # -- writes ------------------------------------------------------------------------------

    @staticmethod
    def lineage_lock(conn: Connection) -> None:
        """One transaction-scoped advisory lock for every append that could close a cycle
        across agents (the per-agent locks do not order writers of different agents)."""
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _LINEAGE_LOCK})

    def append(
        self,
        items: Sequence[PreparedEvent],
        *,
        keep_received_at: Sequence[str | None] = (),
        reader_agent: str | None = None,
    ) -> list[AppendOutcome]:
        """See :meth:`LedgerStore.append`: one transaction holding the agents' advisory locks;
        when the database refuses a value of an item, a second one writes the items one by one.

        Raises:
            sqlalchemy.exc.DBAPIError: the database failed (after ``_RETRIES`` retries of
                unique-violation and deadlock races).
        """
        if not items:
            return []
        refused = _refuse_nul(items)
        if refused:
            return self._append_around(items, keep_received_at, refused, reader_agent)
        keys = sorted({advisory_key(item.agent) for item in items})
        lock = text("SELECT pg_advisory_xact_lock(:k)")
        attempt = 0
        each = False  # set when the database refused a value: write the items one by one
        while True:
            try:
                with self.engine.begin() as conn:
                    for key in keys:
                        conn.execute(lock, {"k": key})
                    if each:
                        return self.append_each_on(conn, items, keep_received_at, reader_agent)
                    return self.append_on(conn, items, keep_received_at, reader_agent)
            except Exception as error:  # SQLAlchemy-wrapped, or psycopg's own from COPY
                if not each and refused_content(error) is not None:
                    each = True
                    continue
                attempt += 1
                if attempt > _RETRIES or _sqlstate(error) not in _RETRY_STATES:
                    raise

    def _append_around(
        self,
        items: Sequence[PreparedEvent],
        keep_received_at: Sequence[str | None],
        refused: dict[int, AppendOutcome],
        reader_agent: str | None,
    ) -> list[AppendOutcome]:
        """Append the items not in ``refused``; items naming a refused parent fail too."""
        kept: list[PreparedEvent] = []
        kept_received: list[str | None] = []
        position: dict[int, int] = {}  # batch index -> index among the kept items
        for index, item in enumerate(items):
            if index in refused:
                continue
            parent_index = item.parent_index
            if parent_index is not None and 0 <= parent_index < index:
                if parent_index in refused:
                    refused[index] = AppendOutcome(
                        ok=False,
                        status=422,
                        error=f"parent_index: item {parent_index} was not written",
                    )
                    continue
                item = dataclasses.replace(item, parent_index=position[parent_index])
            elif parent_index is not None:
                refused[index] = AppendOutcome(
                    ok=False,
                    status=422,
                    error=f"parent_index: must name an earlier item (< {index})",
                )
                continue
            position[index] = len(kept)
            kept.append(item)
            kept_received.append(keep_received_at[index] if index < len(keep_received_at) else None)
        written = iter(
            self.append(kept, keep_received_at=kept_received, reader_agent=reader_agent)
            if kept
            else []
        )
        return [refused[i] if i in refused else next(written) for i in range(len(items))]


def _refuse_nul(items: Sequence[PreparedEvent]) -> dict[int, AppendOutcome]:
    """422 outcomes for items whose indexed text holds a NUL character.

    PostgreSQL text cannot store U+0000 (``data`` and ``metadata`` can: they live in the
    ``bytea`` record), so such an item is refused, naming the field, instead of failing the
    whole batch.
    """
    refused: dict[int, AppendOutcome] = {}
    for index, item in enumerate(items):
        for name in ("event", "session_id", "idempotency_key"):
            value = getattr(item, name)
            if value is not None and "\x00" in value:
                refused[index] = AppendOutcome(
                    ok=False,
                    status=422,
                    error=f"{name}: must not contain NUL (U+0000) characters",
                )
                break
    return refused


def _first_line(error: DBAPIError) -> str:
    return str(error.orig).strip().splitlines()[0] if error.orig else str(error)
