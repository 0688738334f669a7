"""Full-text search backends, side by side: SQLite FTS5 (:mod:`.sqlite`) and PostgreSQL
``tsvector`` (:mod:`.postgres`), behind :class:`.base.SearchBackend`.

:func:`search_backend` picks the one for a store's engine. Design notes:
``docs/design/server-search.md``.
"""

from __future__ import annotations

from sqlalchemy import Engine

from agentledger.server._search.base import KeywordSearchUnavailable, SearchBackend

__all__ = ["KeywordSearchUnavailable", "SearchBackend", "search_backend"]


def search_backend(engine: Engine) -> SearchBackend:
    """The search backend of ``engine``'s dialect (the portable fallback for others)."""
    name = engine.dialect.name
    if name == "sqlite":
        from agentledger.server._search.sqlite import SQLiteSearch

        return SQLiteSearch(engine)
    if name == "postgresql":
        from agentledger.server._search.postgres import PostgresSearch

        return PostgresSearch(engine)
    return SearchBackend()
