"""SQLite full-text search: a contentless FTS5 table filled in batches by a background
indexer, ``bm25`` ranking, and erasure that leaves no erased term in the file.

Design notes (index, ranking, erasure): ``docs/design/server-search.md``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from sqlalchemy import (
    ColumnElement,
    Connection,
    Engine,
    LargeBinary,
    func,
    literal,
    select,
    text,
)
from sqlalchemy.exc import DBAPIError, OperationalError

from agentledger.server._search.base import SearchBackend
from agentledger.server._search.sqlite_rank import scoped_bm25
from agentledger.server._tables import events

__all__ = ["TEXT_OF", "SQLiteSearch", "fts5_match"]

logger = logging.getLogger("agentledger.server.query")

#: The indexed text of a row; must equal the expression of migration 0002's erase trigger
#: (FTS5 ``'delete'`` of a contentless table needs the very text that was indexed).
TEXT_OF = (
    "{row}.event || ' ' || coalesce((SELECT group_concat(value, ' ') FROM "
    "json_tree(CAST({row}.record AS TEXT), '$.data') WHERE type = 'text'), '')"
)

_ASCII_WORD = re.compile(r"[A-Za-z0-9]+")


def fts5_match(words: list[str]) -> str:
    """An FTS5 ``MATCH`` expression: ``"w1"* OR "w2"*``: each word quoted and prefix-matched
    (``"refund"*`` finds ``refunded``), any word may match, and BM25 ranks rows matching more
    (and rarer) words first. Words hold no quote characters (see ``query_words``)."""
    return " OR ".join(f'"{word}"*' for word in words)


class SQLiteSearch(SearchBackend):
    """FTS5 search over ``events_fts``; ``engine`` is the store's (for the WAL checkpoint)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def keyword_search(
        self,
        conn: Connection,
        words: Sequence[str],
        where: Sequence[ColumnElement[bool]],
        limit: int,
    ) -> list[tuple[int, float]]:
        mark = self._indexed_through(conn)

        def run(ranked: list[str]) -> list[tuple[int, float]]:
            return scoped_bm25(
                conn, ranked, fts5_match(ranked), where, limit, TEXT_OF, indexed_through=mark
            )

        try:
            return run(list(words))
        except OperationalError as error:
            # A word the tokenizer splits in two is a phrase; should FTS5 refuse it
            # (letters newer than the tokenizer's Unicode tables); search ASCII pieces instead.
            ascii_words = [w for word in words for w in _ASCII_WORD.findall(word)]
            logger.info("FTS5 refused %r (%s); searching %r", words, error, ascii_words)
            return run(ascii_words) if ascii_words else []

    @staticmethod
    def _indexed_through(conn: Connection) -> int:
        return int(
            conn.execute(
                text("SELECT indexed_through FROM events_fts_state WHERE id = 1")
            ).scalar_one()
        )

    def index_catch_up(self, conn: Connection, max_rows: int) -> int:
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

    def index_pending(self, conn: Connection, agents: Sequence[str] | None = None) -> int:
        mark = self._indexed_through(conn)
        query = select(func.count()).select_from(events).where(events.c.id > mark)
        if agents is not None:
            query = query.where(events.c.agent.in_(agents))
        return int(conn.execute(query).scalar_one())

    def record_contains(self, needle: bytes) -> ColumnElement[bool] | None:
        return func.instr(events.c.record, literal(needle, LargeBinary)) > 0

    def erase_prepare(self, conn: Connection) -> None:
        conn.exec_driver_sql("PRAGMA secure_delete=ON")

    def erase_in_transaction(self, conn: Connection, ids: Sequence[int]) -> int:
        mark = self._indexed_through(conn)
        indexed = sum(1 for i in ids if i <= mark)
        if indexed:
            conn.exec_driver_sql("INSERT INTO events_fts(events_fts) VALUES ('optimize')")
        return indexed

    def _reindex(self, conn: Connection, ids: Sequence[int], delete: bool) -> None:
        mark = self._indexed_through(conn)
        indexed = [i for i in ids if i <= mark]
        head = "INSERT INTO events_fts(events_fts, rowid, body) SELECT 'delete', e.id, "
        if not delete:
            head = "INSERT INTO events_fts(rowid, body) SELECT e.id, "
        for start in range(0, len(indexed), 500):
            chunk = ",".join(str(int(i)) for i in indexed[start : start + 500])
            conn.exec_driver_sql(
                f"{head}{TEXT_OF.format(row='e')} FROM events AS e WHERE e.id IN ({chunk})"
            )

    def reindex_prepare(self, conn: Connection, ids: Sequence[int]) -> None:
        self._reindex(conn, ids, delete=True)

    def reindex_finish(self, conn: Connection, ids: Sequence[int]) -> None:
        self._reindex(conn, ids, delete=False)

    def erase_finish(self) -> None:
        try:
            with self.engine.connect() as conn:
                conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        except DBAPIError as error:  # busy readers: the next checkpoint moves the pages
            logger.warning("checkpoint after forget did not finish: %s", error)
