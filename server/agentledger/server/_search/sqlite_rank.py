"""BM25 on SQLite with statistics of the rows a search may see, not of the whole file.

FTS5's ``bm25()`` takes its statistics (rows, rows per word, mean length) from the whole
index, so an agent-bound key's scores and order would move with other agents' words: a side
channel on what they wrote. Here the statistics come from the rows the search's filters allow:

* candidates: the rows of the filters that match any word, newest first, at most
  :data:`MAX_CANDIDATES` (older matches are not ranked);
* each candidate's term part ``f·(k1+1) / (f + k1·(1 − b + b·len/avglen))``, per word, by
  FTS5 itself on a temporary index of the candidates' text (same tokenizer, so stems and
  prefixes match exactly as in the main index; the mean length is the candidates');
* each word's weight, Lucene's ``log(1 + (N − n + 0.5) / (n + 0.5))`` over the rows the filters
  allow (counts capped; they only need to tell rare from common), as on PostgreSQL.

Design: ``docs/design/server-search.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import count
from typing import Any

from sqlalchemy import ColumnElement, Connection, column, func, literal_column, select
from sqlalchemy import table as sql_table
from sqlalchemy import text as sql_text

from agentledger.server._tables import events

__all__ = ["MAX_CANDIDATES", "scoped_bm25"]

#: Matching rows ranked per search, newest first.
MAX_CANDIDATES = 2000
_TOTAL_CAP = 200_000
_WORD_CAP = 20_000
_FTS5_FLOOR = 1e-6
_names = count()

_fts = sql_table("events_fts", column("rowid"))
_MATCH: ColumnElement[Any] = literal_column("events_fts")


def _capped(conn: Connection, query: Any, cap: int) -> int:
    inner = query.limit(cap).subquery()
    return int(conn.execute(select(func.count()).select_from(inner)).scalar_one())


def _matching(match: str, where: Sequence[ColumnElement[bool]]) -> Any:
    return (
        select(events.c.id)
        .select_from(_fts.join(events, events.c.id == _fts.c.rowid))
        .where(_MATCH.op("MATCH")(match), *where)
    )


def _fts5_idf(rows: int, with_word: int) -> float:
    idf = math.log((rows - with_word + 0.5) / (with_word + 0.5))
    return idf if idf > 0 else _FTS5_FLOOR


def scoped_bm25(
    conn: Connection,
    words: Sequence[str],
    match: str,
    where: Sequence[ColumnElement[bool]],
    limit: int,
    text_of: str,
    indexed_through: int,
) -> list[tuple[int, float]]:
    """``[(events.id, score)]`` best first for rows matching ``match`` (``"w1"* OR ...``)
    under ``where``, scored with the statistics of those rows (see the module docstring).

    ``text_of`` is the indexed text's SQL expression (``{row}`` the row alias) and
    ``indexed_through`` the index watermark (rows above it are not in the index yet).
    """
    candidates = [
        int(row[0])
        for row in conn.execute(
            _matching(match, where).order_by(events.c.id.desc()).limit(MAX_CANDIDATES)
        )
    ]
    if not candidates:
        return []
    in_scope = select(events.c.id).where(
        events.c.record.is_not(None), events.c.id <= indexed_through, *where
    )
    total = _capped(conn, in_scope, _TOTAL_CAP)
    name = f"rank_fts_{next(_names)}"
    conn.exec_driver_sql(
        f"CREATE VIRTUAL TABLE temp.{name} USING fts5(body, content='', detail=full, "
        "tokenize='porter unicode61 remove_diacritics 2')"
    )
    try:
        ids = ",".join(str(i) for i in candidates)
        conn.exec_driver_sql(
            f"INSERT INTO temp.{name}(rowid, body) SELECT e.id, {text_of.format(row='e')} "
            f"FROM events AS e WHERE e.id IN ({ids})"
        )
        scores: dict[int, float] = dict.fromkeys(candidates, 0.0)
        for word in dict.fromkeys(words):
            one = f'"{word}"*'
            hits = conn.execute(
                sql_text(f"SELECT rowid, bm25({name}) FROM temp.{name} WHERE {name} MATCH :m"),
                {"m": one},
            ).all()
            if not hits:
                continue
            local_idf = _fts5_idf(len(candidates), len(hits))
            with_word = _capped(conn, _matching(one, where), _WORD_CAP)
            weight = math.log(1 + (total - with_word + 0.5) / (with_word + 0.5))
            for row_id, bm25 in hits:
                scores[int(row_id)] += weight * (-float(bm25) / local_idf)
    finally:
        conn.exec_driver_sql(f"DROP TABLE temp.{name}")
    ranked = sorted(scores.items(), key=lambda item: (-item[1], -item[0]))[:limit]
    return [(row_id, round(score, 6)) for row_id, score in ranked]
