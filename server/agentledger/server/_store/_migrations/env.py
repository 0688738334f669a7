"""Alembic environment: migrations run on the connection the store hands over."""

from __future__ import annotations

from alembic import context

from agentledger.server._tables import metadata

connection = context.config.attributes.get("connection")
if connection is None:  # pragma: no cover - only reached through the alembic CLI
    raise RuntimeError("agentledger migrations run from the server (open_store), not the CLI")

context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
