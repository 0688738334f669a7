"""A session for people: one line per event (:func:`describe`), as a rich table
(:func:`session_table`), as plain text (:func:`text_lines`), and a ``why()``/``impact()``
answer as a tree over the server's causal edges (:func:`lineage_lines`, :func:`print_lineage`).

The one rendering of stored events used by the ``agentledger`` CLI, the demo and the MCP
server's text answers. Works on :class:`agentledger.client.Event` objects read back from the
server, so it shows what was stored, not what the agent had in memory.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from agentledger.client import ChainReport, Event, ImpactResult, WhyResult
from agentledger.client import vocabulary as v
from agentledger.protocol.tree import depths as event_depths
from agentledger.timeline._lineage import (
    LineageLine,
    lineage_lines,
    lineage_notes,
    lineage_title,
)

__all__ = [
    "MAX_INDENT_LEVELS",
    "LineageLine",
    "describe",
    "event_line",
    "lineage_lines",
    "lineage_notes",
    "lineage_title",
    "print_chain_report",
    "print_lineage",
    "print_timeline",
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
    ids: bool = False,
) -> Table:
    """Events oldest first, one row each, indented under their parent and described by
    :func:`describe`; the first column is the time of day, or with ``offsets`` the
    milliseconds since the first event; with ``ids`` the second is the full event id."""
    table = Table(title=title, show_header=True, header_style="bold", box=None, pad_edge=False)
    table.add_column("+ms" if offsets else "time", justify="right", style="dim", no_wrap=True)
    if ids:
        table.add_column("event id", no_wrap=True)
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
        if ids:
            table.add_row(when, event.event_id, line)
        else:
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


def print_lineage(
    console: Console,
    result: WhyResult | ImpactResult,
    asked: Event | None = None,
    *,
    how_to_raise: str = "depth or limit",
    max_lines: int | None = None,
) -> None:
    """Print a ``why()`` or ``impact()`` answer as a tree (:func:`lineage_lines`): a title
    line, one line per event with its full id and edge kind, then what its marks mean.

    On a terminal each line is cut to the width with an ellipsis; written to a file or a
    pipe, lines are printed whole.
    """
    lines = lineage_lines(result, asked, max_lines=max_lines)
    console.print(Text(lineage_title(result), style="bold"), soft_wrap=True)
    fit = console.is_terminal
    for line in lines:
        text = Text(line.head(), style="dim")
        if line.event is not None and line.mark == "event":
            text.append(f"{line.event_id} ", style="dim")
            text.append(describe(line.event), style=_STYLES.get(line.event.event, ""))
        else:
            text.append(line.body(), style="bold red" if line.mark == "missing" else "dim")
        if fit:
            console.print(text, no_wrap=True, overflow="ellipsis")
        else:
            console.print(text, soft_wrap=True)
    if max_lines is not None and len(lines) >= max_lines:
        console.print(f"(first {max_lines} lines shown)", soft_wrap=True)
    for note in lineage_notes(lines, result, how_to_raise=how_to_raise):
        console.print(Text(note, style="dim"), soft_wrap=True)


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
