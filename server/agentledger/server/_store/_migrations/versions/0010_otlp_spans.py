"""OpenTelemetry span area: spans received on ``POST /v1/traces`` wait for their trace.

Revision ID: 0010
Revises: 0009

One row per received span (decoded JSON), keyed by trace and span id. Spans are written as
events once their trace's root span is there or they have waited past the pending bound, in
the transaction that flips ``materialised``; the rows are kept so late spans link against the
whole trace and a re-sent span is known. Design: ``docs/design/server-otlp.md``.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision: str | None = "0009"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    """Create ``otlp_spans`` and its pending index."""
    op.create_table(
        "otlp_spans",
        sa.Column("trace_id", sa.String(32), primary_key=True),
        sa.Column("span_id", sa.String(16), primary_key=True),
        sa.Column("parent_span_id", sa.String(16), nullable=True),
        sa.Column("received_at", sa.String(32), nullable=False),
        sa.Column("materialised", sa.Integer, nullable=False),
        sa.Column("span", sa.LargeBinary, nullable=False),
    )
    op.create_index("ix_otlp_spans_pending", "otlp_spans", ["materialised", "received_at"])


def downgrade() -> None:
    """Drop ``otlp_spans`` (spans still pending are lost; written events stay)."""
    op.drop_index("ix_otlp_spans_pending", table_name="otlp_spans")
    op.drop_table("otlp_spans")
