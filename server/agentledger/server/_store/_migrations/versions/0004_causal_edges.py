"""Causal edges: one row per cause of an event, for ``why()`` and ``impact()`` over causes.

Revision ID: 0004
Revises: 0003

Creates ``event_causes`` (primary key ``(effect_id, cause_id)``, index on ``cause_id``) and
fills it from the ``parent_id`` of every stored event: a closing event's parent edge is
labelled ``closes``, any other ``cause``. On PostgreSQL the columns use the byte-order
collation of the events' id columns, so joins between the two use the indexes. Design:
``docs/pages/causal-edges.md``.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision: str | None = "0003"
branch_labels: str | None = None
depends_on: str | None = None

#: The closing event types at the time of this revision (``vocabulary.CLOSING_EVENTS``).
_CLOSING = (
    "session_end",
    "llm_end",
    "llm_error",
    "tool_result",
    "tool_error",
    "step_end",
    "step_error",
)


def upgrade() -> None:
    """Create ``event_causes`` and backfill it from ``events.parent_id``."""
    op.create_table(
        "event_causes",
        sa.Column("effect_id", sa.String(36), primary_key=True),
        sa.Column("cause_id", sa.String(36), primary_key=True),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("agent", sa.String(255), nullable=False),
        sqlite_with_rowid=False,
    )
    if op.get_bind().dialect.name == "postgresql":
        # byte order, as the events' id columns: a join on ids may then use either index
        for column, length in (("effect_id", 36), ("cause_id", 36), ("kind", 32), ("agent", 255)):
            op.execute(
                f'ALTER TABLE event_causes ALTER COLUMN "{column}" '
                f'TYPE varchar({length}) COLLATE "C"'
            )
    closing = ", ".join(f"'{name}'" for name in _CLOSING)
    op.execute(
        "INSERT INTO event_causes (effect_id, cause_id, kind, agent) "
        f"SELECT event_id, parent_id, CASE WHEN event IN ({closing}) THEN 'closes' "
        "ELSE 'cause' END, agent FROM events WHERE parent_id IS NOT NULL"
    )
    op.create_index("ix_event_causes_cause", "event_causes", ["cause_id"])


def downgrade() -> None:
    """Drop ``event_causes``."""
    op.drop_index("ix_event_causes_cause", "event_causes")
    op.drop_table("event_causes")
