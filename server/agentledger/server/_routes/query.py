"""Query routes: search, baselines and drift, state at a time, forget, memory.

The router has its own lifespan (merged into the app's by FastAPI): it starts the background
full-text indexer (unless ``Settings.search_indexer`` is off) and, when ``Settings.embeddings``
is set, the embedding worker, and stops both before the store closes. Without the lifespan (an
in-process test transport) the routes still work: search catches the index up itself; semantic
search then finds only what was embedded.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

from fastapi import APIRouter, FastAPI, HTTPException, Path, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field, field_validator
from starlette.concurrency import run_in_threadpool

from agentledger.protocol.limits import MAX_AGENT_CHARS, MAX_SESSION_CHARS
from agentledger.server._auth import Principal, ReadPrincipal, WritePrincipal
from agentledger.server._http import StrictJSONRoute, json_response
from agentledger.server._ingest import format_ts
from agentledger.server._query.drift import compare, session_shapes
from agentledger.server._query.embeddings import Embedder, EmbeddingError
from agentledger.server._query.forget import value_text
from agentledger.server._query.memory import build_context, session_diff
from agentledger.server._query.queries import (
    KeywordSearchUnavailable,
    QueryStore,
    SearchFilters,
)
from agentledger.server._query.search import SearchModeUnavailable, run_search
from agentledger.server._query.workers import DrainWorker, embed_step, index_step
from agentledger.server._schemas import AGENT_PATTERN, NO_NUL, UtcDatetime
from agentledger.server._settings import Settings
from agentledger.server._store._sql import SQLStore

__all__ = ["QueryServices", "router"]

AgentName = Annotated[str, Field(pattern=AGENT_PATTERN, min_length=1, max_length=MAX_AGENT_CHARS)]
AgentPath = Annotated[str, Path(pattern=AGENT_PATTERN, max_length=MAX_AGENT_CHARS)]

#: ``window`` values (wire contract: 24h|7d|30d).
WINDOWS = {"24h": timedelta(hours=24), "7d": timedelta(days=7), "30d": timedelta(days=30)}
MAX_QUERY_CHARS = 1000


@dataclass
class QueryServices:
    """Per-app query state: the embedder (``None`` when off) and the background workers."""

    store: QueryStore
    embedder: Embedder | None
    tiktoken_encoding: str = "cl100k_base"
    workers: list[DrainWorker] = field(default_factory=list)

    @classmethod
    def create(cls, core: SQLStore, settings: Settings, *, start_workers: bool) -> QueryServices:
        """Compose the query features over ``core`` and (optionally) start the workers that
        ``settings`` asks for (indexer, embedder)."""
        config = settings.embeddings
        store = QueryStore(core)
        services = cls(store, Embedder(config) if config else None, settings.tiktoken_encoding)
        if start_workers:
            if settings.search_indexer:
                services.workers.append(DrainWorker("agentledger-indexer", index_step(store)))
            if services.embedder is not None:
                services.workers.append(
                    DrainWorker("agentledger-embedder", embed_step(store, services.embedder))
                )
            for worker in services.workers:
                worker.start()
        return services

    def close(self) -> None:
        """Stop the workers, then close the embeddings client."""
        for worker in self.workers:
            worker.stop()
        if self.embedder is not None:
            self.embedder.close()


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    services = QueryServices.create(app.state.store, app.state.settings, start_workers=True)
    app.state.query_services = services
    try:
        yield
    finally:
        await run_in_threadpool(services.close)


router = APIRouter(prefix="/v1", tags=["query"], route_class=StrictJSONRoute, lifespan=_lifespan)


def _services(request: Request) -> QueryServices:
    state = request.app.state
    services: QueryServices | None = getattr(state, "query_services", None)
    if services is None:
        services = QueryServices.create(state.store, state.settings, start_workers=False)
        state.query_services = services
    return services


def _bad(loc: tuple[str, ...], message: str, status: int = 422) -> HTTPException:
    if status != 422:
        return HTTPException(status, message)
    return HTTPException(422, [{"loc": list(loc), "msg": message, "type": "value_error"}])


def _agents_for(principal: Principal, agent: str | None) -> tuple[str, ...] | None:
    if agent is not None:
        principal.check_agent(agent)
        return (agent,)
    return (principal.agent,) if principal.agent is not None else None


def _ts(value: datetime | None) -> str | None:
    return format_ts(value) if value is not None else None


# -- search ----------------------------------------------------------------------------------


class SearchIn(BaseModel):
    """POST ``/v1/search``."""

    model_config = ConfigDict(extra="forbid")

    query: Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS, pattern=NO_NUL)]
    agent: AgentName | None = None
    limit: Annotated[int, Field(ge=1, le=200)] = 10
    mode: Literal["auto", "keyword", "semantic", "hybrid"] | None = "auto"
    include_superseded: bool = False
    session_id: Annotated[str, Field(max_length=MAX_SESSION_CHARS, pattern=NO_NUL)] | None = None
    event_types: (
        Annotated[
            list[Annotated[str, Field(min_length=1, max_length=MAX_SESSION_CHARS, pattern=NO_NUL)]],
            Field(max_length=50),
        ]
        | None
    ) = None
    from_ts: UtcDatetime | None = None
    to_ts: UtcDatetime | None = None

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("query must not be blank")
        return value


class SearchOut(BaseModel):
    """Response of POST ``/v1/search``: events with ``score`` (higher is better)."""

    query: str
    mode: str
    results: list[dict[str, Any]]
    index_pending: int = 0
    notes: list[str] = []


def _check_range(from_ts: str | None, to_ts: str | None, where: str) -> None:
    if from_ts is not None and to_ts is not None and from_ts > to_ts:
        raise _bad((where, "from_ts"), "from_ts must not be after to_ts")


@router.post("/search", response_model=SearchOut)
def search(body: SearchIn, principal: ReadPrincipal, request: Request) -> Response:
    """Search events by keyword (BM25, prefixes match), meaning (embeddings) or both (RRF).

    ``mode=auto`` is hybrid when embeddings are configured, keyword otherwise. Events named
    by another event's ``supersedes`` are left out unless ``include_superseded``."""
    services = _services(request)
    from_ts, to_ts = _ts(body.from_ts), _ts(body.to_ts)
    _check_range(from_ts, to_ts, "body")
    filters = SearchFilters(
        agents=_agents_for(principal, body.agent),
        session_id=body.session_id,
        event_types=tuple(body.event_types or ()),
        from_ts=from_ts,
        to_ts=to_ts,
        include_superseded=body.include_superseded,
    )
    try:
        outcome = run_search(
            services.store,
            services.embedder,
            body.query,
            filters,
            limit=body.limit,
            mode=body.mode or "auto",
        )
    except SearchModeUnavailable as error:
        raise HTTPException(400, str(error)) from None
    except KeywordSearchUnavailable as error:
        raise HTTPException(501, f"mode: {error}; use mode=semantic") from None
    except EmbeddingError as error:
        raise HTTPException(502, f"embeddings endpoint failed: {error}") from None
    except ValueError as error:
        raise _bad(("body", "query"), str(error).removeprefix("query: ")) from None
    return json_response(
        {
            "query": body.query,
            "mode": outcome.mode,
            "results": outcome.results,
            "index_pending": outcome.index_pending,
            "notes": outcome.notes,
        }
    )


@router.get("/search/status")
def search_status(principal: ReadPrincipal, request: Request) -> Response:
    """Indexing progress: events not yet in the full-text index or not yet embedded (for a
    key bound to an agent, that agent's events only)."""
    services = _services(request)
    embedder = services.embedder
    scope = (principal.agent,) if principal.agent is not None else None
    return json_response(
        {
            "keyword_index": {"pending": services.store.index_pending(scope)},
            "embeddings": {
                "configured": embedder is not None,
                "model": embedder.model if embedder else None,
                "pending": (
                    services.store.embeddings_pending(embedder.model, scope) if embedder else None
                ),
            },
        }
    )


# -- state at a time -------------------------------------------------------------------------


@router.get("/events/at")
def state_at(
    principal: ReadPrincipal,
    request: Request,
    agent: Annotated[str, Query(pattern=AGENT_PATTERN, max_length=MAX_SESSION_CHARS)],
    timestamp: UtcDatetime,
    max_events: Annotated[int, Query(ge=1, le=1_000_000)] = 1_000_000,
) -> Response:
    """The agent's key/value state at ``timestamp``: per key the last ``state_set`` at or
    before it unless a later ``state_delete`` removed it (ties by ``sequence_no``), the
    count of the agent's events up to it, and its last model call up to it (``model_call``:
    the prompt version and model in effect)."""
    principal.check_agent(agent)
    at = format_ts(timestamp)
    outcome = _services(request).store.state_at(agent, at, max_events=max_events)
    return json_response(
        {
            "agent": agent,
            "at": at,
            "event_count": outcome.event_count,
            "truncated": outcome.truncated,
            "state": outcome.state,
            "model_call": outcome.model_call,
        }
    )


# -- forget ----------------------------------------------------------------------------------


class ForgetIn(BaseModel):
    """DELETE ``/v1/memory/forget``."""

    model_config = ConfigDict(extra="forbid")

    filter_key: Annotated[str, Field(min_length=1, max_length=MAX_SESSION_CHARS, pattern=NO_NUL)]
    filter_value: (
        Annotated[str, Field(min_length=1, max_length=10_000, pattern=NO_NUL)] | int | float | bool
    )
    agent: AgentName | None = None
    dry_run: bool = False

    @field_validator("filter_key")
    @classmethod
    def _key_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("filter_key must not be blank")
        return value

    @field_validator("filter_value")
    @classmethod
    def _finite(cls, value: str | int | float | bool) -> str | int | float | bool:
        if isinstance(value, float) and value != value:  # pragma: no cover - orjson refuses NaN
            raise ValueError("filter_value must be a finite number or a string")
        return value


@router.delete("/memory/forget")
def forget(
    body: ForgetIn,
    principal: WritePrincipal,
    request: Request,
    dry_run: bool = False,
) -> Response:
    """Erase every event (of ``agent``, or of every agent the key may write) whose ``data`` or
    ``metadata`` holds ``filter_key == filter_value`` at any depth; numbers compare as strings
    too. A session whose id names the value (as a whole token) is renamed to a pseudonym on
    every event of those agents.

    Each erased event becomes a tombstone (sequence number and chain link kept, content gone),
    so ``verify`` stays intact and counts it; its full-text index rows and embeddings are
    deleted in the same transaction. A renamed session's kept events are rewritten with a mark
    ``verify`` counts as ``amended``. ``dry_run`` (body or query) only reports what would be
    erased and renamed, and where the value matched (``matched_in``)."""
    value = value_text(body.filter_value)
    assert value is not None
    agents = _agents_for(principal, body.agent)
    is_dry = body.dry_run or dry_run
    outcome = _services(request).store.forget(body.filter_key, value, agents=agents, dry_run=is_dry)
    verb = "would erase" if is_dry else "erased"
    return json_response(
        {
            "deleted_events": outcome.deleted_events,
            "filter": {"filter_key": body.filter_key, "filter_value": value, "agent": body.agent},
            "dry_run": is_dry,
            "event_ids": outcome.event_ids,
            "event_ids_truncated": len(outcome.event_ids) < outcome.deleted_events,
            "agents": outcome.agents,
            "embeddings_deleted": outcome.embeddings_deleted,
            "matched_in": outcome.matched_in,
            "sessions_renamed": outcome.sessions_renamed,
            "events_amended": outcome.events_amended,
            "message": f"{verb} {outcome.deleted_events} event(s)"
            + (
                f" and renamed {len(outcome.sessions_renamed)} session(s) whose id named the "
                f"value ({outcome.events_amended} kept event(s) rewritten)"
                if outcome.sessions_renamed
                else ""
            )
            + "; tombstones keep the chain verifiable",
        }
    )


# -- baselines and drift ---------------------------------------------------------------------


def _window(value: str | None, field_name: str = "window") -> timedelta | None:
    if value is None:
        return None
    if value not in WINDOWS:
        raise _bad(("query", field_name), f"window must be one of {', '.join(WINDOWS)}")
    return WINDOWS[value]


@router.get("/agents/{agent}/baseline")
def baseline(
    agent: AgentPath,
    principal: ReadPrincipal,
    request: Request,
    recent_window: Annotated[int, Query(ge=1, le=100_000)] = 50,
    window: Annotated[str | None, Query(max_length=8)] = None,
) -> Response:
    """Recent sessions (the last ``recent_window``, or those started within ``window``)
    against the agent's earlier sessions: distributions, divergence, test, verdict."""
    principal.check_agent(agent)
    span = _window(window)
    shapes = session_shapes(_services(request).store.drift_rows(agent))
    if span is not None:
        cut = format_ts(datetime.now(UTC) - span)
        recent = [s for s in shapes if s.started_at >= cut]
        base = [s for s in shapes if s.started_at < cut]
        split: dict[str, Any] = {"window": window, "recent_since": cut}
    else:
        recent = shapes[-recent_window:] if recent_window < len(shapes) else shapes
        base = shapes[: len(shapes) - len(recent)]
        split = {"recent_window": recent_window}
    return json_response({"agent": agent, **compare(base, recent, split=split)})


@router.get("/agents/{agent}/behavior-change")
def behavior_change(
    agent: AgentPath,
    principal: ReadPrincipal,
    request: Request,
    window: Annotated[str, Query(max_length=8)] = "7d",
    from_ts: UtcDatetime | None = None,
    to_ts: UtcDatetime | None = None,
) -> Response:
    """Sessions started in ``[from_ts, to_ts]`` (default: the last ``window`` up to now)
    against the sessions started before ``from_ts``."""
    principal.check_agent(agent)
    span = _window(window)
    assert span is not None
    end = to_ts or datetime.now(UTC)
    start = from_ts or (end - span)
    lo, hi = format_ts(start), format_ts(end)
    _check_range(lo, hi, "query")
    shapes = session_shapes(_services(request).store.drift_rows(agent, until=hi))
    recent = [s for s in shapes if lo <= s.started_at <= hi]
    base = [s for s in shapes if s.started_at < lo]
    split = {"window": window, "from_ts": lo, "to_ts": hi}
    return json_response({"agent": agent, **compare(base, recent, split=split)})


# -- memory ----------------------------------------------------------------------------------


class ContextIn(BaseModel):
    """POST ``/v1/memory/context`` (``context_for``)."""

    model_config = ConfigDict(extra="forbid")

    agent: AgentName
    task: Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS, pattern=NO_NUL)]
    max_tokens: Annotated[int, Field(ge=16, le=128_000)] = 2000
    session_id: Annotated[str, Field(max_length=MAX_SESSION_CHARS, pattern=NO_NUL)] | None = None
    recent: Annotated[int, Field(ge=0, le=200)] = 20
    relevant: Annotated[int, Field(ge=0, le=200)] = 20


@router.post("/memory/context")
def memory_context(body: ContextIn, principal: ReadPrincipal, request: Request) -> Response:
    """A prompt-ready memory block: recent events, then events relevant to ``task``
    (search), deduplicated, superseded ones left out, under ``max_tokens``."""
    principal.check_agent(body.agent)
    services = _services(request)
    recent = services.store.recent_events(
        body.agent, limit=body.recent, exclude_session=body.session_id
    )
    relevant: list[dict[str, Any]] = []
    mode = "none"
    if body.relevant:
        try:
            outcome = run_search(
                services.store,
                services.embedder,
                body.task,
                SearchFilters(agents=(body.agent,)),
                limit=body.relevant,
                mode="auto",
            )
            mode = outcome.mode
            relevant = [
                e
                for e in outcome.results
                if body.session_id is None or e.get("session_id") != body.session_id
            ]
        except ValueError:  # a task without words: recent events only
            relevant = []
        except (EmbeddingError, KeywordSearchUnavailable):
            relevant = []
    packed = build_context(
        body.agent,
        body.task,
        recent,
        relevant,
        max_tokens=body.max_tokens,
        encoding=services.tiktoken_encoding,
    )
    return json_response({"agent": body.agent, "task": body.task, "search_mode": mode, **packed})


@router.get("/memory/diff/{session_id:path}")
def memory_diff(
    session_id: Annotated[str, Path(min_length=1, max_length=MAX_SESSION_CHARS)],
    principal: ReadPrincipal,
    request: Request,
    agent: Annotated[str | None, Query(pattern=AGENT_PATTERN, max_length=MAX_SESSION_CHARS)] = None,
) -> Response:
    """What a session did next to the agent's other sessions (new steps and event types,
    usual steps it skipped, depth, errors, duration)."""
    if principal.agent is not None:
        principal.check_agent(agent or principal.agent)
        agent = principal.agent
    store = _services(request).store
    found = store.session_rows(session_id, agent=agent)
    if not found:
        raise HTTPException(404, f"session_id: no session {session_id!r}")
    if agent is None:
        counts = Counter(name for name, _ in found)
        agent = min(counts, key=lambda name: (-counts[name], name))
    rows = [row for name, row in found if name == agent]
    (shape,) = session_shapes(rows)
    others = [s for s in session_shapes(store.drift_rows(agent)) if s.session_id != session_id]
    return json_response(session_diff(agent, shape, others[-500:]))
