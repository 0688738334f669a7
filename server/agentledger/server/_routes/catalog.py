"""Catalog routes: sessions, session replay, agents."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Response

from agentledger.protocol.limits import MAX_AGENT_CHARS, MAX_SESSION_CHARS
from agentledger.server._auth import ReadPrincipal
from agentledger.server._http import StrictJSONRoute, json_response
from agentledger.server._routes._deps import StoreDep
from agentledger.server._schemas import AGENT_PATTERN, AgentInfo, SessionEventsOut, SessionInfo

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


@router.get("/agents", response_model=list[AgentInfo])
def list_agents(principal: ReadPrincipal, store: StoreDep) -> Response:
    """Every agent with first/last event time and event count (only its own for a bound key)."""
    return json_response(store.agents(agent=principal.agent))
