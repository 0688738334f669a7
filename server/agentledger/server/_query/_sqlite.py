"""The SQLite pieces of the query features: FTS5 search, batch indexer, secure erasure.

* **Index**: ``events_fts`` is a contentless FTS5 table (``content=''``, ``detail=none``: no
  positions, as no phrase or NEAR query is ever run, which makes indexing ~40 % cheaper; tokenizer
  ``porter unicode61 remove_diacritics 2``: English stems, so ``refunded`` and ``refunds`` find
  ``refund`` and the other way round) keyed by ``events.id``. Rows are added in batches by
  :meth:`SQLiteQueryHooks._index_catch_up` up to the watermark ``events_fts_state`` (FTS5 costs
  about 3x less per row in batches of thousands than row by row), and ingest never waits for it:
  the background indexer (:mod:`agentledger.server._query.workers`) waits while writes run
  (unless 100,000 rows are pending) and drains in slices of 10,000 rows once they pause, and every
  search catches up first, so a search sees the writes that completed before it.
* **Search**: ``events_fts MATCH '"w1"* OR "w2"*'`` ranked by ``bm25()`` (lower is better;
  reported negated so higher is better): the best ``4 * limit + 20`` rows of the index alone
  first, then the filters (agent, session, types, time, superseded) on those; the full join
  only when the filters left fewer than ``limit``.
* **Erasure**: ``secure_delete`` overwrites freed content with zeros (set on every connection
  by the store, and again here); the migration's trigger removes an erased row from the index
  inside the forget transaction; ``'optimize'`` then merges the FTS5 segments so the erased
  terms are gone from the index pages, not only marked deleted; after COMMIT a
  ``wal_checkpoint(TRUNCATE)`` moves the pages into the database file and empties the WAL.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    LargeBinary,
    column,
    func,
    literal,
    literal_column,
    select,
    table,
    text,
)
from sqlalchemy.exc import DBAPIError, OperationalError

from agentledger.server._query._store import QueryStoreMixin
from agentledger.server._query.text import fts5_match
from agentledger.server._store._tables import events

__all__ = ["TEXT_OF", "SQLiteQueryHooks"]

logger = logging.getLogger("agentledger.server.query")

#: The indexed text of a row; must equal the expression of migration 0002's erase trigger
#: (FTS5 ``'delete'`` of a contentless table needs the very text that was indexed).
TEXT_OF = (
    "{row}.event || ' ' || coalesce((SELECT group_concat(value, ' ') FROM "
    "json_tree(CAST({row}.record AS TEXT), '$.data') WHERE type = 'text'), '')"
)

_fts = table("events_fts", column("rowid"))
_ASCII_WORD = re.compile(r"[A-Za-z0-9]+")
_MATCH: ColumnElement[Any] = literal_column("events_fts")
_BM25: ColumnElement[Any] = literal_column("bm25(events_fts)")


class SQLiteQueryHooks(QueryStoreMixin):
    """SQLite overrides of the :class:`QueryStoreMixin` hooks."""

    def _keyword_search(
        self,
        conn: Connection,
        words: Sequence[str],
        where: Sequence[ColumnElement[bool]],
        limit: int,
    ) -> list[tuple[int, float]]:
        def run(match: str) -> list[tuple[int, float]]:
            # Phase 1: the best rows of the index alone (no join per matching row), joined to
            # ``events`` by primary key and filtered. Phase 2, only when the filters dropped
            # too many of them: the full join, ranked the same way.
            pool = limit * 4 + 20
            best = (
                select(_fts.c.rowid.label("rid"), _BM25.label("score"))
                .select_from(_fts)
                .where(_MATCH.op("MATCH")(match))
                .order_by(_BM25)
                .limit(pool)
                .subquery("best")
            )
            rows = conn.execute(
                select(best.c.rid, best.c.score)
                .select_from(best.join(events, events.c.id == best.c.rid))
                .where(*where)
                .order_by(best.c.score)
                .limit(limit)
            ).all()
            if len(rows) == limit:
                return [(r[0], round(-float(r[1]), 6)) for r in rows]
            counted = conn.execute(
                select(func.count()).select_from(
                    select(_fts.c.rowid).where(_MATCH.op("MATCH")(match)).limit(pool).subquery()
                )
            ).scalar_one()
            if counted < pool:  # every match was in the pool: nothing more to find
                return [(r[0], round(-float(r[1]), 6)) for r in rows]
            query = (
                select(events.c.id, _BM25)
                .select_from(_fts.join(events, events.c.id == _fts.c.rowid))
                .where(_MATCH.op("MATCH")(match), *where)
                .order_by(_BM25)
                .limit(limit)
            )
            return [(row[0], round(-float(row[1]), 6)) for row in conn.execute(query)]

        try:
            return run(fts5_match(list(words)))
        except OperationalError as error:
            # A word the tokenizer splits in two is a phrase, which ``detail=none`` refuses
            # (letters newer than the tokenizer's Unicode tables); search ASCII pieces instead.
            ascii_words = [w for word in words for w in _ASCII_WORD.findall(word)]
            logger.info("FTS5 refused %r (%s); searching %r", words, error, ascii_words)
            return run(fts5_match(ascii_words)) if ascii_words else []

    @staticmethod
    def _indexed_through(conn: Connection) -> int:
        return int(
            conn.execute(
                text("SELECT indexed_through FROM events_fts_state WHERE id = 1")
            ).scalar_one()
        )

    def _index_catch_up(self, conn: Connection, max_rows: int) -> int:
        mark = self._indexed_through(conn)
        top = conn.execute(select(func.max(events.c.id))).scalar() or 0
        upto = min(int(top), mark + max_rows)
        if upto <= mark:
            return 0
        conn.execute(
            text(
                "INSERT INTO events_fts(rowid, body) SELECT e.id, "
                f"{TEXT_OF.format(row='e')} FROM events AS e "
                "WHERE e.id > :mark AND e.id <= :upto AND e.record IS NOT NULL"
            ),
            {"mark": mark, "upto": upto},
        )
        conn.execute(
            text("UPDATE events_fts_state SET indexed_through = :upto WHERE id = 1"),
            {"upto": upto},
        )
        return upto - mark

    def _writer_busy(self) -> bool:
        lock: threading.Lock | None = getattr(self, "_write_lock", None)
        return lock is not None and lock.locked()

    def _index_pending(self, conn: Connection) -> int:
        mark = self._indexed_through(conn)
        return int(
            conn.execute(
                select(func.count()).select_from(events).where(events.c.id > mark)
            ).scalar_one()
        )

    def _record_contains(self, needle: bytes) -> ColumnElement[bool] | None:
        return func.instr(events.c.record, literal(needle, LargeBinary)) > 0

    def _erase_prepare(self, conn: Connection) -> None:
        conn.exec_driver_sql("PRAGMA secure_delete=ON")

    def _erase_in_transaction(self, conn: Connection, ids: Sequence[int]) -> int:
        mark = self._indexed_through(conn)
        indexed = sum(1 for i in ids if i <= mark)
        if indexed:
            conn.exec_driver_sql("INSERT INTO events_fts(events_fts) VALUES ('optimize')")
        return indexed

    def _erase_finish(self) -> None:
        try:
            with self.engine.connect() as conn:
                conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        except DBAPIError as error:  # busy readers: the next checkpoint moves the pages
            logger.warning("checkpoint after forget did not finish: %s", error)
