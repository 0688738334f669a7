"""Ledger stores: the interface (:mod:`.base`), SQLite (:mod:`.sqlite`) and PostgreSQL
(:mod:`.postgres`)."""

from __future__ import annotations

import importlib

from agentledger.server._store.base import (
    AppendOutcome,
    KeyRecord,
    LedgerStore,
    Lineage,
)

__all__ = ["AppendOutcome", "KeyRecord", "LedgerStore", "Lineage", "open_store"]


def open_store(
    db: str,
    *,
    chain_key: str | None = None,
    pg_pool_size: int = 10,
    pg_statement_timeout_s: float = 30.0,
) -> LedgerStore:
    """Open (and migrate) the store named by ``db``.

    Args:
        db: a file path or ``sqlite:///`` URL (SQLite), or a ``postgresql://`` URL.
        chain_key: HMAC key for chain links, ``None`` for SHA-256.
        pg_pool_size: PostgreSQL only: connections pooled per process (+ as many overflow).
        pg_statement_timeout_s: PostgreSQL only: statement and lock timeout in seconds.

    Raises:
        ValueError: a bad path or URL, or the PostgreSQL extra is not installed.
        agentledger.server._store.postgres.StoreStartupError: (a ``ValueError``) PostgreSQL
            is unreachable, refuses the login, or the role lacks rights; the message says
            what to fix.
    """
    if db.startswith(("postgresql://", "postgresql+", "postgres://")):
        try:
            module = importlib.import_module("agentledger.server._store.postgres")
        except ImportError as error:
            raise ValueError(f"the PostgreSQL store is not available: {error}") from None
        store: LedgerStore = module.PostgresStore(
            db,
            chain_key=chain_key,
            pool_size=pg_pool_size,
            statement_timeout_s=pg_statement_timeout_s,
        )
        return store
    from agentledger.server._store.sqlite import SQLiteStore

    return SQLiteStore(db, chain_key=chain_key)
