"""The PostgreSQL pieces of the query features (hooks of
:class:`~agentledger.server._query._store.QueryStoreMixin`).

* **Index**: ``events.search`` (migration 0003) is a ``tsvector`` of the event type and the
  string values under ``data``, GIN-indexed. :func:`search_vector` computes it in Python while
  the store writes the row (it rides along in the ``COPY``): words are runs of letters and
  digits, lower-cased, diacritics removed, as SQLite's ``unicode61 remove_diacritics 2``
  tokenizer splits them, with their positions. Computing it inside PostgreSQL (JSON parse,
  path query, regex) cost about 45 us of database CPU per event; here it costs a few us.
* **Search**: ``search @@ to_tsquery('simple', 'w1:* | w2:*')`` (any word may match, prefixes
  count: ``refund`` finds ``refunded``), ranked by ``ts_rank`` (higher is better). Words come
  from :func:`~agentledger.server._query.text.query_words` (letters and digits only), folded as
  the index is, so no tsquery operator in user text is ever interpreted.
* **Index catch-up**: none; the vector is written with the row.
* **Forget**: the prefilter is ``position(needle IN record) > 0`` on the canonical bytes. The
  tombstone ``UPDATE`` clears ``record`` (and with it the generated ``data`` column), and
  :meth:`PostgresQueryHooks._erase_in_transaction` clears ``search``, in the forget
  transaction. After ``COMMIT`` a ``VACUUM`` of ``events`` and
  ``event_embeddings`` removes the old row versions so the erased content is no longer
  readable through the table or its indexes; bytes left in free space, WAL segments and
  backups follow PostgreSQL's own retention (run ``VACUUM FULL`` and rotate WAL and backups
  where erasure must reach the disk blocks).
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Iterator, Sequence
from typing import Any

import orjson
from sqlalchemy import (
    ColumnElement,
    Connection,
    Integer,
    LargeBinary,
    func,
    literal,
    literal_column,
    select,
    text,
)
from sqlalchemy.exc import DBAPIError

from agentledger.server._query._store import QueryStoreMixin
from agentledger.server._store._tables import events

__all__ = ["PostgresQueryHooks", "fold", "search_vector", "tsquery_text"]

logger = logging.getLogger("agentledger.server.query")

_SEARCH: ColumnElement[Any] = literal_column("events.search")
_CLEAR_SEARCH = text(
    "UPDATE events SET search = NULL WHERE id = ANY(CAST(:ids AS bigint[])) AND search IS NOT NULL"
)
_SIMPLE: ColumnElement[Any] = literal_column("'simple'::regconfig")


_WORD = re.compile(r"[^\W_]+")
#: PostgreSQL refuses lexemes of 2 KiB and more; such "words" are not searchable anyway.
_MAX_LEXEME_BYTES = 2046


def fold(text: str) -> str:
    """Lower-case ``text`` and remove diacritics (``Café`` -> ``cafe``)."""
    text = text.lower()
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def search_vector(event: str | None, record: bytes | None) -> str | None:
    """The ``tsvector`` text (``'word':1,4 'other':2``) of a row; ``None`` without a record.

    Args:
        event: the event type.
        record: the stored canonical JSON; its ``data`` member's string values are indexed.
    """
    if record is None:
        return None
    data = orjson.loads(record).get("data")
    text = " ".join([event or "", *_strings(data)])
    # one 'word':position per word; PostgreSQL's tsvector input merges repeated words, keeps
    # 256 positions per word and caps positions at 16383 (all in C, cheaper than here)
    return " ".join(
        [
            f"'{word}':{number}"
            for number, word in enumerate(_WORD.findall(fold(text)), start=1)
            if len(word) <= _MAX_LEXEME_BYTES // 4 or len(word.encode()) <= _MAX_LEXEME_BYTES
        ]
    )


def tsquery_text(words: Sequence[str]) -> str:
    """``w1:* | w2:*`` for ``to_tsquery``, words folded as the index is (letters and digits
    only, so no tsquery operator can appear)."""
    folded = [w for word in words for w in _WORD.findall(fold(word))]
    return " | ".join(f"{word}:*" for word in dict.fromkeys(folded))


class PostgresQueryHooks(QueryStoreMixin):
    """PostgreSQL overrides of the :class:`QueryStoreMixin` hooks."""

    def _keyword_search(
        self,
        conn: Connection,
        words: Sequence[str],
        where: Sequence[ColumnElement[bool]],
        limit: int,
    ) -> list[tuple[int, float]]:
        query_text = tsquery_text(words)
        if not query_text:
            return []
        tsquery = func.to_tsquery(_SIMPLE, literal(query_text))
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

    def _erase_in_transaction(self, conn: Connection, ids: Sequence[int]) -> int:
        cleared = 0
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            cleared += conn.execute(_CLEAR_SEARCH, {"ids": chunk}).rowcount
        return cleared

    def _erase_finish(self) -> None:
        try:
            with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.exec_driver_sql("VACUUM (SKIP_LOCKED) events, event_embeddings")
        except DBAPIError as error:  # the next (auto)vacuum removes the old row versions
            logger.warning("VACUUM after forget did not finish: %s", error)
