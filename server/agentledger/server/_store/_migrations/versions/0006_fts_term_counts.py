"""SQLite full-text index with term counts, so ``bm25`` ranks.

Revision ID: 0006
Revises: 0005

Revision 0002 created ``events_fts`` with ``detail=none``: the smallest index, but FTS5's
``bm25()`` then has no term frequencies or document lengths on a contentless table and scores
every row 0, so results came back in insertion order. This revision recreates the table with
``detail=full`` and the same tokenizer, recreates its erase trigger, and sets the indexer's
watermark back to 0: the server's background indexer fills the new index in batches (searches
meanwhile see the rows indexed so far). PostgreSQL is unchanged. Design:
``docs/design/server-search.md``.
"""

from __future__ import annotations

from alembic import op

revision = "0006"
down_revision: str | None = "0005"
branch_labels: str | None = None
depends_on: str | None = None

#: The indexed text of a row (as in revision 0002): event type, then the strings of ``data``.
TEXT_OF = (
    "{row}.event || ' ' || coalesce((SELECT group_concat(value, ' ') FROM "
    "json_tree(CAST({row}.record AS TEXT), '$.data') WHERE type = 'text'), '')"
)


def _recreate(detail: str) -> None:
    op.execute("DROP TRIGGER IF EXISTS events_fts_erase")
    op.execute("DROP TABLE IF EXISTS events_fts")
    op.execute(
        f"CREATE VIRTUAL TABLE events_fts USING fts5(body, content='', detail={detail}, "
        "tokenize='porter unicode61 remove_diacritics 2')"
    )
    op.execute("UPDATE events_fts_state SET indexed_through = 0 WHERE id = 1")
    op.execute(
        "CREATE TRIGGER events_fts_erase AFTER UPDATE OF record ON events "
        "WHEN old.record IS NOT NULL AND new.record IS NULL "
        "AND old.id <= (SELECT indexed_through FROM events_fts_state WHERE id = 1) BEGIN "
        "INSERT INTO events_fts(events_fts, rowid, body) "
        f"VALUES ('delete', old.id, {TEXT_OF.format(row='old')}); END"
    )


def upgrade() -> None:
    """Recreate ``events_fts`` with ``detail=full`` (SQLite only); the indexer refills it."""
    if op.get_bind().dialect.name == "sqlite":
        _recreate("full")


def downgrade() -> None:
    """Back to revision 0002's ``detail=none`` index (refilled the same way)."""
    if op.get_bind().dialect.name == "sqlite":
        _recreate("none")
