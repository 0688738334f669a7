"""Turn wire-shape events into what the dashboard shows: summaries, tokens, durations, trees.

Pure functions over the event dicts the API returns (wire contract, "Event object"); nothing
here touches the store or HTTP, so the pages show exactly what the API answered. Field names
follow the event vocabulary of :mod:`agentledger.protocol.vocabulary` (``data.tool``,
``data.token_usage``, ``data.duration_ms``...); events of other shapes fall back to a generic
``key=value`` summary.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson

from agentledger.protocol import vocabulary as v

__all__ = [
    "EventView",
    "Replay",
    "SessionStats",
    "TreeRow",
    "flatten_tree",
    "format_duration_ms",
    "parse_time",
    "pretty_json",
    "replay_source",
    "session_stats",
    "summarize",
    "view_events",
    "without_data",
]

#: Characters of a one-line summary before it is cut with an ellipsis.
SUMMARY_CHARS = 160
#: Deepest indentation level drawn in trees; deeper nodes are drawn at this level with a label.
MAX_DRAWN_DEPTH = 40


def parse_time(text: str | None) -> datetime | None:
    """An ISO-8601 timestamp (``Z`` accepted) as an aware datetime, ``None`` when unparsable."""
    if not text:
        return None
    value = text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def format_duration_ms(ms: float | None) -> str:
    """``840 ms``, ``2.4 s``, ``3 min 5 s``; empty for ``None``."""
    if ms is None:
        return ""
    if ms == 0:
        return "0 ms"
    if ms < 1:
        return f"{ms:.2f} ms"
    if ms < 1000:
        return f"{ms:.0f} ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {rest} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def pretty_json(value: Any) -> str:
    """Indented JSON text (non-ASCII kept); autoescaping makes it safe to put in HTML."""
    return orjson.dumps(
        value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS, default=repr
    ).decode()


def without_data(event: Mapping[str, Any]) -> dict[str, Any]:
    """The event's stored fields other than ``data`` (ids, parent, chain, metadata)."""
    return {key: value for key, value in event.items() if key != "data"}


def _short(value: Any, limit: int = SUMMARY_CHARS) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else orjson.dumps(value, default=repr).decode()
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _last_message_text(messages: Any) -> str:
    if not isinstance(messages, list) or not messages:
        return ""
    last = messages[-1]
    if isinstance(last, Mapping):
        for key in ("content", "text"):
            if key in last:
                return _short(last[key], 100)
        return _short(last, 100)
    return _short(last, 100)


def summarize(event: Mapping[str, Any]) -> str:
    """A readable one-line summary of ``event["data"]`` by event type (event-vocabulary.md).

    Args:
        event: a wire-shape event dict (``event``, ``data``...).

    Returns:
        At most :data:`SUMMARY_CHARS` characters; plain text (the template escapes it).
    """
    kind = str(event.get("event") or "")
    data = event.get("data")
    if event.get("erased"):
        return "(erased by forget)"
    if not isinstance(data, Mapping):
        return _short(data)
    if kind in (v.USER_MESSAGE, v.ASSISTANT_RESPONSE):
        return _short(data.get("text", data))
    if kind == v.LLM_START:
        model = data.get("model") or ""
        messages = data.get("messages")
        count = len(messages) if isinstance(messages, list) else 0
        last = _last_message_text(messages)
        return _short(f"{model} · {count} message(s)" + (f" · {last}" if last else ""))
    if kind == v.LLM_END:
        calls = data.get("tool_calls")
        if isinstance(calls, list) and calls:
            names = [
                str(c.get("name") or c.get("tool") or "?") if isinstance(c, Mapping) else "?"
                for c in calls
            ]
            text = data.get("text") or ""
            return _short(f"calls {', '.join(names)}" + (f" · {text}" if text else ""))
        return _short(data.get("text", ""))
    if kind == v.TOOL_CALL:
        return _short(f"{data.get('tool', '?')}({_short(data.get('args', ''), 120)})")
    if kind == v.TOOL_RESULT:
        return _short(data.get("result", ""))
    if kind.endswith("_error") or data.get("error"):
        kind_name = data.get("type")
        error = _short(data.get("error", ""))
        return _short(f"{kind_name}: {error}" if kind_name else error)
    if kind == v.RETRIEVAL:
        docs = data.get("documents")
        count = len(docs) if isinstance(docs, list) else 0
        return _short(f"{data.get('query', '')} → {count} document(s)")
    if kind.startswith("step_"):
        return _short(" · ".join(str(data[k]) for k in ("name", "kind") if data.get(k)))
    if kind == v.INTERRUPTED:
        return _short(data.get("reason", data))
    if kind in (v.STATE_SET, v.STATE_DELETE):
        value = f" = {_short(data.get('value'), 120)}" if kind == v.STATE_SET else ""
        return _short(f"{data.get('key', '?')}{value}")
    parts = [f"{key}={_short(value, 60)}" for key, value in list(data.items())[:4]]
    return _short(", ".join(parts))


def _tool_name(data: Mapping[str, Any]) -> str:
    for key in ("tool", "name"):
        value = data.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


@dataclass(slots=True)
class EventView:
    """One timeline row: the event plus what the page derives from it."""

    event: dict[str, Any]
    index: int
    tool: str
    input_tokens: int | None
    output_tokens: int | None
    duration_ms: float | None
    offset_ms: float | None
    is_error: bool
    is_interrupt: bool
    model: str = ""

    @property
    def event_id(self) -> str:
        """The event's id."""
        return str(self.event.get("event_id", ""))

    @property
    def summary(self) -> str:
        """:func:`summarize` of the event, computed when a page draws the row (a large
        session only draws one page of rows)."""
        return summarize(self.event)


def view_events(events: Sequence[Mapping[str, Any]]) -> list[EventView]:
    """Timeline rows for events oldest first (a session replay).

    ``duration_ms`` is ``data.duration_ms`` when the integration sent it, else, for an end,
    result or error event whose start is in ``events``, the time between the two;
    ``offset_ms`` is the time since the first event.
    """
    times = {str(e.get("event_id")): parse_time(e.get("timestamp")) for e in events}
    start = next((t for t in times.values() if t is not None), None)
    rows: list[EventView] = []
    for index, raw in enumerate(events):
        event = raw if isinstance(raw, dict) else dict(raw)
        data = event.get("data") if isinstance(event.get("data"), Mapping) else {}
        assert isinstance(data, Mapping)
        kind = str(event.get("event") or "")
        usage = data.get("token_usage") if isinstance(data.get("token_usage"), Mapping) else {}
        assert isinstance(usage, Mapping)
        at = times.get(str(event.get("event_id")))
        duration = _number(data.get("duration_ms"))
        if duration is None and kind in v.CLOSING_EVENTS:
            parent_at = times.get(str(event.get("parent_id")))
            if parent_at is not None and at is not None:
                duration = (at - parent_at).total_seconds() * 1000
        input_tokens = _number(usage.get("input_tokens"))
        output_tokens = _number(usage.get("output_tokens"))
        rows.append(
            EventView(
                event=event,
                index=index,
                tool=_tool_name(data),
                input_tokens=int(input_tokens) if input_tokens is not None else None,
                output_tokens=int(output_tokens) if output_tokens is not None else None,
                duration_ms=duration,
                offset_ms=(at - start).total_seconds() * 1000 if at and start else None,
                is_error=kind.endswith("_error")
                or data.get("status") == "error"
                or (kind not in (v.TOOL_RESULT, v.LLM_END) and bool(data.get("error"))),
                is_interrupt=kind == v.INTERRUPTED or data.get("interrupted") is True,
                model=str(usage.get("model") or data.get("model") or ""),
            )
        )
    return rows


@dataclass(slots=True)
class SessionStats:
    """Totals of a session's timeline."""

    events: int = 0
    errors: int = 0
    interrupts: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    tool_calls: int = 0
    duration_ms: float | None = None
    agents: list[str] = field(default_factory=list)


def session_stats(rows: Iterable[EventView]) -> SessionStats:
    """Counts and token totals over timeline rows."""
    stats = SessionStats()
    agents: set[str] = set()
    last_offset: float | None = None
    for row in rows:
        stats.events += 1
        stats.errors += row.is_error
        stats.interrupts += row.is_interrupt
        stats.input_tokens += row.input_tokens or 0
        stats.output_tokens += row.output_tokens or 0
        stats.tool_calls += row.event.get("event") == v.TOOL_CALL
        agents.add(str(row.event.get("agent", "")))
        if row.offset_ms is not None:
            last_offset = max(last_offset or 0.0, row.offset_ms)
    stats.duration_ms = last_offset
    stats.agents = sorted(agents)
    return stats


@dataclass(slots=True)
class TreeRow:
    """One line of an indented causal tree."""

    view: EventView
    depth: int
    drawn_depth: int
    children: int


def flatten_tree(
    rows: Sequence[EventView],
    *,
    root_id: str | None = None,
    limit: int = 2000,
    around: Iterable[str] | None = None,
) -> tuple[list[TreeRow], int]:
    """The parent→child forest of ``rows`` as an indented list in depth-first order.

    Roots are rows whose parent is not among ``rows`` (or the children of ``root_id`` when
    given, for an impact tree). Siblings keep the order of ``rows`` (oldest first). Iterative,
    so a 10,000-deep chain does not hit the recursion limit.

    Args:
        rows: timeline rows, oldest first.
        root_id: draw only the descendants of this event (which need not be in ``rows``).
        limit: at most this many lines are returned.
        around: draw only these events and their ancestors (a large session's current page
            in its context); ``None`` draws every event.

    Returns:
        ``(lines, total)``: the first ``limit`` lines and the number of nodes drawn or cut.
    """
    by_id = {row.event_id: row for row in rows}
    if around is not None:
        keep: set[str] = set()
        for event_id in around:
            while event_id in by_id and event_id not in keep:
                keep.add(event_id)
                parent = by_id[event_id].event.get("parent_id")
                event_id = str(parent) if parent else ""
        rows = [row for row in rows if row.event_id in keep]
        by_id = {row.event_id: row for row in rows}
    children: dict[str, list[EventView]] = {}
    roots: list[EventView] = []
    for row in rows:
        parent = row.event.get("parent_id")
        parent_key = str(parent) if parent else None
        if root_id is not None and parent_key == root_id:
            roots.append(row)
        elif parent_key is not None and parent_key in by_id and parent_key != row.event_id:
            children.setdefault(parent_key, []).append(row)
        elif root_id is None:
            roots.append(row)
    lines: list[TreeRow] = []
    seen: set[str] = set()
    stack: list[tuple[EventView, int]] = [(root, 0) for root in reversed(roots)]
    while stack:
        row, depth = stack.pop()
        if row.event_id in seen:
            continue
        seen.add(row.event_id)
        kids = children.get(row.event_id, [])
        if len(lines) < limit:
            lines.append(TreeRow(row, depth, min(depth, MAX_DRAWN_DEPTH), len(kids)))
        stack.extend((kid, depth + 1) for kid in reversed(kids))
    return lines, len(seen)


@dataclass(slots=True)
class Replay:
    """Where a replay run came from (``metadata`` of its events)."""

    source_session: str
    source_agent: str | None
    case_id: str | None


def replay_source(events: Sequence[Mapping[str, Any]]) -> Replay | None:
    """The session a replay run replays, from the first event whose metadata names it."""
    for event in events:
        meta = event.get("metadata")
        if isinstance(meta, Mapping) and isinstance(meta.get("source_session"), str):
            agent = meta.get("source_agent")
            case = meta.get("case_id")
            return Replay(
                meta["source_session"],
                agent if isinstance(agent, str) else None,
                case if isinstance(case, str) else None,
            )
    return None
