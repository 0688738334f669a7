"""Search orchestration: keyword, semantic, hybrid (reciprocal rank fusion) and auto.

* ``keyword``: the store's full-text index (BM25 on SQLite FTS5), no embeddings needed. The
  index is brought up to date first (bounded by ``catch_up_rows``), so a search sees the
  writes that completed before it.
* ``semantic``: the query is embedded by the configured endpoint and compared by cosine with
  the stored vectors of the same model (events the worker has not embedded yet are not found).
* ``hybrid``: both lists fused by reciprocal rank fusion, ``score = Σ 1 / (k + rank)`` with
  ``k = 60`` (Cormack, Clarke and Büttcher, SIGIR 2009).
* ``auto``: ``hybrid`` when embeddings are configured, else ``keyword``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agentledger.protocol.errors import LedgerError
from agentledger.server._query.embeddings import HOW_TO_ENABLE, Embedder
from agentledger.server._query.queries import QueryStore, SearchFilters
from agentledger.server._query.text import query_words

__all__ = ["RRF_K", "SearchModeUnavailable", "SearchOutcome", "rrf", "run_search"]

#: The reciprocal-rank-fusion constant.
RRF_K = 60


class SearchModeUnavailable(LedgerError, ValueError):
    """The asked mode needs embeddings, which are not configured (a 400 for the caller)."""


@dataclass(slots=True)
class SearchOutcome:
    """Results best first and how they were found."""

    mode: str
    results: list[dict[str, Any]]
    index_pending: int = 0
    notes: list[str] = field(default_factory=list)


def rrf(*rankings: Sequence[tuple[dict[str, Any], float]]) -> list[tuple[dict[str, Any], float]]:
    """Fuse ranked lists by reciprocal rank fusion; events are matched by ``event_id``."""
    scores: dict[str, float] = {}
    events: dict[str, dict[str, Any]] = {}
    for ranking in rankings:
        for rank, (event, _) in enumerate(ranking, start=1):
            key = event["event_id"]
            events.setdefault(key, event)
            scores[key] = scores.get(key, 0.0) + 1.0 / (RRF_K + rank)
    order = sorted(scores, key=lambda k: -scores[k])
    return [(events[k], round(scores[k], 6)) for k in order]


def run_search(
    store: QueryStore,
    embedder: Embedder | None,
    query: str,
    filters: SearchFilters,
    *,
    limit: int,
    mode: str,
    catch_up_rows: int = 50_000,
) -> SearchOutcome:
    """Search ``query`` under ``filters`` in ``mode``.

    Raises:
        SearchModeUnavailable: ``semantic``/``hybrid`` without embeddings configured.
        ValueError: the query holds no word to search for.
        KeywordSearchUnavailable: the store has no full-text index.
        EmbeddingError: the endpoint failed while embedding the query.
    """
    if mode == "auto":
        mode = "hybrid" if embedder is not None else "keyword"
    if mode in ("semantic", "hybrid") and embedder is None:
        raise SearchModeUnavailable(HOW_TO_ENABLE)
    words = query_words(query)
    if not words:
        raise ValueError("query: holds no word to search for (letters or digits)")
    outcome = SearchOutcome(mode=mode, results=[])
    keyword: list[tuple[dict[str, Any], float]] = []
    semantic: list[tuple[dict[str, Any], float]] = []
    pool = limit if mode != "hybrid" else min(200, limit * 3)
    if mode in ("keyword", "hybrid"):
        store.index_catch_up(max_rows=catch_up_rows)
        outcome.index_pending = store.index_pending(filters.agents)
        keyword = store.search_keyword(words, filters, limit=pool)
    if mode in ("semantic", "hybrid"):
        assert embedder is not None
        (vector,) = embedder.embed([query])
        semantic = store.search_vectors(vector, embedder.model, filters, limit=pool)
        pending = store.embeddings_pending(embedder.model, filters.agents)
        if pending:
            outcome.notes.append(f"{pending} recent events are not embedded yet")
    if mode == "keyword":
        ranked = keyword
    elif mode == "semantic":
        ranked = semantic
    else:
        ranked = rrf(keyword, semantic)
    outcome.results = [{**event, "score": score} for event, score in ranked[:limit]]
    return outcome
