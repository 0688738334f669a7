"""Migration 0008 creates the retention tables and its downgrade drops them (both stores)."""

from __future__ import annotations

from sqlalchemy import inspect

from _migrations import alembic
from agentledger.server._store import open_store

TABLES = {"retention_policies", "erasure_log"}


def test_upgrade_and_downgrade(store_db: str) -> None:
    store = open_store(store_db)
    try:
        assert set(inspect(store.engine).get_table_names()) >= TABLES
        with store.engine.begin() as conn:
            alembic(conn, "downgrade", "0007")
        assert not TABLES & set(inspect(store.engine).get_table_names())
        with store.engine.begin() as conn:
            alembic(conn, "upgrade", "0008")
        assert set(inspect(store.engine).get_table_names()) >= TABLES
    finally:
        store.close()
