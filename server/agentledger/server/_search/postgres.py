"""PostgreSQL full-text search: a ``tsvector`` column written with each row (computed here,
in Python, folded as SQLite's ``unicode61`` tokenizer folds), ``ts_rank`` ranking, and a forget
that clears the vector in its own transaction.

Design notes: ``docs/design/server-search.md``.
"""

from __future__ import annotations

import logging
import math
import re
import unicodedata
from collections.abc import Sequence
from typing import Any

import orjson
from sqlalchemy import (
    ColumnElement,
    Connection,
    Engine,
    Integer,
    LargeBinary,
    func,
    literal,
    literal_column,
    select,
    text,
)
from sqlalchemy.exc import DBAPIError

from agentledger.server._search.base import SearchBackend, string_values
from agentledger.server._search.stem import light_stem
from agentledger.server._tables import events

__all__ = ["MAX_VECTOR_BYTES", "PostgresSearch", "fold", "search_vector", "tsquery_text"]

logger = logging.getLogger("agentledger.server.query")

_SEARCH: ColumnElement[Any] = literal_column("events.search")
_CLEAR_SEARCH = text(
    "UPDATE events SET search = NULL WHERE id = ANY(CAST(:ids AS bigint[])) AND search IS NOT NULL"
)
_SET_SEARCH = text("UPDATE events SET search = CAST(:vector AS tsvector) WHERE id = :row_id")
_SIMPLE: ColumnElement[Any] = literal_column("'simple'::regconfig")


_WORD = re.compile(r"[^\W_]+")
#: PostgreSQL refuses lexemes of 2 KiB and more; such "words" are not searchable anyway.
_MAX_LEXEME_BYTES = 2046
#: Word positions run from 1 to this; PostgreSQL gives every later word this position.
_MAX_POSITION = 16383
#: Positions PostgreSQL keeps per lexeme (it drops the others).
_MAX_POSITIONS = 256
#: The most bytes of distinct words one vector holds. PostgreSQL refuses a ``tsvector`` whose
#: words add up to 1 MiB; a quarter of that is some 30,000 distinct words, far more than any
#: prose, and keeps the GIN entries one row adds (and the write's time) bounded.
MAX_VECTOR_BYTES = 256 * 1024


def fold(text: str) -> str:
    """Lower-case ``text`` and remove diacritics (``Café`` -> ``cafe``)."""
    text = text.lower()
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def search_vector(event: str | None, record: bytes | None) -> str | None:
    """The ``tsvector`` text (``'word':1,4 'other':2``) of a row; ``None`` without a record.

    The text is the event type, then the string values of ``data`` in order. Its words are
    indexed from the start until the distinct words reach :data:`MAX_VECTOR_BYTES` (the rest
    of the text is not indexed), so the vector always fits PostgreSQL's ``tsvector`` limits
    whatever the event holds.

    Args:
        event: the event type.
        record: the stored canonical JSON; its ``data`` member's string values are indexed.
    """
    if record is None:
        return None
    data = orjson.loads(record).get("data")
    text = fold(" ".join([event or "", *string_values(data)]))
    if len(text) > MAX_VECTOR_BYTES // 4 and len(text.encode()) > MAX_VECTOR_BYTES:
        return _bounded_vector(text)
    # All words together fit: one 'word':position per word; PostgreSQL's tsvector input merges
    # repeated words, keeps 256 positions per word and caps positions at 16383 (all in C,
    # cheaper than here).
    return " ".join(
        [
            f"'{word}':{number}"
            for number, word in enumerate(_WORD.findall(text), start=1)
            if len(word) <= _MAX_LEXEME_BYTES // 4 or len(word.encode()) <= _MAX_LEXEME_BYTES
        ]
    )


def _bounded_vector(text: str) -> str:
    """The vector of a long text: each word once with its positions (at most 256, the later
    ones capped at 16383, as PostgreSQL would keep them), until the next new word would take
    the distinct words past :data:`MAX_VECTOR_BYTES`."""
    positions: dict[str, list[int]] = {}
    budget = MAX_VECTOR_BYTES
    for number, found in enumerate(_WORD.finditer(text), start=1):
        word = found.group()
        seen = positions.get(word)
        if seen is not None:
            if len(seen) < _MAX_POSITIONS and seen[-1] < _MAX_POSITION:
                seen.append(min(number, _MAX_POSITION))
            continue
        size = len(word) if word.isascii() else len(word.encode())
        if size > _MAX_LEXEME_BYTES:
            continue
        budget -= size
        if budget < 0:
            break
        positions[word] = [min(number, _MAX_POSITION)]
    return " ".join(f"'{word}':{','.join(map(str, at))}" for word, at in positions.items())


def _query_words(words: Sequence[str]) -> list[str]:
    """The words folded as the index is (letters and digits only, so no tsquery operator can
    appear), each once."""
    return list(dict.fromkeys(w for word in words for w in _WORD.findall(fold(word))))


def tsquery_text(words: Sequence[str]) -> str:
    """``w1:* | w2:*`` for ``to_tsquery`` (see :func:`_query_words`), with the stem of a word
    that has an English ending (:func:`_word_forms`)."""
    forms = (form for word in _query_words(words) for form in _word_forms(word))
    return " | ".join(f"{form}:*" for form in dict.fromkeys(forms))


def _word_forms(word: str) -> tuple[str, ...]:
    """``word``, and its stem when it has a plural, ``-ed`` or ``-ing`` ending
    (:func:`~agentledger.server._search.stem.light_stem`: ``refunds`` also finds ``refund``, as
    SQLite's Porter stemmer does)."""
    stem = light_stem(word)
    return (word,) if stem == word else (word, stem)


#: Row counts for the inverse document frequency stop here (all rows, rows with one word).
_TOTAL_CAP = 200_000
_WORD_CAP = 20_000


def _capped_count(conn: Connection, where: Sequence[ColumnElement[bool]], cap: int) -> int:
    inner = select(literal(1)).select_from(events).where(*where).limit(cap).subquery()
    return int(conn.execute(select(func.count()).select_from(inner)).scalar_one())


class PostgresSearch(SearchBackend):
    """``tsvector`` search over ``events.search``; ``engine`` is the store's (for VACUUM)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def keyword_search(
        self,
        conn: Connection,
        words: Sequence[str],
        where: Sequence[ColumnElement[bool]],
        limit: int,
    ) -> list[tuple[int, float]]:
        folded = _query_words(words)
        if not folded:
            return []
        anyword = func.to_tsquery(_SIMPLE, literal(tsquery_text(folded)))
        # BM25-like: each word's ts_rank weighted by its inverse document frequency among the
        # rows the filters allow (Lucene's form, log(1 + (N - n + 0.5) / (n + 0.5)), above 0
        # even for a word in most rows), so a rare word outranks a common one (ts_rank alone
        # has no corpus statistics). Counts stop at a cap: they only tell rare from common.
        total = _capped_count(conn, [_SEARCH.is_not(None), *where], _TOTAL_CAP)
        rank: ColumnElement[Any] | None = None
        for word in folded:
            forms = " | ".join(f"{form}:*" for form in _word_forms(word))
            tsquery = func.to_tsquery(_SIMPLE, literal(forms))
            matching = _capped_count(conn, [_SEARCH.op("@@")(tsquery), *where], _WORD_CAP)
            idf = math.log(1 + (total - matching + 0.5) / (matching + 0.5))
            term = func.ts_rank(_SEARCH, tsquery) * idf
            rank = term if rank is None else rank + term
        assert rank is not None
        query = (
            select(events.c.id, rank)
            .where(_SEARCH.op("@@")(anyword), *where)
            .order_by(rank.desc(), events.c.id.desc())
            .limit(limit)
        )
        return [(int(row[0]), round(float(row[1]), 6)) for row in conn.execute(query)]

    def record_contains(self, needle: bytes) -> ColumnElement[bool] | None:
        found = func.position(literal(needle, LargeBinary).op("IN")(events.c.record))
        return found.cast(Integer) > 0

    def erase_in_transaction(self, conn: Connection, ids: Sequence[int]) -> int:
        cleared = 0
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            cleared += conn.execute(_CLEAR_SEARCH, {"ids": chunk}).rowcount
        return cleared

    def reindex_finish(self, conn: Connection, ids: Sequence[int]) -> None:
        if not ids:
            return
        rows = conn.execute(
            select(events.c.id, events.c.event, events.c.record).where(events.c.id.in_(list(ids)))
        ).all()
        conn.execute(
            _SET_SEARCH,
            [
                {"row_id": row_id, "vector": search_vector(event, record)}
                for row_id, event, record in rows
            ],
        )

    def erase_finish(self) -> None:
        try:
            with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.exec_driver_sql("VACUUM (SKIP_LOCKED) events, event_embeddings")
        except DBAPIError as error:  # the next (auto)vacuum removes the old row versions
            logger.warning("VACUUM after forget did not finish: %s", error)
