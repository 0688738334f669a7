"""BM25 on SQLite with statistics of the rows a search may see, not of the whole file.

FTS5's ``bm25()`` takes its statistics (rows, rows per word, mean length) from the whole
index, so an agent-bound key's scores and order would move with other agents' words: a side
channel on what they wrote. Here every statistic comes from the candidates, the rows the
search's filters allow that match any word, newest first, at most :data:`MAX_CANDIDATES`
(older matches are not ranked):

* each candidate's term part ``f·(k1+1) / (f + k1·(1 − b + b·len/avglen))``, per word, by
  FTS5 itself on a temporary index of the candidates' text (same tokenizer, so stems and
  prefixes match exactly as in the main index): its ``bm25()`` for the word divided by the
  temporary index's IDF, which is known;
* each word's weight, Lucene's ``log(1 + (N − n + 0.5) / (n + 0.5))`` with ``N`` candidates
  and ``n`` of them holding the word: among the rows that match the query, a rarer word
  counts more.

Design: ``docs/design/server-search.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import count

from sqlalchemy import ColumnElement, Connection, select
from sqlalchemy import text as sql_text

from agentledger.server._tables import events

__all__ = ["MAX_CANDIDATES", "scoped_bm25"]

#: Matching rows ranked per search, newest first.
MAX_CANDIDATES = 1000
#: Index entries read per step (newest first) while looking for rows in scope.
_CHUNK = 2_000
_FTS5_FLOOR = 1e-6
_names = count()


def _in_scope(
    conn: Connection, match: str, where: Sequence[ColumnElement[bool]], want: int
) -> list[int]:
    """Up to ``want`` ids of rows matching ``match`` that ``where`` allows, newest first.

    The index is read alone, newest first, a chunk at a time, and each chunk is filtered by
    primary key: a join would let SQLite walk ``events`` and probe the index per row."""
    found: list[int] = []
    below: int | None = None
    while len(found) < want:
        bound = "" if below is None else " AND rowid < :below"
        chunk = [
            int(row[0])
            for row in conn.execute(
                sql_text(
                    f"SELECT rowid FROM events_fts WHERE events_fts MATCH :m{bound} "
                    "ORDER BY rowid DESC LIMIT :n"
                ),
                {"m": match, "below": below, "n": _CHUNK},
            )
        ]
        if not chunk:
            break
        below = chunk[-1]
        allowed = conn.execute(select(events.c.id).where(events.c.id.in_(chunk), *where))
        found.extend(sorted((int(row[0]) for row in allowed), reverse=True))
        if len(chunk) < _CHUNK:
            break
    return found[:want]


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
) -> list[tuple[int, float]]:
    """``[(events.id, score)]`` best first for rows matching ``match`` (``"w1"* OR ...``)
    under ``where``, scored with the statistics of those rows (see the module docstring).

    ``text_of`` is the indexed text's SQL expression (``{row}`` the row alias).
    """
    candidates = _in_scope(conn, match, where, MAX_CANDIDATES)
    if not candidates:
        return []
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
            rows, with_word = len(candidates), len(hits)
            local_idf = _fts5_idf(rows, with_word)
            weight = math.log(1 + (rows - with_word + 0.5) / (with_word + 0.5))
            for row_id, bm25 in hits:
                scores[int(row_id)] += weight * (-float(bm25) / local_idf)
    finally:
        conn.exec_driver_sql(f"DROP TABLE temp.{name}")
    ranked = sorted(scores.items(), key=lambda item: (-item[1], -item[0]))[:limit]
    return [(row_id, round(score, 6)) for row_id, score in ranked]
