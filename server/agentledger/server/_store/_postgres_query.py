"""The PostgreSQL pieces of the query features (hooks of
:class:`~agentledger.server._query._store.QueryStoreMixin`).

* **Search**: ``events.search`` (migration 0003) is a generated ``tsvector`` of the event type
  and the string values under ``data``, GIN-indexed. A keyword search is
  ``search @@ to_tsquery('simple', 'w1:* | w2:*')`` (any word may match, prefixes count:
  ``refund`` finds ``refunded``), ranked by ``ts_rank`` (higher is better). Words come from
  :func:`~agentledger.server._query.text.query_words` (letters and digits only), so no tsquery
  operator in user text is ever interpreted.
* **Index catch-up**: none; the database computes the vector inside the insert.
* **Forget**: the prefilter is ``position(needle IN record) > 0`` on the canonical bytes. The
  tombstone ``UPDATE`` clears ``record``, and with it the generated ``data`` and ``search``
  columns, in the forget transaction. After ``COMMIT`` a ``VACUUM`` of ``events`` and
  ``event_embeddings`` removes the old row versions so the erased content is no longer
  readable through the table or its indexes; bytes left in free space, WAL segments and
  backups follow PostgreSQL's own retention (run ``VACUUM FULL`` and rotate WAL and backups
  where erasure must reach the disk blocks).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Integer,
    LargeBinary,
    func,
    literal,
    literal_column,
    select,
)
from sqlalchemy.exc import DBAPIError

from agentledger.server._query._store import QueryStoreMixin
from agentledger.server._store._tables import events

__all__ = ["PostgresQueryHooks", "tsquery_text"]

logger = logging.getLogger("agentledger.server.query")

_SEARCH: ColumnElement[Any] = literal_column("events.search")
_SIMPLE: ColumnElement[Any] = literal_column("'simple'::regconfig")


def tsquery_text(words: Sequence[str]) -> str:
    """``w1:* | w2:*`` for ``to_tsquery`` (words hold letters and digits only)."""
    return " | ".join(f"{word}:*" for word in words)


class PostgresQueryHooks(QueryStoreMixin):
    """PostgreSQL overrides of the :class:`QueryStoreMixin` hooks."""

    def _keyword_search(
        self,
        conn: Connection,
        words: Sequence[str],
        where: Sequence[ColumnElement[bool]],
        limit: int,
    ) -> list[tuple[int, float]]:
        if not words:
            return []
        tsquery = func.to_tsquery(_SIMPLE, literal(tsquery_text(words)))
        rank = func.ts_rank(_SEARCH, tsquery)
        query = (
            select(events.c.id, rank)
            .where(_SEARCH.op("@@")(tsquery), *where)
            .order_by(rank.desc(), events.c.id.desc())
            .limit(limit)
        )
        return [(int(row[0]), round(float(row[1]), 6)) for row in conn.execute(query)]

    def _record_contains(self, needle: bytes) -> ColumnElement[bool] | None:
        found = func.position(literal(needle, LargeBinary).op("IN")(events.c.record))
        return found.cast(Integer) > 0

    def _erase_finish(self) -> None:
        try:
            with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.exec_driver_sql("VACUUM (SKIP_LOCKED) events, event_embeddings")
        except DBAPIError as error:  # the next (auto)vacuum removes the old row versions
            logger.warning("VACUUM after forget did not finish: %s", error)
