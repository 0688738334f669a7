"""Initial schema: events, agents, api_keys, ledger_meta.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    """Create the tables of ``_tables.py`` as of revision 0001."""
    op.create_table(
        "events",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("event_id", sa.String(36), nullable=False, unique=True),
        sa.Column("agent", sa.String(255), nullable=False),
        sa.Column("sequence_no", sa.Integer, nullable=False),
        sa.Column("timestamp", sa.String(32), nullable=False),
        sa.Column("received_at", sa.String(32), nullable=False),
        sa.Column("event", sa.String(255), nullable=True),
        sa.Column("parent_id", sa.String(36), nullable=True),
        sa.Column("session_id", sa.String(255), nullable=True),
        sa.Column("supersedes", sa.String(36), nullable=True),
        sa.Column("importance", sa.Float, nullable=True),
        sa.Column("idempotency_key", sa.String(255), nullable=True),
        sa.Column("fingerprint", sa.String(64), nullable=True),
        sa.Column("record", sa.LargeBinary, nullable=True),
        sa.Column("checksum", sa.String(64), nullable=True),
        sa.Column("chain_hash", sa.String(64), nullable=False),
        sa.UniqueConstraint("agent", "sequence_no", name="uq_events_agent_seq"),
        sa.UniqueConstraint("agent", "idempotency_key", name="uq_events_agent_idem"),
    )
    op.create_index("ix_events_parent", "events", ["parent_id"])
    op.create_index("ix_events_agent_ts", "events", ["agent", "timestamp", "sequence_no"])
    op.create_index("ix_events_session_ts", "events", ["session_id", "timestamp"])
    op.create_table(
        "agents",
        sa.Column("agent", sa.String(255), primary_key=True),
        sa.Column("last_seq", sa.Integer, nullable=False),
        sa.Column("last_hash", sa.String(64), nullable=False),
        sa.Column("event_count", sa.Integer, nullable=False),
        sa.Column("first_seen", sa.String(32), nullable=False),
        sa.Column("last_seen", sa.String(32), nullable=False),
    )
    op.create_table(
        "api_keys",
        sa.Column("key_id", sa.String(64), primary_key=True),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("key_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("prefix", sa.String(16), nullable=False),
        sa.Column("agent", sa.String(255), nullable=True),
        sa.Column("scope", sa.String(16), nullable=False),
        sa.Column("created_at", sa.String(32), nullable=False),
        sa.Column("expires_at", sa.String(32), nullable=True),
        sa.Column("revoked_at", sa.String(32), nullable=True),
    )
    op.create_table(
        "ledger_meta",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
    )
    if op.get_context().dialect.name == "postgresql":
        _postgresql_upgrade()


#: Text columns that are compared or ordered: byte order ("C"), as SQLite compares them.
_PG_C_COLUMNS = (
    ("events", "event_id", 36),
    ("events", "agent", 255),
    ("events", "timestamp", 32),
    ("events", "received_at", 32),
    ("events", "event", 255),
    ("events", "parent_id", 36),
    ("events", "session_id", 255),
    ("events", "supersedes", 36),
    ("events", "idempotency_key", 255),
    ("agents", "agent", 255),
    ("agents", "first_seen", 32),
    ("agents", "last_seen", 32),
    ("api_keys", "created_at", 32),
    ("api_keys", "expires_at", 32),
)


def _postgresql_upgrade() -> None:
    """PostgreSQL only: byte-order collation, 64-bit row ids, ``data`` as generated jsonb.

    ``record`` (bytea) stays the canonical JSON the chain covers, byte for byte; ``data`` is a
    jsonb copy of its ``data`` member for SQL queries, computed by the database on insert and
    ``NULL`` when ``record`` is (forget tombstones) or holds an escaped NUL, which jsonb cannot
    store.
    """
    for table, column, length in _PG_C_COLUMNS:
        op.execute(
            f'ALTER TABLE {table} ALTER COLUMN "{column}" TYPE varchar({length}) COLLATE "C"'
        )
    op.execute("ALTER TABLE events ALTER COLUMN id TYPE bigint")
    op.execute("ALTER SEQUENCE events_id_seq AS bigint")
    op.execute(
        "CREATE FUNCTION agentledger_record_data(record bytea) RETURNS jsonb "
        "LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ "
        "SELECT CASE WHEN position('\\x5c7530303030'::bytea IN record) = 0 "
        "THEN convert_from(record, 'UTF8')::jsonb -> 'data' END $$"
    )
    op.execute(
        "ALTER TABLE events ADD COLUMN data jsonb "
        "GENERATED ALWAYS AS (agentledger_record_data(record)) STORED"
    )


def downgrade() -> None:
    """Drop everything revision 0001 created."""
    op.drop_table("ledger_meta")
    op.drop_table("api_keys")
    op.drop_table("agents")
    op.drop_index("ix_events_session_ts", "events")
    op.drop_index("ix_events_agent_ts", "events")
    op.drop_index("ix_events_parent", "events")
    op.drop_table("events")
    if op.get_context().dialect.name == "postgresql":
        op.execute("DROP FUNCTION IF EXISTS agentledger_record_data(bytea)")
