"""Fixtures for the server suite: an in-process app (httpx ASGITransport) on a fresh ledger of
each store kind (``store_db`` of ``tests/conftest.py``: SQLite, and PostgreSQL when
configured).

Route tests that need no real socket use ``app_client``; end-to-end tests use the real
``ledger_server`` / ``store_server`` / ``server_factory`` fixtures of ``tests/conftest.py``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from _stores import postgres_database, truncate_all
from _twin_ledgers import Twins, twins
from agentledger.server import Settings, create_app

APP_KEY = "app-test-key"

pytestmark = pytest.mark.server


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/server/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.server)


@pytest.fixture
def app_db(store_db: str) -> str:
    return store_db


@pytest.fixture
def app(app_db: str) -> Iterator[FastAPI]:
    application = create_app(Settings(db=app_db, dev_key=APP_KEY))
    yield application
    application.state.store.close()


@pytest.fixture
async def app_client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(
        transport=transport,
        base_url="http://localhost",
        headers={"Authorization": f"Bearer {APP_KEY}"},
    ) as client:
        yield client


# -- twin ledgers: the same agent A, with and without agent B (scope tests) -----------------


@pytest.fixture(scope="module")
def _second_pg_db(pg_admin_dsn: str) -> Iterator[str]:
    with postgres_database(pg_admin_dsn) as url:
        yield url


@pytest.fixture
def twin_dbs(store_kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> tuple[str, str]:
    """Two fresh, empty ledgers of ``store_kind``."""
    if store_kind == "postgres":
        first: str = request.getfixturevalue("pg_db")
        second: str = request.getfixturevalue("_second_pg_db")
        truncate_all(second)
        return first, second
    return str(tmp_path / "with-b.db"), str(tmp_path / "without-b.db")


@pytest.fixture
async def twin(twin_dbs: tuple[str, str], tmp_path: Path) -> AsyncIterator[Twins]:
    """The twin ledgers of ``_twin_ledgers``, filled, with a client per key (their signing
    key in the test's folder, never in the home directory)."""
    async with twins(*twin_dbs, signing_keys=str(tmp_path / "twin-signing-keys.json")) as pair:
        yield pair
