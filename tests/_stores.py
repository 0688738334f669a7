"""Store selection for tests: SQLite files and throw-away PostgreSQL databases.

PostgreSQL tests need a role that may ``CREATE DATABASE``, named by
``AGENTLEDGER_TEST_POSTGRES_DSN`` (e.g. ``postgresql://postgres@127.0.0.1:5432/test``; CI sets
it, so there they fail rather than skip). Each test run creates its own databases, named
``agentledger_t_<random>``, and drops them afterwards; no other database is touched.

Also here: :func:`reuse_tests`, which re-collects a server suite module's tests in another
module, so the same scenarios run against PostgreSQL with that module's fixtures.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

__all__ = [
    "POSTGRES_DSN_ENV",
    "database_url",
    "postgres_admin_dsn",
    "postgres_database",
    "require_postgres",
    "reuse_tests",
    "store_db",
]

POSTGRES_DSN_ENV = "AGENTLEDGER_TEST_POSTGRES_DSN"
SKIP_REASON = (
    f"PostgreSQL tests need {POSTGRES_DSN_ENV}, a role that may CREATE DATABASE, e.g. "
    f"{POSTGRES_DSN_ENV}=postgresql://postgres@127.0.0.1:5432/test pytest tests/postgres"
)
TESTS_DIR = Path(__file__).resolve().parent


def postgres_admin_dsn() -> str | None:
    """The DSN of ``AGENTLEDGER_TEST_POSTGRES_DSN``, or ``None`` when unset."""
    return os.environ.get(POSTGRES_DSN_ENV) or None


def require_postgres() -> str:
    """The admin DSN; skips the test (with how to run it) when the variable is unset."""
    dsn = postgres_admin_dsn()
    if dsn is None:
        pytest.skip(SKIP_REASON)
    return dsn


def database_url(admin_dsn: str, name: str) -> str:
    """``admin_dsn`` with its database replaced by ``name``."""
    from sqlalchemy.engine.url import make_url

    url = make_url(admin_dsn).set(database=name)
    return url.render_as_string(hide_password=False)


@contextmanager
def postgres_database(admin_dsn: str, *, prefix: str = "agentledger_t") -> Iterator[str]:
    """Create an empty database, yield its ``postgresql://`` URL, drop it (``FORCE``) after.

    Raises:
        psycopg.OperationalError: the server named by ``admin_dsn`` cannot be reached (in CI
            that fails the test, as it should).
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


@contextmanager
def store_db(kind: str, tmp_path: Path) -> Iterator[str]:
    """A ``--db`` value for a fresh ledger of ``kind`` (``"sqlite"`` or ``"postgres"``).

    ``"postgres"`` skips when :data:`POSTGRES_DSN_ENV` is unset.
    """
    if kind == "sqlite":
        yield str(tmp_path / f"ledger-{uuid.uuid4().hex[:8]}.db")
    elif kind == "postgres":
        with postgres_database(require_postgres()) as url:
            yield url
    else:
        raise ValueError(f"unknown store kind {kind!r}")


def _load(relative: str) -> ModuleType:
    path = TESTS_DIR / relative
    name = "_reused_" + relative.replace("/", "_").removesuffix(".py")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def reuse_tests(
    relative: str, namespace: dict[str, Any], *, skip_if_source_has: tuple[str, ...] = ()
) -> ModuleType:
    """Copy the tests and fixtures of ``tests/<relative>`` into ``namespace`` (a module's
    ``globals()``), so pytest collects them there, with that module's fixtures.

    Names already in ``namespace`` are kept (the caller's fixtures override the suite's). A
    test whose source contains one of ``skip_if_source_has`` (e.g. ``"sqlite3"``: it edits
    the SQLite file directly) is left out.

    Returns:
        The loaded suite module (its helpers can be used directly).
    """
    module = _load(relative)
    for name, value in vars(module).items():
        if name in namespace:
            continue
        is_fixture = type(value).__name__ == "FixtureFunctionDefinition" or hasattr(
            value, "_pytestfixturefunction"
        )
        is_test = name.startswith("test_") and callable(value)
        if not (is_fixture or is_test):
            continue
        if is_test and skip_if_source_has:
            source = inspect.getsource(value)
            if any(marker in source for marker in skip_if_source_has):
                continue
        namespace[name] = value
    return module
