"""The text and JSON forms of the MCP tools' answers (events, trees, client errors)."""

from __future__ import annotations

from typing import Annotated, Any, Final

from mcp.types import CallToolResult, TextContent
from pydantic import Field

from agentledger.client import APIStatusError, Event
from agentledger.protocol.limits import AGENT_PATTERN

__all__ = [
    "MAX_STRING_CHARS",
    "UUID_PATTERN",
    "AgentName",
    "EventId",
    "SessionId",
    "answer",
    "detail",
    "event_json",
    "trim",
]

#: Strings longer than this (characters) are cut in structured results, with a marker.
MAX_STRING_CHARS: Final = 4_000

UUID_PATTERN: Final = (
    r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$"
)

EventId = Annotated[
    str,
    Field(
        description="An event id (UUID), e.g. from replay_session, search_events or log_event.",
        pattern=UUID_PATTERN,
    ),
]
AgentName = Annotated[
    str | None,
    Field(
        description="Agent whose data to read (default: the agent this server was started for).",
        pattern=AGENT_PATTERN,
    ),
]
SessionId = Annotated[str, Field(description="A session id.", min_length=1, max_length=255)]


def trim(value: Any, limit: int = MAX_STRING_CHARS) -> Any:
    """``value`` with strings longer than ``limit`` characters cut (marker gives the size)."""
    if isinstance(value, str):
        if len(value) <= limit:
            return value
        return f"{value[:limit]}… [cut, {len(value):,} chars in all]"
    if isinstance(value, dict):
        return {k: trim(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [trim(v, limit) for v in value]
    return value


def event_json(event: Event) -> dict[str, Any]:
    """One stored event as a JSON object for ``structuredContent`` (long strings cut)."""
    return {
        "event_id": event.event_id,
        "event": event.event,
        "agent": event.agent,
        "session_id": event.session_id,
        "parent_id": event.parent_id,
        "caused_by": [{"event_id": c.event_id, "kind": c.kind} for c in event.caused_by],
        "scope_id": event.scope_id,
        "timestamp": event.timestamp,
        "sequence_no": event.sequence_no,
        "data": trim(event.data),
    }


def answer(text: str, structured: dict[str, Any]) -> CallToolResult:
    """A tool's answer: readable text and the same facts as ``structuredContent``."""
    return CallToolResult(content=[TextContent(text=text)], structured_content=structured)


def detail(error: APIStatusError) -> str:
    """What the ledger said, readable (422: each bad field and why)."""
    said = error.detail
    if isinstance(said, list):  # 422: the bad fields
        parts = []
        for item in said:
            if isinstance(item, dict):
                where = ".".join(str(p) for p in item.get("loc", []) if p != "body")
                parts.append(f"{where}: {item.get('msg')}" if where else str(item.get("msg")))
            else:
                parts.append(str(item))
        return "; ".join(parts)
    return str(said)
