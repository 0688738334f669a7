"""Two sessions side by side (``/ui/compare``): a replay run next to the production session it
replays, or any two sessions. Each is reduced to an outline (models, prompt versions, the
tool path, the answer, tokens) and the tool paths are aligned step by step, with the first
step where they part marked.

A replay run's events carry ``metadata.source_session`` (and ``source_agent``), which
:func:`~agentledger.server._ui._present.replay_source` reads so the session page can offer
the comparison.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import zip_longest
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from agentledger.protocol import vocabulary as v
from agentledger.protocol.limits import MAX_AGENT_CHARS, MAX_SESSION_CHARS
from agentledger.server._ui._api import ApiError, LedgerAPI
from agentledger.server._ui._pages import MAX_SESSION_EVENTS, build_page, render
from agentledger.server._ui._present import session_stats, view_events
from agentledger.server._ui._viewer import Viewer

__all__ = ["Outline", "align_paths", "outline", "router"]

router = APIRouter(prefix="/ui", include_in_schema=False)

#: Characters of a tool step's arguments shown in the path.
ARGS_CHARS = 120


@dataclass(slots=True)
class Outline:
    """What one session did, for the comparison."""

    session_id: str
    agent: str | None
    events: int = 0
    models: list[str] = field(default_factory=list)
    prompt_hashes: list[str] = field(default_factory=list)
    path: list[str] = field(default_factory=list)
    answer: str | None = None
    finish_reason: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    errors: int = 0
    duration_ms: float | None = None


def _add(values: list[str], value: Any) -> None:
    if isinstance(value, str) and value and value not in values:
        values.append(value)


def _step(data: Mapping[str, Any]) -> str:
    tool = data.get("tool")
    name = tool if isinstance(tool, str) and tool else "tool"
    args = data.get("args")
    text = orjson.dumps(args, default=repr).decode() if args not in (None, {}) else ""
    if len(text) > ARGS_CHARS:
        text = text[: ARGS_CHARS - 1] + "…"
    return f"{name}({text})"


def outline(session_id: str, agent: str | None, events: Sequence[Mapping[str, Any]]) -> Outline:
    """The outline of a session's events (oldest first, as the API replays them)."""
    stats = session_stats(view_events(events))
    out = Outline(
        session_id=session_id,
        agent=agent,
        events=stats.events,
        input_tokens=stats.input_tokens,
        output_tokens=stats.output_tokens,
        errors=stats.errors,
        duration_ms=stats.duration_ms,
    )
    for event in events:
        data = event.get("data")
        if not isinstance(data, Mapping):
            continue
        kind = event.get("event")
        if kind == v.LLM_START:
            _add(out.models, data.get("model"))
            _add(out.prompt_hashes, data.get("prompt_hash"))
        elif kind == v.LLM_END and isinstance(data.get("finish_reason"), str):
            out.finish_reason = data["finish_reason"]
        elif kind == v.TOOL_CALL:
            out.path.append(_step(data))
        elif kind == v.ASSISTANT_RESPONSE and isinstance(data.get("text"), str):
            out.answer = data["text"]
    return out


def align_paths(a: Sequence[str], b: Sequence[str]) -> tuple[list[tuple[str, str, bool]], int]:
    """Rows ``(step of a, step of b, same)`` position by position, and the index of the first
    row that differs (``-1`` when the paths are equal)."""
    rows = [(x or "", y or "", x == y) for x, y in zip_longest(a, b)]
    first = next((i for i, (_, _, same) in enumerate(rows) if not same), -1)
    return rows, first


SessionParam = Annotated[str, Query(min_length=1, max_length=MAX_SESSION_CHARS)]
AgentParam = Annotated[str | None, Query(max_length=MAX_AGENT_CHARS)]


@router.get("/compare", response_class=HTMLResponse)
async def compare_page(
    request: Request,
    a: SessionParam,
    b: SessionParam,
    agent_a: AgentParam = None,
    agent_b: AgentParam = None,
) -> Response:
    """Session ``a`` (say the production session) beside session ``b`` (its replay)."""

    async def build(api: LedgerAPI, viewer: Viewer) -> Response:
        sides = []
        for name, session, agent in (("a", a, agent_a or None), ("b", b, agent_b or None)):
            events = await api.session_events(session, agent=agent, limit=MAX_SESSION_EVENTS)
            if not events:
                raise ApiError(404, f"{name}: no events in session {session!r}")
            sides.append(outline(session, agent, events))
        left, right = sides
        rows, first = align_paths(left.path, right.path)
        return render(
            request,
            "compare.html",
            viewer=viewer,
            left=left,
            right=right,
            rows=rows,
            first_difference=first,
            same_answer=left.answer == right.answer,
        )

    return await build_page(request, build)
