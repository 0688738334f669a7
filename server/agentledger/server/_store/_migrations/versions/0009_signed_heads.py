"""Signed chain heads: the ``signed_heads`` table.

Revision ID: 0009
Revises: 0008

Each row is an Ed25519 signature by the server's signing key over one agent's chain head
(``sequence_no``, ``chain_hash``) at ``signed_at``, naming the key by ``key_id``; nothing
else changes. Downgrade drops the table. Design: ``docs/design/evidence.md``.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision: str | None = "0008"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    """Create ``signed_heads``."""
    op.create_table(
        "signed_heads",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("agent", sa.String(255), nullable=False),
        sa.Column("sequence_no", sa.Integer, nullable=False),
        sa.Column("chain_hash", sa.String(64), nullable=False),
        sa.Column("signed_at", sa.String(32), nullable=False),
        sa.Column("key_id", sa.String(64), nullable=False),
        sa.Column("hmac_links", sa.Integer, nullable=False),
        sa.Column("signature", sa.String(128), nullable=False),
    )
    op.create_index("ix_signed_heads_agent_seq", "signed_heads", ["agent", "sequence_no"])


def downgrade() -> None:
    """Drop ``signed_heads``."""
    op.drop_index("ix_signed_heads_agent_seq", "signed_heads")
    op.drop_table("signed_heads")
