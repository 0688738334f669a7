"""Forget marks: every tombstone written before this revision gets its erasure mark.

Revision ID: 0005
Revises: 0004

Since this revision forget writes a mark into an erased event's ``fingerprint`` (a link after
its ``chain_hash`` over the columns the tombstone keeps, keyed like the chain), so
verification tells a real forget from a record set to NULL by hand. Tombstones already stored
(``record`` and ``fingerprint`` NULL) are marked here, once, with the server's chain hasher,
which the store hands over with the connection. Downgrade clears the marks again. Design:
``docs/design/server-chain.md``.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op

revision = "0005"
down_revision: str | None = "0004"
branch_labels: str | None = None
depends_on: str | None = None

_KEPT = "event_id, agent, sequence_no, timestamp, event, parent_id, session_id, supersedes"


def upgrade() -> None:
    """Mark the stored tombstones (``record`` and ``fingerprint`` NULL)."""
    bind = op.get_bind()
    rows = bind.execute(
        sa.text(
            f"SELECT id, chain_hash, {_KEPT} FROM events "
            "WHERE record IS NULL AND fingerprint IS NULL"
        )
    ).all()
    if not rows:
        return
    hasher = context.config.attributes.get("chain_hasher")
    if hasher is None:  # pragma: no cover - the stores always hand it over
        raise RuntimeError("migration 0005 needs the server's chain hasher (open the store)")
    marks = [
        {"row_id": row[0], "mark": hasher.erasure_mark(row[1], tuple(row[2:]))} for row in rows
    ]
    bind.execute(sa.text("UPDATE events SET fingerprint = :mark WHERE id = :row_id"), marks)


def downgrade() -> None:
    """Clear the marks (tombstones as revision 0004 wrote them)."""
    op.execute("UPDATE events SET fingerprint = NULL WHERE record IS NULL")
