"""Query features: full-text index (SQLite FTS5), embeddings, supersedes index.

Revision ID: 0002
Revises: 0001

``ix_events_supersedes`` and ``event_embeddings`` on every dialect; on SQLite the contentless
``events_fts`` table, its watermark ``events_fts_state`` and the ``events_fts_erase`` trigger
that removes a forgotten row from the index in the forget transaction. The indexed text is
:data:`agentledger.server._search.sqlite.TEXT_OF`. Design: ``docs/design/server-search.md``.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision: str | None = "0001"
branch_labels: str | None = None
depends_on: str | None = None

#: The indexed text of a row: event type, then the string values under ``data``.
TEXT_OF = (
    "{row}.event || ' ' || coalesce((SELECT group_concat(value, ' ') FROM "
    "json_tree(CAST({row}.record AS TEXT), '$.data') WHERE type = 'text'), '')"
)

SQLITE_FTS = [
    "CREATE VIRTUAL TABLE events_fts USING fts5(body, content='', detail=none, "
    "tokenize='porter unicode61 remove_diacritics 2')",
    "CREATE TABLE events_fts_state (id INTEGER PRIMARY KEY CHECK (id = 1), "
    "indexed_through INTEGER NOT NULL)",
    "INSERT INTO events_fts_state (id, indexed_through) VALUES (1, 0)",
    "CREATE TRIGGER events_fts_erase AFTER UPDATE OF record ON events "
    "WHEN old.record IS NOT NULL AND new.record IS NULL "
    "AND old.id <= (SELECT indexed_through FROM events_fts_state WHERE id = 1) BEGIN "
    "INSERT INTO events_fts(events_fts, rowid, body) "
    f"VALUES ('delete', old.id, {TEXT_OF.format(row='old')}); END",
]


def upgrade() -> None:
    """Create the supersedes index, the embeddings table and (SQLite) the FTS5 index."""
    op.create_index("ix_events_supersedes", "events", ["supersedes"])
    op.create_table(
        "event_embeddings",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("agent", sa.String(255), nullable=False),
        sa.Column("model", sa.String(255), nullable=False),
        sa.Column("dim", sa.Integer, nullable=False),
        sa.Column("vector", sa.LargeBinary, nullable=False),
    )
    op.create_index("ix_event_embeddings_agent", "event_embeddings", ["agent"])
    if op.get_bind().dialect.name == "sqlite":
        for statement in SQLITE_FTS:
            op.execute(statement)


def downgrade() -> None:
    """Drop what revision 0002 created."""
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TRIGGER IF EXISTS events_fts_erase")
        op.execute("DROP TABLE IF EXISTS events_fts")
        op.execute("DROP TABLE IF EXISTS events_fts_state")
    op.drop_index("ix_event_embeddings_agent", "event_embeddings")
    op.drop_table("event_embeddings")
    op.drop_index("ix_events_supersedes", "events")
