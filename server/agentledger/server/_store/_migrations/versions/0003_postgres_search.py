"""PostgreSQL full-text search: a ``tsvector`` column with a GIN index.

Revision ID: 0003
Revises: 0002

PostgreSQL only (a no-op on SQLite): ``events.search``, written by the store with each row,
and ``ix_events_search`` (GIN); rows already stored are backfilled by an SQL expression of the
same words (without the diacritics folding). Design: ``docs/design/server-search.md``.
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision: str | None = "0002"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    """Add the ``search`` column and its GIN index (PostgreSQL only)."""
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("ALTER TABLE events ADD COLUMN search tsvector")
    op.execute(
        "UPDATE events SET search = to_tsvector('simple'::regconfig, regexp_replace("
        "coalesce(event, '') || ' ' || coalesce((SELECT string_agg(v #>> '{}', ' ') "
        "FROM jsonb_path_query(data, 'strict $.**') AS v WHERE jsonb_typeof(v) = 'string'), ''), "
        "'[^[:alnum:]]+', ' ', 'g')) WHERE record IS NOT NULL"
    )
    op.execute("CREATE INDEX ix_events_search ON events USING gin (search)")


def downgrade() -> None:
    """Drop the ``search`` column and its index (PostgreSQL only)."""
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP INDEX IF EXISTS ix_events_search")
    op.execute("ALTER TABLE events DROP COLUMN IF EXISTS search")
