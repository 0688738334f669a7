"""A session for people: one line per event (:func:`describe`), as a rich table
(:func:`session_table`), as plain text (:func:`text_lines`), and an answer's causes as a tree.

The one rendering of stored events used by the ``agentledger`` CLI, the demo and the MCP
server's text answers. Works on :class:`agentledger.client.Event` objects read back from the
server, so it shows what was stored, not what the agent had in memory.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from agentledger.client import ChainReport, Event
from agentledger.client import vocabulary as v
from agentledger.protocol.tree import depths as event_depths

__all__ = [
    "MAX_INDENT_LEVELS",
    "describe",
    "event_line",
    "print_chain_report",
    "print_timeline",
    "print_why_tree",
    "session_table",
    "text_lines",
]

#: Levels of indentation in plain text; deeper events carry "(depth N)" instead.
MAX_INDENT_LEVELS: Final = 12

_STYLES: Mapping[str, str] = {
    v.USER_MESSAGE: "bold cyan",
    v.ASSISTANT_RESPONSE: "bold green",
    v.LLM_START: "magenta",
    v.LLM_END: "magenta",
    v.LLM_ERROR: "bold red",
    v.TOOL_CALL: "yellow",
    v.TOOL_RESULT: "yellow",
    v.TOOL_ERROR: "bold red",
    v.STEP_START: "dim",
    v.STEP_END: "dim",
    v.STEP_ERROR: "bold red",
    v.INTERRUPTED: "bold blue",
    v.RETRIEVAL: "blue",
}


def _short(value: Any, limit: int = 70) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _usage(data: Mapping[str, Any]) -> str:
    usage = data.get("token_usage")
    if not isinstance(usage, Mapping):
        return "usage unknown"
    parts = [f"in {usage.get('input_tokens')}"]
    if usage.get("cache_read_tokens"):
        parts.append(f"(cached {usage['cache_read_tokens']})")
    parts.append(f"out {usage.get('output_tokens')}")
    return " ".join(parts) + " tokens"


def describe(event: Event, limit: int = 70) -> str:
    """One line saying what ``event`` was, e.g. ``tool_call issue_refund({...})``."""
    d = event.data
    kind = event.event
    if kind in (v.STEP_START, v.STEP_END, v.STEP_ERROR):
        extra = f" ✗ {d.get('type')}: {_short(d.get('error'), limit)}" if "error" in d else ""
        return f"{kind} {d.get('name')} [{d.get('kind')}]{extra}"
    if kind in (v.USER_MESSAGE, v.ASSISTANT_RESPONSE):
        return f'{kind} "{_short(d.get("text"), limit)}"'
    if kind == v.LLM_START:
        reads = d.get("tool_result_ids") or []
        suffix = f", reads {len(reads)} tool result(s)" if reads else ""
        return f"{kind} {d.get('model')}{suffix}"
    if kind == v.LLM_END:
        calls = d.get("tool_calls") or []
        said = (
            "asks for " + ", ".join(str(c.get("name")) for c in calls)
            if calls
            else f'"{_short(d.get("text"), limit // 2)}"'
        )
        return f"{kind} {said} ({_usage(d)})"
    if kind == v.TOOL_CALL:
        return f"{kind} {d.get('tool')}({_short(d.get('args'), limit)})"
    if kind == v.TOOL_RESULT:
        return f"{kind} {d.get('tool')} -> {_short(d.get('result'), limit)}"
    if kind in (v.TOOL_ERROR, v.LLM_ERROR):
        return f"{kind} {d.get('tool') or ''} ✗ {d.get('type')}: {_short(d.get('error'), limit)}"
    if kind == v.RETRIEVAL:
        return f'{kind} "{_short(d.get("query"), 40)}" -> {len(d.get("documents") or [])} docs'
    if kind == v.INTERRUPTED:
        return f"{kind} {d.get('name')} ({d.get('reason')})"
    return f"{kind} {_short(d, limit)}"


def clock(timestamp: str) -> str:
    """The time of day of an ISO-8601 timestamp to the millisecond: ``14:01:32.615``."""
    return timestamp.split("T", 1)[-1][:12]


def session_table(
    events: Sequence[Event],
    *,
    title: str | None = None,
    offsets: bool = False,
    limit: int = 70,
) -> Table:
    """Events oldest first, one row each, indented under their parent and described by
    :func:`describe`; the first column is the time of day, or with ``offsets`` the
    milliseconds since the first event."""
    table = Table(title=title, show_header=True, header_style="bold", box=None, pad_edge=False)
    table.add_column("+ms" if offsets else "time", justify="right", style="dim", no_wrap=True)
    table.add_column("event (indented under its parent)", no_wrap=True, overflow="ellipsis")
    start = events[0].time() if events else None
    depths = event_depths(events)
    for event in events:
        if start is not None and offsets:
            when = f"{(event.time() - start) / dt.timedelta(milliseconds=1):,.0f}"
        else:
            when = clock(event.timestamp)
        line = Text("  " * depths.get(event.event_id, 0))
        line.append(describe(event, limit), style=_STYLES.get(event.event, ""))
        table.add_row(when, line)
    return table


def print_timeline(console: Console, events: Sequence[Event]) -> None:
    """The session replay, oldest first, indented by causal depth, with time offsets (ms)."""
    if not events:
        console.print("(no events)")
        return
    console.print(session_table(events, offsets=True))


def event_line(event: Event, depth: int = 0, *, limit: int = 100) -> str:
    """One event as a plain line, indented two spaces per level up to
    :data:`MAX_INDENT_LEVELS` (deeper levels say their depth instead, so the text grows
    linearly with the events), with its id and session."""
    session = f" session={event.session_id}" if event.session_id else ""
    pad = "  " * min(depth, MAX_INDENT_LEVELS)
    deeper = f"(depth {depth}) " if depth > MAX_INDENT_LEVELS else ""
    return (
        f"{pad}- {deeper}{clock(event.timestamp)} {describe(event, limit)}"
        f"  [{event.event_id}{session}]"
    )


def text_lines(events: Sequence[Event]) -> list[str]:
    """Events as plain lines (:func:`event_line`), indented under their parents."""
    levels = event_depths(events)
    return [event_line(e, levels.get(e.event_id, 0)) for e in events]


def _step_path(event: Event, by_id: Mapping[str, Event]) -> tuple[str, list[Event]]:
    """The chain of enclosing ``step_start`` events from ``event`` up, as one line."""
    steps: list[Event] = []
    current: Event | None = event
    while current is not None and current.event == v.STEP_START and len(steps) < 20:
        steps.append(current)
        current = by_id.get(current.parent_id) if current.parent_id else None
    names = []
    for step in steps:
        position = step.data.get("langgraph_step")
        names.append(f"{step.data.get('name')}" + (f" #{position}" if position else ""))
    return "within step " + " › ".join(names), steps


def print_why_tree(
    console: Console,
    chain: Sequence[Event],
    session_events: Iterable[Event],
    *,
    max_lines: int = 80,
) -> None:
    """Print ``why()``'s chain for an answer as an indented "caused by" tree.

    Each event's causes are its parent (the ``why()`` chain) and, for a model call, the tool
    results it read (``llm_start.data.tool_result_ids``), followed back through the session's
    events. The enclosing steps of an event are folded into one "within step" line. An event
    reached twice is printed once.
    """
    if not chain:
        console.print("(empty chain)")
        return
    by_id = {e.event_id: e for e in session_events}
    by_id.update({e.event_id: e for e in chain})
    shown: set[str] = set()
    lines = 0

    def line(depth: int, label: str, body: str, style: str) -> None:
        nonlocal lines
        lines += 1
        text = Text("  " * depth + (f"{label} " if label else ""), style="dim")
        text.append(body, style=style)
        console.print(text, no_wrap=True, overflow="ellipsis")

    def emit(event: Event, depth: int, label: str) -> None:
        if lines >= max_lines or event.event_id in shown:
            return
        shown.add(event.event_id)
        line(depth, label, describe(event), _STYLES.get(event.event, ""))
        parent = by_id.get(event.parent_id) if event.parent_id else None
        if parent is not None and parent.event == v.STEP_START:
            path, steps = _step_path(parent, by_id)
            shown.update(s.event_id for s in steps)
            line(depth + 1, "└", path, "dim")
        elif parent is not None:
            emit(parent, depth + 1, "└ caused by")
        for result_id in event.data.get("tool_result_ids") or []:
            result = by_id.get(result_id)
            if result is not None:
                emit(result, depth + 1, "└ read")

    emit(chain[-1], 0, "")


def print_chain_report(console: Console, report: ChainReport, agent: str) -> None:
    """One line: is the agent's hash chain intact, and where is its head."""
    head = report.chain_head
    where = f", head #{head.sequence_no} {head.chain_hash[:16]}…" if head else ""
    if report.intact:
        console.print(
            f"[bold green]✔ hash chain of {agent!r} intact[/]{where}  {escape(report.summary)}"
        )
    else:
        console.print(f"[bold red]✘ hash chain of {agent!r} broken[/]: {escape(report.summary)}")
        for problem in report.problems[:10]:
            console.print(f"  {problem.kind} at #{problem.sequence_no} ({problem.event_id})")
