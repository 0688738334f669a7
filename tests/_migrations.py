"""Helpers of the migration tests: run an Alembic command on an open connection, and verify
one agent's chain straight from the store (no server)."""

from __future__ import annotations

from alembic import command
from alembic.config import Config

from agentledger.server._chain import ChainReport, verify_rows
from agentledger.server._store.base import LedgerStore
from agentledger.server._store.sqlite import MIGRATIONS_DIR

__all__ = ["alembic", "verify_agent"]


def alembic(connection: object, action: str, revision: str) -> None:
    """``alembic <action> <revision>`` (``upgrade``/``downgrade``) on ``connection``."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    getattr(command, action)(config, revision)


def verify_agent(store: LedgerStore, agent: str) -> ChainReport:
    """The chain report of ``agent`` with its causal edges, as the verify route builds it."""
    return verify_rows(store.chain_rows(agent), store.hasher, edges=store.edge_rows(agent))
