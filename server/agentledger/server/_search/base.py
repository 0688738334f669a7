"""What a full-text search backend provides to the query features.

A backend is an object built over a store's engine; the query features
(:class:`agentledger.server._query.queries.QueryStore`) call it inside their own connections and
transactions. The base class is the portable fallback: no keyword search, nothing to catch up,
no prefilter for forget (every record of the agents is checked in Python). See
``docs/design/server-search.md`` for the SQLite and PostgreSQL designs.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from sqlalchemy import ColumnElement, Connection

from agentledger.protocol.errors import LedgerError

__all__ = ["KeywordSearchUnavailable", "SearchBackend", "string_values"]


def string_values(value: Any) -> Iterator[str]:
    """Every string leaf of a JSON value (object values and list items, depth first); the text
    both search backends and the embeddings index."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from string_values(item)
    elif isinstance(value, list):
        for item in value:
            yield from string_values(item)


class KeywordSearchUnavailable(LedgerError, RuntimeError):
    """The store has no full-text search (its dialect has no search backend)."""


class SearchBackend:
    """The portable fallback backend; the dialects' backends override what they index."""

    def keyword_search(
        self,
        conn: Connection,
        words: Sequence[str],
        where: Sequence[ColumnElement[bool]],
        limit: int,
    ) -> list[tuple[int, float]]:
        """``[(events.id, score)]`` best first (higher is better) for rows matching any word
        (prefixes count) and every condition of ``where``.

        Raises:
            KeywordSearchUnavailable: no full-text index on this store.
        """
        raise KeywordSearchUnavailable("this store has no full-text index")

    def index_catch_up(self, conn: Connection, max_rows: int) -> int:
        """Index up to ``max_rows`` rows written since the last call, inside a write
        transaction; returns rows indexed (an index the database maintains needs none)."""
        return 0

    def index_pending(self, conn: Connection, agents: Sequence[str] | None = None) -> int:
        """Rows written but not indexed yet (of ``agents`` only, when given)."""
        return 0

    def record_contains(self, needle: bytes) -> ColumnElement[bool] | None:
        """A condition true when the stored ``record`` bytes contain ``needle`` (forget's
        prefilter); ``None``: no prefilter."""
        return None

    def erase_prepare(self, conn: Connection) -> None:
        """Called first inside the forget transaction."""

    def erase_in_transaction(self, conn: Connection, ids: Sequence[int]) -> int:
        """Called after the tombstone ``UPDATE``, before ``COMMIT``; returns index rows
        removed."""
        return 0

    def erase_finish(self) -> None:
        """Called after a forget committed."""

    def reindex_prepare(self, conn: Connection, ids: Sequence[int]) -> None:
        """Called in the forget transaction before the records of ``ids`` are rewritten (their
        ``data`` text changes): take the old text out of the index."""

    def reindex_finish(self, conn: Connection, ids: Sequence[int]) -> None:
        """Called after the records of ``ids`` were rewritten: index the new text."""
