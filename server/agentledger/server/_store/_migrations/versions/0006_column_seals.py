"""Column seals: ``received_at`` and ``importance`` come under the chain.

Revision ID: 0006
Revises: 0005

Both columns are shown with every event but are not part of its record, so the checksum and
chain never covered them. Since this revision each event row carries a ``seal``: a link after
its ``chain_hash`` over ``[received_at, importance]``, keyed like the chain
(``ChainHasher.column_seal``). The rows already stored are sealed here, once, with the server's
chain hasher, which the store hands over with the connection; their records and links are
untouched, so old chains keep verifying. Downgrade drops the column. Design:
``docs/design/server-chain.md``.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op

revision = "0006"
down_revision: str | None = "0005"
branch_labels: str | None = None
depends_on: str | None = None

#: Rows sealed per statement (bounded memory on a large ledger).
_BATCH = 5_000


def upgrade() -> None:
    """Add ``events.seal`` and seal every stored row."""
    op.add_column("events", sa.Column("seal", sa.String(64), nullable=True))
    bind = op.get_bind()
    select = sa.text(
        "SELECT id, chain_hash, received_at, importance FROM events "
        "WHERE id > :after ORDER BY id LIMIT :n"
    )
    update = sa.text("UPDATE events SET seal = :seal WHERE id = :row_id")
    hasher = context.config.attributes.get("chain_hasher")
    after = 0
    while rows := bind.execute(select, {"after": after, "n": _BATCH}).all():
        if hasher is None:  # pragma: no cover - the stores always hand it over
            raise RuntimeError("migration 0006 needs the server's chain hasher (open the store)")
        seals = [
            {"row_id": row[0], "seal": hasher.column_seal(row[1], row[2], row[3])} for row in rows
        ]
        bind.execute(update, seals)
        after = rows[-1][0]


def downgrade() -> None:
    """Drop the seals (rows as revision 0005 wrote them)."""
    op.execute("ALTER TABLE events DROP COLUMN seal")
