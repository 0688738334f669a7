"""Dashboard pages of one event: ``/ui/events/{id}`` (the event, its decision: the model call
behind it with its inputs, what it read, the human approval; the graph of its causes and of
its effects), ``/ui/events/{id}/why`` and ``/ui/events/{id}/impact`` (one graph each, with
``depth`` and ``limit`` as the API takes them).

The graphs are laid out by :mod:`._graph` and drawn by ``templates/_graph.html``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import HTMLResponse, Response

from agentledger.protocol import limits
from agentledger.server._ui._api import LedgerAPI
from agentledger.server._ui._graph import GRAPH_NODES, lineage_graph
from agentledger.server._ui._pages import build_page, render
from agentledger.server._ui._present import view_events
from agentledger.server._ui._viewer import Viewer

__all__ = ["router"]

router = APIRouter(prefix="/ui", include_in_schema=False)

Depth = Annotated[int, Query(ge=0, le=limits.LINEAGE_DEPTH_MAX)]
Limit = Annotated[int, Query(ge=1, le=limits.LINEAGE_LIMIT_MAX)]


@router.get("/events/{event_id}", response_class=HTMLResponse)
async def event_page(request: Request, event_id: Annotated[str, Path(max_length=64)]) -> Response:
    """The event, its decision (``GET /v1/events/{id}/decision``), the graph of its causes
    (``why()``) and of its effects (``impact()``) with the API's default bounds, and its full
    record."""

    async def build(api: LedgerAPI, viewer: Viewer) -> Response:
        event = await api.event(event_id)
        why = await api.why(
            event_id, depth=limits.WHY_DEPTH_DEFAULT, limit=limits.LINEAGE_LIMIT_DEFAULT
        )
        impact = await api.impact(
            event_id, depth=limits.IMPACT_DEPTH_DEFAULT, limit=limits.LINEAGE_LIMIT_DEFAULT
        )
        decision = await api.decision(event_id)
        (me,) = view_events([event])
        return render(
            request,
            "event.html",
            viewer=viewer,
            ev=me,
            decision=decision,
            why=why,
            impact=impact,
            why_graph=lineage_graph(why, direction="why", asked_event=event),
            impact_graph=lineage_graph(impact, direction="impact", asked_event=event),
            graph_nodes=GRAPH_NODES,
            depth_max=limits.LINEAGE_DEPTH_MAX,
        )

    return await build_page(request, build)


@router.get("/events/{event_id}/why", response_class=HTMLResponse)
async def why_page(
    request: Request,
    event_id: Annotated[str, Path(max_length=64)],
    depth: Depth = limits.WHY_DEPTH_DEFAULT,
    limit: Limit = limits.LINEAGE_LIMIT_DEFAULT,
) -> Response:
    """The graph of the event's causes: root causes at the top, the event at the bottom."""
    return await _lineage_page(request, event_id, "why", depth, limit)


@router.get("/events/{event_id}/impact", response_class=HTMLResponse)
async def impact_page(
    request: Request,
    event_id: Annotated[str, Path(max_length=64)],
    depth: Depth = limits.IMPACT_DEPTH_DEFAULT,
    limit: Limit = limits.LINEAGE_LIMIT_DEFAULT,
) -> Response:
    """The graph of the event's effects: the event at the top, what was computed from it
    below."""
    return await _lineage_page(request, event_id, "impact", depth, limit)


async def _lineage_page(
    request: Request, event_id: str, direction: Literal["why", "impact"], depth: int, limit: int
) -> Response:
    async def build(api: LedgerAPI, viewer: Viewer) -> Response:
        event = await api.event(event_id)
        read = api.why if direction == "why" else api.impact
        answer = await read(event_id, depth=depth, limit=limit)
        (me,) = view_events([event])
        return render(
            request,
            "lineage.html",
            viewer=viewer,
            ev=me,
            direction=direction,
            answer=answer,
            graph=lineage_graph(answer, direction=direction, asked_event=event),
            graph_nodes=GRAPH_NODES,
            depth=depth,
            limit=limit,
            depth_max=limits.LINEAGE_DEPTH_MAX,
            limit_max=limits.LINEAGE_LIMIT_MAX,
        )

    return await build_page(request, build)
