"""Retention: per-agent policies and the erasure log.

Revision ID: 0008
Revises: 0007

``retention_policies`` holds how long each agent's event content is kept (``*`` is the
default); ``erasure_log`` one row per sweep batch that erased events. The sweep itself reuses
forget's tombstones. Design: ``docs/design/retention.md``.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision: str | None = "0007"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    """Create the two tables."""
    op.create_table(
        "retention_policies",
        sa.Column("agent", sa.String(255), primary_key=True),
        sa.Column("keep_seconds", sa.BigInteger, nullable=False),
        sa.Column("updated_at", sa.String(32), nullable=False),
    )
    op.create_table(
        "erasure_log",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(32), nullable=False),
        sa.Column("erased_at", sa.String(32), nullable=False),
        sa.Column("trigger", sa.String(16), nullable=False),
        sa.Column("agent", sa.String(255), nullable=False),
        sa.Column("rule", sa.String(16), nullable=False),
        sa.Column("keep_seconds", sa.BigInteger, nullable=False),
        sa.Column("cutoff", sa.String(32), nullable=False),
        sa.Column("erased", sa.Integer, nullable=False),
        sa.Column("oldest", sa.String(32), nullable=False),
        sa.Column("newest", sa.String(32), nullable=False),
        sa.Column("sessions", sa.Text, nullable=False),
    )
    op.create_index("ix_erasure_log_agent", "erasure_log", ["agent", "id"])
    op.create_index("ix_erasure_log_run", "erasure_log", ["run_id"])


def downgrade() -> None:
    """Drop them."""
    op.drop_table("erasure_log")
    op.drop_table("retention_policies")
