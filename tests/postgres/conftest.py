"""Fixtures for the PostgreSQL suite: fresh databases and real servers on them.

Every test here needs ``AGENTLEDGER_TEST_POSTGRES_DSN`` (see ``tests/_stores.py``); without it
the tests skip with a message saying how to run them, and in CI (where it is set) they fail if
PostgreSQL is unreachable.

* ``pg_admin_dsn``: the admin DSN (skips when unset).
* ``pg_db``: an empty ledger per test (``postgresql://`` URL): one database per module whose
  tables are truncated before each test; ``fresh_pg_db``: a new database with no schema.
* ``pg_server``: a real ``agentledger serve --db postgresql://...`` on ``pg_db``.
* ``app_db`` / ``app`` / ``app_client``: the in-process app of ``tests/server`` on ``pg_db``;
  ``ledger_server`` is overridden by one server per module on its own database, so reused
  suites run on PostgreSQL unchanged.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import psycopg
import pytest
from fastapi import FastAPI

from _servers import ServerFactory
from _stores import postgres_database, require_postgres
from agentledger.server import Settings, create_app

APP_KEY = "app-test-key"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/postgres/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.postgres)
            item.add_marker(pytest.mark.server)


@pytest.fixture(scope="session")
def pg_admin_dsn() -> str:
    return require_postgres()


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
    with psycopg.connect(_module_pg_db, autocommit=True) as conn:
        tables = [
            row[0]
            for row in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public' "
                "AND tablename <> 'alembic_version'"
            )
        ]
        if tables:
            names = ", ".join(f'"{name}"' for name in tables)
            conn.execute(f"TRUNCATE {names} RESTART IDENTITY")
    return _module_pg_db


@pytest.fixture
def pg_server(server_factory: Any, pg_db: str) -> Any:
    """A real ``agentledger serve`` on a fresh PostgreSQL database."""
    return server_factory(db=pg_db)


@pytest.fixture(scope="module")
def ledger_server(
    request: pytest.FixtureRequest, pg_admin_dsn: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    """One ``agentledger serve`` on one fresh PostgreSQL database per module (tests isolate by
    unique agent names, as with the session-wide SQLite ``ledger_server``)."""
    factory = ServerFactory(tmp_path_factory.mktemp("pg-ledger-server"))
    with postgres_database(pg_admin_dsn) as url:
        try:
            yield factory(db=url)
        finally:
            factory.stop_all()


@pytest.fixture
def app_db(pg_db: str) -> str:
    return pg_db


@pytest.fixture
def app(app_db: str) -> Iterator[FastAPI]:
    application = create_app(Settings(db=app_db, dev_key=APP_KEY))
    yield application
    application.state.store.close()


@pytest.fixture
async def app_client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://ledger.test",
        headers={"Authorization": f"Bearer {APP_KEY}"},
    ) as client:
        yield client
