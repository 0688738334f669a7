"""Store selection for tests: SQLite files and throw-away PostgreSQL databases.

Store-level tests run on both backends by taking the ``store_db`` fixture (``tests/conftest.py``),
which is parametrised over :data:`STORE_KINDS`: ``[sqlite]`` always, ``[postgres]`` (marked
``postgres``) with a database of its own. A test that only makes sense on one backend says so by
parametrising the fixture directly: ``@SQLITE_ONLY`` or ``@POSTGRES_ONLY``.

PostgreSQL needs a role that may ``CREATE DATABASE``, named by ``AGENTLEDGER_TEST_POSTGRES_DSN``
(e.g. ``postgresql://postgres@127.0.0.1:5432/test``). Unset: the ``postgres`` cases skip, saying
how to run them. Set but unreachable: they fail (CI sets it, so a broken database is never
mistaken for a skip). Each run creates its own databases, named ``agentledger_t_<random>``, and
drops them afterwards; no other database is touched.
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

__all__ = [
    "POSTGRES_DSN_ENV",
    "POSTGRES_ONLY",
    "SKIP_REASON",
    "SQLITE_ONLY",
    "STORE_KINDS",
    "SqlConnection",
    "check_postgres",
    "database_url",
    "dump_text",
    "is_postgres",
    "postgres_admin_dsn",
    "postgres_database",
    "require_postgres",
    "sql_connection",
    "truncate_all",
]

POSTGRES_DSN_ENV = "AGENTLEDGER_TEST_POSTGRES_DSN"
SKIP_REASON = (
    f"PostgreSQL tests need {POSTGRES_DSN_ENV}, a role that may CREATE DATABASE, e.g. "
    f"{POSTGRES_DSN_ENV}=postgresql://postgres@127.0.0.1:5432/test"
)

#: The parameters of ``store_kind`` (and so of ``store_db``).
STORE_KINDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
#: Run a ``store_db`` test on SQLite only (it relies on something only SQLite does).
SQLITE_ONLY = pytest.mark.parametrize("store_kind", ["sqlite"])
#: Run a ``store_db`` test on PostgreSQL only.
POSTGRES_ONLY = pytest.mark.parametrize(
    "store_kind", [pytest.param("postgres", marks=pytest.mark.postgres)]
)


def postgres_admin_dsn() -> str | None:
    """The DSN of ``AGENTLEDGER_TEST_POSTGRES_DSN``, or ``None`` when unset."""
    return os.environ.get(POSTGRES_DSN_ENV) or None


def require_postgres() -> str:
    """The admin DSN; skips the test (with how to run it) when the variable is unset."""
    dsn = postgres_admin_dsn()
    if dsn is None:
        pytest.skip(SKIP_REASON)
    return dsn


def check_postgres(dsn: str) -> str:
    """``dsn`` once a connection to it succeeded; fails the test (not a skip) when the
    variable is set but PostgreSQL cannot be reached."""
    import psycopg

    try:
        with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as error:
        pytest.fail(f"{POSTGRES_DSN_ENV} is set but PostgreSQL is unreachable: {error}")
    return dsn


def database_url(admin_dsn: str, name: str) -> str:
    """``admin_dsn`` with its database replaced by ``name``."""
    from sqlalchemy.engine.url import make_url

    url = make_url(admin_dsn).set(database=name)
    return url.render_as_string(hide_password=False)


def is_postgres(db: str) -> bool:
    """Whether a ``--db`` value names a PostgreSQL database."""
    return db.startswith(("postgresql://", "postgres://", "postgresql+"))


@contextmanager
def postgres_database(admin_dsn: str, *, prefix: str = "agentledger_t") -> Iterator[str]:
    """Create an empty database, yield its ``postgresql://`` URL, drop it (``FORCE``) after.

    Raises:
        psycopg.OperationalError: the server named by ``admin_dsn`` cannot be reached.
    """
    import psycopg

    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_dsn, autocommit=True, connect_timeout=10) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield database_url(admin_dsn, name)
    finally:
        with psycopg.connect(admin_dsn, autocommit=True, connect_timeout=10) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _public_tables(conn: Any) -> list[str]:
    return [
        row[0]
        for row in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' "
            "AND tablename <> 'alembic_version' ORDER BY tablename"
        )
    ]


def truncate_all(url: str) -> None:
    """Empty every ledger table of a PostgreSQL database (the schema stays)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        tables = _public_tables(conn)
        if tables:
            names = ", ".join(f'"{name}"' for name in tables)
            conn.execute(f"TRUNCATE {names} RESTART IDENTITY")


class SqlConnection:
    """Direct SQL on a ledger database of either kind, for tests that edit rows behind the
    server's back: ``execute(sql, params)`` with ``?`` placeholders (rewritten to ``%s`` on
    PostgreSQL), autocommit, returning the driver's cursor."""

    def __init__(self, db: str) -> None:
        self.postgres = is_postgres(db)
        if self.postgres:
            import psycopg

            self._conn: Any = psycopg.connect(db, autocommit=True)
        else:
            self._conn = sqlite3.connect(db, isolation_level=None)

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        if self.postgres:
            return self._conn.execute(sql.replace("?", "%s"), params)
        return self._conn.execute(sql, params)

    def close(self) -> None:
        self._conn.close()


@contextmanager
def sql_connection(db: str) -> Iterator[SqlConnection]:
    """A :class:`SqlConnection` on ``db``, closed afterwards."""
    conn = SqlConnection(db)
    try:
        yield conn
    finally:
        conn.close()


def dump_text(db: str) -> str:
    """Every row of every table as text (SQLite: ``iterdump``; PostgreSQL: ``t::text`` of
    each public table), to check that a secret is stored nowhere."""
    if not is_postgres(db):
        with sqlite3.connect(db) as conn:
            return "\n".join(conn.iterdump())
    import psycopg

    with psycopg.connect(db, autocommit=True) as conn:
        lines = []
        for table in _public_tables(conn):
            lines += [str(row[0]) for row in conn.execute(f'SELECT "{table}"::text FROM "{table}"')]
        return "\n".join(lines)
