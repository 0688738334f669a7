"""Retention routes (admin only: a ``read_write`` key not bound to an agent).

* ``GET /v1/retention/policies``: the default and the per-agent policies.
* ``PUT``/``DELETE /v1/retention/policies/{agent}``: set (``{"keep": "30d"}``) or remove an
  agent's policy; ``PUT``/``DELETE /v1/retention/default``: the same for the default.
* ``POST /v1/retention/run``: sweep now (``{"dry_run": true}``: only count).
* ``GET /v1/retention/log``: the erasure report, newest sweep first.

The router's lifespan starts the scheduled sweep (:class:`._worker.RetentionWorker`) when
``Settings.retention_interval_s`` is above 0, and stops it before the store closes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, HTTPException, Path, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field, field_validator
from starlette.concurrency import run_in_threadpool

from agentledger.protocol.limits import MAX_AGENT_CHARS
from agentledger.server._auth import Principal, WritePrincipal
from agentledger.server._http import StrictJSONRoute, json_response
from agentledger.server._retention._policies import (
    delete_policy,
    erasure_report,
    known_agent,
    list_policies,
    set_policy,
)
from agentledger.server._retention._sweep import sweep
from agentledger.server._retention._tables import DEFAULT_AGENT
from agentledger.server._retention._window import WindowError, parse_window
from agentledger.server._retention._worker import RetentionWorker
from agentledger.server._schemas import AGENT_PATTERN
from agentledger.server._search import search_backend
from agentledger.server._search.base import SearchBackend
from agentledger.server._store._sql import SQLStore

__all__ = ["router"]

AgentPath = Annotated[str, Path(pattern=AGENT_PATTERN, max_length=MAX_AGENT_CHARS)]
AgentName = Annotated[str, Field(pattern=AGENT_PATTERN, min_length=1, max_length=MAX_AGENT_CHARS)]


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    settings = app.state.settings
    worker: RetentionWorker | None = None
    if settings.retention_interval_s > 0:
        worker = RetentionWorker(
            app.state.store,
            _search(app),
            interval_s=settings.retention_interval_s,
            batch=settings.retention_batch,
        )
        worker.start()
    app.state.retention_worker = worker
    try:
        yield
    finally:
        if worker is not None:
            await run_in_threadpool(worker.stop)


router = APIRouter(
    prefix="/v1/retention", tags=["retention"], route_class=StrictJSONRoute, lifespan=_lifespan
)


def _search(app: FastAPI) -> SearchBackend:
    backend: SearchBackend | None = getattr(app.state, "retention_search", None)
    if backend is None:
        backend = search_backend(app.state.store.engine)
        app.state.retention_search = backend
    return backend


def _admin(principal: Principal) -> None:
    if not principal.is_admin:
        raise HTTPException(
            403, "scope: managing retention needs a read_write key not bound to an agent"
        )


def _unknown_agent(loc: list[str], agent: str) -> HTTPException:
    return HTTPException(
        404, [{"loc": loc, "msg": f"no events of agent {agent!r} are stored", "type": "not_found"}]
    )


class KeepIn(BaseModel):
    """The body of the ``PUT`` routes."""

    model_config = ConfigDict(extra="forbid")

    keep: Annotated[str, Field(max_length=32, description="e.g. 30d, 12h, 90m, 2w")]

    @field_validator("keep")
    @classmethod
    def _window(cls, value: str) -> str:
        try:
            parse_window(value)
        except WindowError as error:
            raise ValueError(str(error)) from None
        return value.strip()


class RunIn(BaseModel):
    """``POST /v1/retention/run``."""

    model_config = ConfigDict(extra="forbid")

    dry_run: bool = False
    agent: AgentName | None = None


@router.get("/policies")
def get_policies(principal: WritePrincipal, request: Request) -> Response:
    """The default policy (``null`` when unset) and every per-agent policy."""
    _admin(principal)
    return json_response(list_policies(request.app.state.store))


@router.put("/policies/{agent}")
def put_policy(
    agent: AgentPath, body: KeepIn, principal: WritePrincipal, request: Request
) -> Response:
    """Keep ``agent``'s event content for ``keep``; older events are erased by the sweep."""
    _admin(principal)
    store: SQLStore = request.app.state.store
    if not known_agent(store, agent):
        raise _unknown_agent(["path", "agent"], agent)
    return json_response(set_policy(store, agent, parse_window(body.keep)))


@router.delete("/policies/{agent}")
def remove_policy(agent: AgentPath, principal: WritePrincipal, request: Request) -> Response:
    """Remove ``agent``'s own policy (the default applies again); ``removed`` says whether it
    had one."""
    _admin(principal)
    return json_response({"agent": agent, "removed": delete_policy(request.app.state.store, agent)})


@router.put("/default")
def put_default(body: KeepIn, principal: WritePrincipal, request: Request) -> Response:
    """The window of every agent without a policy of its own."""
    _admin(principal)
    return json_response(
        set_policy(request.app.state.store, DEFAULT_AGENT, parse_window(body.keep))
    )


@router.delete("/default")
def remove_default(principal: WritePrincipal, request: Request) -> Response:
    """Remove the default policy: agents without their own keep everything."""
    _admin(principal)
    removed = delete_policy(request.app.state.store, DEFAULT_AGENT)
    return json_response({"agent": None, "removed": removed})


@router.post("/run")
def run(body: RunIn, principal: WritePrincipal, request: Request) -> Response:
    """Sweep now, in the same bounded batches as the scheduled job; ``dry_run`` only counts
    (per agent and rule: events, oldest and newest event time, sessions)."""
    _admin(principal)
    store: SQLStore = request.app.state.store
    if body.agent is not None and not known_agent(store, body.agent):
        raise _unknown_agent(["body", "agent"], body.agent)
    outcome = sweep(
        store,
        _search(request.app),
        now=datetime.now(UTC),
        dry_run=body.dry_run,
        agent=body.agent,
        batch=request.app.state.settings.retention_batch,
    )
    verb = "would erase" if body.dry_run else "erased"
    result: dict[str, Any] = {
        "run_id": None if body.dry_run else outcome.run_id,
        "dry_run": body.dry_run,
        "erased": outcome.erased,
        "agents": [entry.as_dict() for entry in outcome.agents],
        "yielded": outcome.yielded,
        "message": f"{verb} the content of {outcome.erased} event(s); "
        "tombstones keep the chain verifiable",
    }
    return json_response(result)


@router.get("/log")
def get_log(
    principal: WritePrincipal,
    request: Request,
    agent: Annotated[str | None, Query(pattern=AGENT_PATTERN, max_length=MAX_AGENT_CHARS)] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> Response:
    """What the sweeps erased: per sweep and agent, when, by which rule and window, how many
    events, their oldest and newest time and their sessions."""
    _admin(principal)
    store: SQLStore = request.app.state.store
    if agent is not None and not known_agent(store, agent):
        raise _unknown_agent(["query", "agent"], agent)
    return json_response({"entries": erasure_report(store, agent=agent, limit=limit)})
