"""Fixtures for the PostgreSQL-only suite (what has no SQLite counterpart: concurrency of
several servers, start-up errors, portability, the tsvector index, schemathesis on PostgreSQL).

Tests that should pass on both stores live in ``tests/server`` and ``tests/query`` and take the
``store_db`` / ``store_server`` fixtures of ``tests/conftest.py`` instead. The database
fixtures (``pg_admin_dsn``, ``pg_db``, ``fresh_pg_db``) are there too: without
``AGENTLEDGER_TEST_POSTGRES_DSN`` the tests here skip, saying how to run them; with it set but
PostgreSQL unreachable they fail.

* ``pg_server``: a real ``agentledger serve --db postgresql://...`` on ``pg_db``.
* ``app_client``: an ``httpx.AsyncClient`` on the in-process app on ``pg_db``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from agentledger.server import Settings, create_app

APP_KEY = "app-test-key"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/postgres/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.postgres)
            item.add_marker(pytest.mark.server)


@pytest.fixture
def pg_server(server_factory: Any, pg_db: str) -> Any:
    """A real ``agentledger serve`` on a fresh PostgreSQL database."""
    return server_factory(db=pg_db)


@pytest.fixture
async def app_client(pg_db: str) -> AsyncIterator[httpx.AsyncClient]:
    """The in-process app (``Settings.dev_key`` = :data:`APP_KEY`) on ``pg_db``."""
    application = create_app(Settings(db=pg_db, dev_key=APP_KEY))
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=application),
            base_url="http://localhost",
            headers={"Authorization": f"Bearer {APP_KEY}"},
        ) as client:
            yield client
    finally:
        application.state.store.close()
