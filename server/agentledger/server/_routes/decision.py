"""``GET /v1/events/{event_id}/decision``: the decision-time view of one event.

The answer is built by :func:`agentledger.server._query.decision.decision_view`; the models
here document its shape in the OpenAPI schema (events inside it are the wire shape of
``GET /v1/events/{id}``).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from fastapi import APIRouter, HTTPException, Request, Response
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from agentledger.server._auth import ReadPrincipal
from agentledger.server._http import StrictJSONRoute, json_response
from agentledger.server._query.decision import decision_view

__all__ = ["DecisionOut", "router"]

router = APIRouter(prefix="/v1/events", tags=["lineage"], route_class=StrictJSONRoute)


class ModelCallOut(BaseModel):
    """The model call behind the event: the exact inputs stored on its ``llm_start``."""

    event_id: str
    session_id: str | None = None
    timestamp: str | None = None
    found: str = Field(description="how the call was found (the event itself, or a cause)")
    erased: bool = False
    model: Any = None
    provider: Any = None
    name: Any = None
    api: Any = None
    messages: Any = Field(None, description="the stored messages (or prompts) the model got")
    system_prompt: Any = None
    prompt_hash: Any = Field(None, description="`sha256:` + 16 hex digits of the system prompt")
    invocation_params: Any = Field(None, description="model parameters (temperature, ...)")
    tools: Any = None
    tool_schemas: Any = None
    tool_result_ids: Any = None
    versions: dict[str, Any] = Field(
        default_factory=dict, description="prompt/config versions named in the call's metadata"
    )
    metadata: dict[str, Any] | None = None
    start: dict[str, Any] = Field(description="the `llm_start` event")
    end: dict[str, Any] | None = Field(None, description="its `llm_end` / `llm_error`")
    output: dict[str, Any] | None = None


class ReadOut(BaseModel):
    """An input the model call read (a cause edge of its ``llm_start``)."""

    event_id: str
    kind: str = Field(description="edge kind (`read`, `cause`, ...)")
    type: str | None = Field(None, description="event type of the input")
    tool: Any = None
    call_id: Any = None
    event: dict[str, Any] | None = Field(None, description="null: not stored or not readable")
    tool_call: dict[str, Any] | None = Field(
        None, description="the `tool_call` behind a tool result"
    )


class ApprovalOut(BaseModel):
    """A human approval: an ``interrupt()`` and the ``Command(resume=...)`` that answered it."""

    interrupt: dict[str, Any] | None = Field(None, description="the `interrupted` event")
    interrupt_id: str | None = None
    asked: Any = Field(None, description="what the interrupt asked (its `interrupts`)")
    resume: dict[str, Any] = Field(description="the resuming `user_message`")
    resume_id: str
    value: Any = Field(None, description="the value the human resumed with")
    resumed_by: Any = Field(None, description="who resumed (null: not recorded)")
    resumed_by_source: str | None = Field(None, description="where `resumed_by` was read from")
    timestamp: str | None = None


class StateOut(BaseModel):
    """The agent's state at the event's time (``GET /v1/events/at``)."""

    agent: str
    at: str
    event_count: int
    truncated: bool
    state: dict[str, Any]
    model_call: dict[str, Any] | None = None


class DecisionLineageOut(BaseModel):
    """How complete the cause walk was."""

    events: int
    missing: list[str]
    cut_at: list[str]
    complete: bool
    truncated: bool


class DecisionOut(BaseModel):
    """GET ``/v1/events/{id}/decision``."""

    event_id: str
    event: dict[str, Any]
    agent: str
    session_id: str | None = None
    timestamp: str
    has_model_call: bool
    model_call: ModelCallOut | None = None
    reads: list[ReadOut]
    tool_results: list[ReadOut]
    approvals: list[ApprovalOut] = Field(description="approvals of the event's turn, oldest first")
    approval: ApprovalOut | None = Field(None, description="the latest of `approvals`")
    state: StateOut
    lineage: DecisionLineageOut
    notes: list[str] = Field(description="sentences explaining the answer (e.g. no model call)")


@router.get(
    "/{event_id}/decision",
    response_model=DecisionOut,
    responses={404: {"description": "no such event, or not one this key may read"}},
)
async def decision(event_id: UUID, principal: ReadPrincipal, request: Request) -> Response:
    """The decision-time view of the event: the agent's state at its time, the model call
    behind it (found by cause edges, never scope) with the exact messages, model and
    parameters it received, the tool results it read with their tool calls, and the human
    approvals (``interrupt()`` and ``Command(resume=...)``) of its turn. An event no model
    call is behind (a user message) answers with ``has_model_call: false`` and a note."""
    store = request.app.state.store
    view = await run_in_threadpool(decision_view, store, str(event_id), agent_scope=principal.agent)
    if view is None:
        raise HTTPException(404, f"event_id: no event {event_id}")
    return json_response(view)
