"""Fixtures shared by every suite.

* ``ledger_server``: a real ``agentledger serve`` (the console script) on a free loopback port
  with a fresh SQLite file, started once per test session.
* ``server_factory``: start extra servers (own DB, own options) that are stopped after the test;
  they can be killed (SIGKILL) and restarted on the same port and file for chaos tests.
* ``internal_errors_are_loud`` (autouse): fails a test when any guarded callback swallowed an
  exception (records at ERROR on the ``agentledger`` logger that carry a traceback).

Store fixtures (see ``tests/_stores.py``):

* ``store_kind`` / ``store_db``: parametrised over ``sqlite`` and ``postgres``; ``store_db`` is
  a fresh, empty ledger of that kind (a new SQLite file; on PostgreSQL one database per module,
  emptied before each test). ``@SQLITE_ONLY`` / ``@POSTGRES_ONLY`` narrow a test to one kind.
* ``store_server``: a real ``agentledger serve`` per store kind (SQLite: the session's
  ``ledger_server``; PostgreSQL: one per module on its own database).
* ``pg_admin_dsn`` (skips when unset, fails when unreachable), ``pg_db`` (an empty ledger
  database, tables truncated per test), ``fresh_pg_db`` (a new database with no schema).
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("ZIZKADB_TELEMETRY", "false")
os.environ.setdefault("ZIZKADB_QUIET", "1")

from _servers import (
    DEV_KEY,
    ServerFactory,
    ServerProcess,
    agentledger_executable,
    free_port,
)
from _stores import STORE_KINDS, check_postgres, postgres_database, require_postgres, truncate_all

__all__ = ["DEV_KEY", "ServerFactory", "ServerProcess", "agentledger_executable", "free_port"]


@pytest.fixture(scope="session")
def ledger_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One real server for the whole test session; tests isolate by unique agent names."""
    factory = ServerFactory(tmp_path_factory.mktemp("ledger-server"))
    server = factory()
    yield server
    factory.stop_all()


@pytest.fixture
def server_factory(tmp_path: Path) -> Iterator[ServerFactory]:
    """Start servers of the test's own; all are stopped when the test ends."""
    factory = ServerFactory(tmp_path)
    yield factory
    factory.stop_all()


@pytest.fixture(scope="session")
def pg_admin_dsn() -> str:
    """The PostgreSQL admin DSN: skips when unset, fails when set but unreachable."""
    return check_postgres(require_postgres())


@pytest.fixture
def fresh_pg_db(pg_admin_dsn: str) -> Iterator[str]:
    """A database of the test's own, created empty (no schema yet) and dropped afterwards."""
    with postgres_database(pg_admin_dsn) as url:
        yield url


@pytest.fixture(scope="module")
def _module_pg_db(pg_admin_dsn: str) -> Iterator[str]:
    with postgres_database(pg_admin_dsn) as url:
        yield url


@pytest.fixture
def pg_db(_module_pg_db: str) -> str:
    """A ledger database with no rows: one database per module, every table but
    ``alembic_version`` truncated before each test (much cheaper than a database per test)."""
    truncate_all(_module_pg_db)
    return _module_pg_db


@pytest.fixture(params=STORE_KINDS)
def store_kind(request: pytest.FixtureRequest) -> str:
    """Which store the test runs on (``sqlite``, or ``postgres`` when configured)."""
    kind: str = request.param
    return kind


@pytest.fixture
def store_db(store_kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """The ``--db`` value of a fresh, empty ledger of ``store_kind``."""
    if store_kind == "postgres":
        url: str = request.getfixturevalue("pg_db")
        return url
    return str(tmp_path / f"ledger-{uuid.uuid4().hex[:8]}.db")


@pytest.fixture(scope="module", params=STORE_KINDS)
def store_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    """A real server per store kind; tests isolate by unique agent names."""
    if request.param == "sqlite":
        yield request.getfixturevalue("ledger_server")
        return
    admin = request.getfixturevalue("pg_admin_dsn")
    factory = ServerFactory(tmp_path_factory.mktemp("pg-ledger-server"))
    with postgres_database(admin) as url:
        try:
            yield factory(db=url)
        finally:
            factory.stop_all()


@pytest.fixture
def agent_name(request: pytest.FixtureRequest) -> str:
    """A unique, valid agent name per test."""
    base = "".join(c if c.isalnum() else "-" for c in request.node.name)[:60].strip("-")
    return f"{base or 'agent'}-{uuid.uuid4().hex[:8]}"


class _InternalErrorCollector(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info:
            self.records.append(record)


@pytest.fixture(autouse=True)
def internal_errors_are_loud(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail the test if a guard swallowed an exception (the library never breaks the host, but
    the suite must see what it swallowed).

    A test that provokes an internal error on purpose marks itself
    ``@pytest.mark.allow_internal_errors``.
    """
    collector = _InternalErrorCollector()
    log = logging.getLogger("agentledger")
    log.addHandler(collector)
    try:
        yield
    finally:
        log.removeHandler(collector)
    if collector.records and not request.node.get_closest_marker("allow_internal_errors"):
        first = collector.records[0]
        detail = logging.Formatter().formatException(first.exc_info) if first.exc_info else ""
        pytest.fail(
            f"{len(collector.records)} internal error(s) swallowed by agentledger guards; "
            f"first: {first.getMessage()}\n{detail}"
        )
