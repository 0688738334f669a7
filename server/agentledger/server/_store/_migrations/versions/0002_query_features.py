"""Query features (issue 3): full-text index, embeddings, supersedes index.

Revision ID: 0002
Revises: 0001

* ``ix_events_supersedes``: hides superseded events from search and memory context by an
  index look-up (every dialect).
* ``event_embeddings``: one vector per event (float32 little-endian bytes), written by the
  background embedding worker; forget deletes the rows in its own transaction (every dialect).
* SQLite only: ``events_fts``, a contentless FTS5 table (``content=''``: the text is not stored
  twice, only the index; ``detail=none``: no positions; Porter stemming over ``unicode61``) whose
  rowid is ``events.id``, filled in batches by the background indexer
  (``agentledger.server._search.sqlite``) up to the watermark
  ``events_fts_state.indexed_through``, so ingest never waits for it. The trigger
  ``events_fts_erase`` (after an update of ``record`` to NULL, i.e. a forget tombstone, of a row
  already indexed) removes the row with FTS5's ``'delete'`` command fed the same text computed
  from the old record, so a forget and its index deletion commit or roll back together. The text
  of a row is the event type and every string value under ``data`` (``json_tree`` order):
  :data:`TEXT_OF`.

  The PostgreSQL store adds its own ``tsvector`` index in a later revision (see
  ``agentledger.server._search.base`` for what a search backend provides).
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
