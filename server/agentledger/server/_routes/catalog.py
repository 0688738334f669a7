"""Catalog routes: sessions, session replay, why() within a session, agents."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, HTTPException, Path, Query, Response

from agentledger.protocol import limits
from agentledger.protocol.limits import MAX_AGENT_CHARS, MAX_SESSION_CHARS
from agentledger.server._auth import ReadPrincipal
from agentledger.server._http import StrictJSONRoute, json_response
from agentledger.server._routes._deps import StoreDep
from agentledger.server._routes.events import why_answer
from agentledger.server._schemas import (
    AGENT_PATTERN,
    AgentInfo,
    SessionEventsOut,
    SessionInfo,
    WhyOut,
)

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["catalog"], route_class=StrictJSONRoute)

OptionalAgent = Annotated[str | None, Query(pattern=AGENT_PATTERN, max_length=MAX_AGENT_CHARS)]


@router.get("/sessions", response_model=list[SessionInfo])
def list_sessions(
    principal: ReadPrincipal,
    store: StoreDep,
    agent: OptionalAgent = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
) -> Response:
    """Sessions (of ``agent`` when given), most recently ended first. For a key bound to an
    agent, each session is summed over that agent's events only (a session shared with other
    agents names none of them)."""
    if principal.agent is not None:
        principal.check_agent(agent or principal.agent)
        agent = principal.agent
    return json_response(store.sessions(agent, limit=limit, agent_scope=principal.agent))


@router.get("/sessions/{session_id:path}/events", response_model=SessionEventsOut)
def session_events(
    session_id: Annotated[str, Path(min_length=1, max_length=MAX_SESSION_CHARS)],
    principal: ReadPrincipal,
    store: StoreDep,
    agent: OptionalAgent = None,
    limit: Annotated[int, Query(ge=1, le=100_000)] = 10_000,
) -> Response:
    """The session's events oldest first (replay), all agents unless ``agent`` is given."""
    if principal.agent is not None:
        principal.check_agent(agent or principal.agent)
        agent = principal.agent
    events = store.session_events(session_id, agent=agent, limit=limit)
    return json_response({"session_id": session_id, "events": events})


@router.get("/sessions/{session_id:path}/why/{event_id}", response_model=WhyOut)
def session_why(
    session_id: Annotated[str, Path(min_length=1, max_length=MAX_SESSION_CHARS)],
    event_id: UUID,
    principal: ReadPrincipal,
    store: StoreDep,
    depth: Annotated[int, Query(ge=0, le=limits.LINEAGE_DEPTH_MAX)] = limits.WHY_DEPTH_DEFAULT,
    limit: Annotated[int, Query(ge=1, le=limits.LINEAGE_LIMIT_MAX)] = limits.LINEAGE_LIMIT_DEFAULT,
) -> Response:
    """``why`` of an event of the session (the reference client's ``session(...).why``): the
    same causal ancestry, across agents, for an event that belongs to ``session_id``."""
    event = store.get_event(str(event_id))
    if (
        event is None
        or event.get("session_id") != session_id
        or (principal.agent is not None and event["agent"] != principal.agent)
    ):
        raise HTTPException(404, f"event_id: no event {event_id} in session {session_id!r}")
    answer = why_answer(str(event_id), principal, store, depth=depth, limit=limit)
    return json_response({"session_id": session_id, **answer})


@router.get("/agents", response_model=list[AgentInfo])
def list_agents(principal: ReadPrincipal, store: StoreDep) -> Response:
    """Every agent with first/last event time and event count (only its own for a bound key)."""
    return json_response(store.agents(agent=principal.agent))
