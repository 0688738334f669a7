"""Token usage as stored: one read of an agent's events in a time range (:func:`scan`) and the
model calls, tool outputs and event counts the usage, report and suggestion answers are made
of.

Usage is read from ``data.token_usage`` of any event (integrations write it on ``llm_end``;
the reference client's ``log(token_usage=...)`` puts it on the event it logs). The keys of the
event vocabulary are read, and the providers' own spellings (:func:`normalize_usage`):

* ``input_tokens`` / ``prompt_tokens`` / ``prompt_token_count`` — input, cache parts included;
* ``output_tokens`` / ``completion_tokens`` / ``candidates_token_count``;
* ``cache_read_tokens`` / ``cached_tokens`` / ``prompt_tokens_details.cached_tokens`` /
  ``input_token_details.cache_read`` — input tokens read from the prompt cache;
* ``cache_write_tokens`` / ``cache_creation_tokens`` / ``input_token_details.cache_creation``;
* Anthropic's raw ``cache_read_input_tokens`` / ``cache_creation_input_tokens`` are *not* part
  of its ``input_tokens``, so they are added to it;
* ``reasoning_tokens`` / ``completion_tokens_details.reasoning_tokens``.

The model of a call is ``token_usage.model``, else ``data.model``, else the ``model`` of the
``llm_start`` the event names as parent.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
from sqlalchemy import func, select

from agentledger.protocol.vocabulary import ERROR_EVENTS
from agentledger.server._store._sql import SQLStore
from agentledger.server._tables import events

__all__ = [
    "Call",
    "Scan",
    "ToolOutput",
    "Usage",
    "Window",
    "normalize_usage",
    "scan",
    "session_span",
]

#: ``finish_reason`` values that mean the answer was cut at the output limit.
TRUNCATED_REASONS = frozenset({"length", "max_tokens", "max_output_tokens"})


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts of one model call (``input`` includes both cache parts)."""

    input: int
    output: int
    cache_read: int
    cache_write: int
    reasoning: int
    model: str | None


def _int(value: Any) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return max(int(value), 0)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _first(raw: Mapping[str, Any], *paths: str) -> int | None:
    for path in paths:
        node: Any = raw
        for part in path.split("."):
            node = node.get(part) if isinstance(node, Mapping) else None
        value = _int(node)
        if value is not None:
            return value
    return None


def normalize_usage(raw: Any) -> Usage | None:
    """One stored usage object in the vocabulary's terms; ``None`` when it names no counts."""
    if not isinstance(raw, Mapping):
        return None
    given_input = _first(raw, "input_tokens", "prompt_tokens", "prompt_token_count")
    output = _first(raw, "output_tokens", "completion_tokens", "candidates_token_count")
    if given_input is None and output is None:
        return None
    anthropic_read = _first(raw, "cache_read_input_tokens")
    anthropic_write = _first(raw, "cache_creation_input_tokens")
    read = _first(
        raw,
        "cache_read_tokens",
        "cached_tokens",
        "prompt_tokens_details.cached_tokens",
        "input_token_details.cache_read",
    )
    write = _first(
        raw, "cache_write_tokens", "cache_creation_tokens", "input_token_details.cache_creation"
    )
    input_tokens = given_input or 0
    if read is None and write is None and (anthropic_read or anthropic_write):
        read, write = anthropic_read or 0, anthropic_write or 0
        input_tokens += read + write
    read, write = read or 0, write or 0
    input_tokens = max(input_tokens, read + write)
    reasoning = _first(raw, "reasoning_tokens", "completion_tokens_details.reasoning_tokens") or 0
    model = raw.get("model")
    return Usage(
        input=input_tokens,
        output=output or 0,
        cache_read=read,
        cache_write=write,
        reasoning=reasoning,
        model=model if isinstance(model, str) and model else None,
    )


@dataclass(frozen=True, slots=True)
class Window:
    """What to read: agents (``None``: every agent), ``[since, until)``, one session."""

    agents: tuple[str, ...] | None
    since: str
    until: str
    session_id: str | None = None


@dataclass(slots=True)
class Call:
    """One model call with usage (or an ``llm_end`` without it: ``usage is None``)."""

    agent: str
    session_id: str | None
    event_id: str
    timestamp: str
    model: str | None
    usage: Usage | None
    finish_reason: str | None
    prompt_key: str | None = None
    prompt_chars: int = 0


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """A tool result and how large it was (characters of its JSON)."""

    agent: str
    session_id: str | None
    event_id: str
    timestamp: str
    tool: str
    chars: int


@dataclass(slots=True)
class Scan:
    """What one read of the window found."""

    window: Window
    calls: list[Call] = field(default_factory=list)
    tool_outputs: list[ToolOutput] = field(default_factory=list)
    #: ``(agent, session_id, event type, timestamp, is_error)`` of every event read
    events: list[tuple[str, str | None, str, str, bool]] = field(default_factory=list)
    #: per session, the timestamps of its ``llm_start`` events (sorted)
    llm_starts: dict[str | None, list[str]] = field(default_factory=lambda: defaultdict(list))
    #: per tool, ``[results, errors]``
    tools: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))
    llm_errors: int = 0
    truncated: bool = False


def _first_message(messages: Any) -> str | None:
    while isinstance(messages, list) and messages:
        messages = messages[0]
        if isinstance(messages, Mapping):
            content = messages.get("content")
            return content if isinstance(content, str) else orjson.dumps(content).decode()
    return messages if isinstance(messages, str) else None


def _start_info(data: Mapping[str, Any]) -> tuple[str | None, str | None, int]:
    model = data.get("model")
    first = _first_message(data.get("messages"))
    key = hashlib.sha256(first.encode()).hexdigest()[:16] if first else None
    return (model if isinstance(model, str) else None), key, len(first or "")


def _is_error(event: str, data: Mapping[str, Any]) -> bool:
    return event in ERROR_EVENTS or event.endswith("_error") or bool(data.get("error"))


def scan(store: SQLStore, window: Window, *, max_events: int) -> Scan:
    """Read the window's events (oldest first, at most ``max_events``; erased ones skipped)."""
    query = select(
        events.c.agent,
        events.c.event_id,
        events.c.parent_id,
        events.c.session_id,
        events.c.event,
        events.c.timestamp,
        events.c.record,
    ).where(
        events.c.timestamp >= window.since,
        events.c.timestamp < window.until,
        events.c.record.is_not(None),
    )
    if window.agents is not None:
        query = query.where(events.c.agent.in_(window.agents))
    if window.session_id is not None:
        query = query.where(events.c.session_id == window.session_id)
    query = query.order_by(events.c.timestamp, events.c.sequence_no).limit(max_events + 1)
    found = Scan(window)
    starts: dict[str, tuple[str | None, str | None, int]] = {}
    with store.reader() as conn:
        for n, row in enumerate(conn.execute(query)):
            if n == max_events:
                found.truncated = True
                break
            _take(found, starts, row)
    return found


def _take(found: Scan, starts: dict[str, tuple[str | None, str | None, int]], row: Any) -> None:
    agent, event_id, parent_id, session_id, event, timestamp, record = row
    event = event or ""
    data = orjson.loads(record).get("data")
    if not isinstance(data, dict):
        data = {}
    error = _is_error(event, data)
    found.events.append((agent, session_id, event, timestamp, error))
    if event == "llm_start":
        starts[event_id] = _start_info(data)
        found.llm_starts[session_id].append(timestamp)
    elif event == "llm_error":
        found.llm_errors += 1
    elif event in ("tool_result", "tool_error"):
        tool = data.get("tool")
        name = tool if isinstance(tool, str) else "?"
        found.tools[name][0] += 1
        found.tools[name][1] += 1 if error else 0
        if event == "tool_result" and "result" in data:
            chars = len(orjson.dumps(data["result"]))
            found.tool_outputs.append(
                ToolOutput(agent, session_id, event_id, timestamp, name, chars)
            )
    usage = normalize_usage(data.get("token_usage"))
    if usage is None and event != "llm_end":
        return
    start_model, key, chars = starts.get(parent_id or "", (None, None, 0))
    own = data.get("model")
    model = (usage.model if usage else None) or (own if isinstance(own, str) else None)
    reason = data.get("finish_reason")
    found.calls.append(
        Call(
            agent,
            session_id,
            event_id,
            timestamp,
            model or start_model,
            usage,
            reason if isinstance(reason, str) else None,
            key,
            chars,
        )
    )


def event_type_counts(found: Scan) -> Counter[str]:
    """Events read per type."""
    return Counter(event for _, _, event, _, _ in found.events)


def later_calls(found: Scan, session_id: str | None, after: str) -> int:
    """Model calls of ``session_id`` made after ``after`` (what a tool output is re-sent to):
    its ``llm_start`` events, or its calls with usage when it has no ``llm_start``."""
    if session_id is None:
        return 0
    stamps: Sequence[str] = found.llm_starts.get(session_id, ()) or [
        call.timestamp for call in found.calls if call.session_id == session_id
    ]
    return sum(1 for stamp in stamps if stamp > after)


def session_span(
    store: SQLStore, session_id: str, agents: tuple[str, ...] | None
) -> tuple[str, str] | None:
    """First and last event time of a session (of ``agents``), or ``None`` when it has none."""
    query = select(func.min(events.c.timestamp), func.max(events.c.timestamp)).where(
        events.c.session_id == session_id
    )
    if agents is not None:
        query = query.where(events.c.agent.in_(agents))
    with store.reader() as conn:
        first, last = conn.execute(query).one()
    return (first, last) if first is not None else None
