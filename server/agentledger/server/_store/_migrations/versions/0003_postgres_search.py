"""PostgreSQL full-text search: a generated ``tsvector`` column with a GIN index.

Revision ID: 0003
Revises: 0002

PostgreSQL only (a no-op on SQLite, whose FTS5 index comes with revision 0002):

* ``agentledger_search_doc(event, record)``: the searchable text of a row as a ``tsvector``
  (``simple`` configuration: lower-cased words, no stemming, no stop words): the event type
  plus every string value under ``data`` (``jsonb_path_query(..., 'strict $.**')``), the same
  text the SQLite index holds, split into words at every character that is not a letter or
  digit first, as SQLite's ``unicode61`` tokenizer does (PostgreSQL's parser would keep
  ``a@example.com`` or ``ord_12`` whole, so ``example`` would not find them); ``NULL`` when
  ``record`` is (a forget tombstone).
* ``events.search``: that vector as a ``GENERATED ALWAYS ... STORED`` column, computed by the
  database in the insert itself (no catch-up indexer), and cleared by the forget tombstone's
  ``UPDATE`` in the same transaction.
* ``ix_events_search``: GIN over it (``fastupdate`` on, the default, so inserts append to the
  pending list); prefix queries ``word:*`` use it.
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision: str | None = "0002"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    """Add the ``search`` column, its function and its GIN index (PostgreSQL only)."""
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(
        "CREATE FUNCTION agentledger_search_doc(event varchar, record bytea) RETURNS tsvector "
        "LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ "
        "SELECT CASE WHEN record IS NOT NULL THEN to_tsvector('simple'::regconfig, "
        "regexp_replace(coalesce(event, '') || ' ' || coalesce(("
        "SELECT string_agg(v #>> '{}', ' ') "
        "FROM jsonb_path_query(agentledger_record_data(record), 'strict $.**') AS v "
        "WHERE jsonb_typeof(v) = 'string'), ''), '[^[:alnum:]]+', ' ', 'g')) END $$"
    )
    op.execute(
        "ALTER TABLE events ADD COLUMN search tsvector "
        "GENERATED ALWAYS AS (agentledger_search_doc(event, record)) STORED"
    )
    op.execute("CREATE INDEX ix_events_search ON events USING gin (search)")


def downgrade() -> None:
    """Drop the ``search`` column, index and function (PostgreSQL only)."""
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP INDEX IF EXISTS ix_events_search")
    op.execute("ALTER TABLE events DROP COLUMN IF EXISTS search")
    op.execute("DROP FUNCTION IF EXISTS agentledger_search_doc(varchar, bytea)")
