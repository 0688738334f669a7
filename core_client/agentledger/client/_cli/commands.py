"""Client commands of the ``agentledger`` CLI, on the same :class:`Ledger` as the library.

``why``, ``replay``, ``verify``, ``export``, ``import``, ``tail``, ``sessions``, ``agents``.
Each takes ``--url``, ``--api-key``, ``--agent`` (environment fallbacks as the client:
``AGENTLEDGER_URL``, ``AGENTLEDGER_API_KEY``, ``AGENTLEDGER_AGENT``) and prints rich output on
a terminal, or JSON with ``--json``. Errors print one line to stderr and exit with status 1
(``verify`` exits 1 when the chain is not intact).
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, TypeVar

import orjson
import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from agentledger.client._client import Ledger
from agentledger.client._errors import LedgerError
from agentledger.client._models import ChainReport, Event
from agentledger.protocol.tree import depths as event_depths

__all__ = ["register"]

T = TypeVar("T")

UrlOpt = Annotated[
    str | None, typer.Option("--url", help="Server URL (env AGENTLEDGER_URL).", show_default=False)
]
KeyOpt = Annotated[
    str | None,
    typer.Option("--api-key", help="API key (env AGENTLEDGER_API_KEY).", show_default=False),
]
AgentOpt = Annotated[
    str | None, typer.Option("--agent", help="Agent (env AGENTLEDGER_AGENT).", show_default=False)
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of rich output.")]


def _console() -> Console:
    return Console(highlight=False, soft_wrap=True)


def _err(message: str) -> None:
    Console(stderr=True, highlight=False).print(f"[red]error:[/red] {message}")


@contextlib.contextmanager
def _ledger(url: str | None, api_key: str | None, agent: str | None) -> Iterator[Ledger]:
    try:
        ledger = Ledger(url, api_key, agent, spill_dir=None, flush_timeout_s=1.0)
    except LedgerError as error:
        _err(str(error))
        raise typer.Exit(1) from error
    try:
        yield ledger
    except LedgerError as error:
        _err(str(error))
        raise typer.Exit(1) from error
    finally:
        ledger.close(timeout_s=1.0)


def _dump(value: Any) -> None:
    def default(obj: Any) -> Any:
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            return dataclasses.asdict(obj)
        raise TypeError

    sys.stdout.write(orjson.dumps(value, default=default, option=orjson.OPT_INDENT_2).decode())
    sys.stdout.write("\n")
    sys.stdout.flush()


def _short_time(timestamp: str) -> str:
    # "2026-11-29T14:01:32.615584Z" -> "14:01:32.615"
    if "T" in timestamp:
        clock = timestamp.split("T", 1)[1]
        return clock[:12]
    return timestamp


def _summary(data: dict[str, Any], width: int = 100) -> str:
    text = orjson.dumps(data).decode()
    return text if len(text) <= width else text[: width - 1] + "…"


def _timeline(events: list[Event], title: str) -> Table:
    table = Table(title=title, show_lines=False, expand=False)
    table.add_column("time", style="dim", no_wrap=True)
    table.add_column("event", no_wrap=True)
    table.add_column("data", overflow="fold")
    depths = event_depths(events)
    for event in events:
        style = "red" if event.event.endswith("_error") else "cyan"
        name = Text("  " * depths.get(event.event_id, 0)) + Text(event.event, style=style)
        table.add_row(_short_time(event.timestamp), name, _summary(event.data))
    return table


def why(
    event_id: Annotated[str, typer.Argument(help="The event to explain.")],
    depth: Annotated[int, typer.Option(help="Most ancestors to walk.")] = 100,
    url: UrlOpt = None,
    api_key: KeyOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Walk back from an event to its root cause (the causal chain, root first)."""
    with _ledger(url, api_key, agent) as ledger:
        result = ledger.why(event_id, depth=depth)
    if as_json:
        _dump(result)
        return
    console = _console()
    flags = []
    if not result.chain_complete:
        flags.append("incomplete")
    if result.missing_parent:
        flags.append(f"missing parent {result.missing_parent}")
    if result.depth_truncated:
        flags.append("depth truncated")
    title = f"why({event_id}): {result.chain_length} events" + (
        f" ({', '.join(flags)})" if flags else ""
    )
    console.print(_timeline(result.chain, title))


def replay(
    session_id: Annotated[str, typer.Argument(help="The session to replay.")],
    limit: Annotated[int, typer.Option(help="Most events.")] = 10_000,
    url: UrlOpt = None,
    api_key: KeyOpt = None,
    agent: Annotated[
        str | None, typer.Option("--agent", help="Only this agent's events (default: all).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Print a session as a timeline, oldest first: time, event type, data."""
    with _ledger(url, api_key, agent) as ledger:
        events = ledger.replay(session_id, agent=agent, all_agents=agent is None, limit=limit)
    if as_json:
        _dump(events)
        return
    _console().print(_timeline(events, f"session {session_id}: {len(events)} events"))


def verify(
    agent: Annotated[str | None, typer.Option("--agent", help="Agent whose chain to verify.")],
    anchor: Annotated[
        str | None, typer.Option(help="A chain_hash saved earlier that must still be on it.")
    ] = None,
    url: UrlOpt = None,
    api_key: KeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Verify an agent's hash chain; exit status 1 when it is not intact."""
    with _ledger(url, api_key, agent) as ledger:
        report: ChainReport = ledger.verify_chain(anchor=anchor)
    if as_json:
        _dump(report)
    else:
        console = _console()
        mark = "[green]intact[/green]" if report.intact else "[red]NOT intact[/red]"
        console.print(f"chain of {ledger.agent}: {mark}  {report.summary}")
        if report.chain_head is not None:
            console.print(f"head: #{report.chain_head.sequence_no} {report.chain_head.chain_hash}")
        for problem in report.problems:
            console.print(f"  [red]{problem.kind}[/red] #{problem.sequence_no} {problem.event_id}")
    if not report.intact:
        raise typer.Exit(1)


def export(
    agent: Annotated[str | None, typer.Option("--agent", help="Agent to export.")] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="NDJSON file (default: stdout).")
    ] = None,
    url: UrlOpt = None,
    api_key: KeyOpt = None,
) -> None:
    """Export an agent's events as NDJSON, oldest first (streamed)."""
    with _ledger(url, api_key, agent) as ledger:
        if output is None:
            count = ledger.export_events(sys.stdout.buffer, progress=False)
            sys.stdout.flush()
        else:
            count = ledger.export_events(output)  # a progress bar when stderr is a terminal
    if output is not None:
        Console(stderr=True).print(f"exported {count} events to {output}")


def import_(
    source: Annotated[Path, typer.Argument(help="NDJSON file written by export.")],
    agent: Annotated[
        str | None, typer.Option("--agent", help="Rename every event to this agent.")
    ] = None,
    url: UrlOpt = None,
    api_key: KeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Import an NDJSON export (re-running reports duplicates, never copies)."""
    with _ledger(url, api_key, None) as ledger:
        try:
            result = ledger.import_events(source, agent=agent, progress=False if as_json else None)
        except (OSError, ValueError) as error:
            _err(str(error))
            raise typer.Exit(1) from error
    if as_json:
        _dump(result)
        return
    _console().print(
        f"imported {result.imported}, duplicates {result.duplicates}, failed {result.failed}, "
        f"parents dropped {result.parents_dropped}"
    )
    for problem in result.errors[:20]:
        _console().print(f"  [red]line {problem.get('index')}[/red]: {problem.get('detail')}")
    if result.failed:
        raise typer.Exit(1)


def tail(
    agent: Annotated[str | None, typer.Option("--agent", help="Agent to follow.")] = None,
    interval_s: Annotated[float, typer.Option("--interval", help="Poll interval (s).")] = 1.0,
    last: Annotated[int, typer.Option(help="Events shown before following.")] = 10,
    count: Annotated[int | None, typer.Option(help="Stop after printing this many events.")] = None,
    url: UrlOpt = None,
    api_key: KeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Follow an agent's new events (Ctrl-C to stop); ``--json`` prints NDJSON lines."""
    console = _console()
    printed = 0
    seen: dict[str, None] = {}
    with _ledger(url, api_key, agent) as ledger:
        page = ledger.list_events(limit=max(1, last)) if last > 0 else []
        newest = page[0].timestamp if page else None
        try:
            while True:
                for event in reversed(page):
                    if event.event_id in seen:
                        continue
                    seen[event.event_id] = None
                    if len(seen) > 10_000:
                        seen.pop(next(iter(seen)))
                    if as_json:
                        sys.stdout.write(orjson.dumps(dataclasses.asdict(event)).decode() + "\n")
                        sys.stdout.flush()
                    else:
                        console.print(
                            f"[dim]{_short_time(event.timestamp)}[/dim] "
                            f"[cyan]{event.event}[/cyan] {_summary(event.data)}"
                        )
                    printed += 1
                    if count is not None and printed >= count:
                        return
                time.sleep(interval_s)
                page = (
                    ledger.list_events(limit=1000, after=newest)
                    if newest
                    else (ledger.list_events(limit=1000))
                )
                if page:
                    newest = max(newest or "", page[0].timestamp)
        except KeyboardInterrupt:
            return


def sessions(
    agent: AgentOpt = None,
    limit: Annotated[int, typer.Option(help="Most sessions.")] = 50,
    url: UrlOpt = None,
    api_key: KeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List an agent's sessions, newest first."""
    with _ledger(url, api_key, agent) as ledger:
        rows = ledger.sessions(limit=limit)
    if as_json:
        _dump(rows)
        return
    table = Table(title="sessions")
    width = max((len(r.session_id) for r in rows), default=7)
    table.add_column("session", no_wrap=True, min_width=width)
    table.add_column("events", justify="right")
    table.add_column("started", no_wrap=True)
    table.add_column("event types", overflow="fold")
    for row in rows:
        table.add_row(
            row.session_id,
            str(row.event_count),
            _short_time(row.started_at or ""),
            ", ".join(row.event_types[:8]),
        )
    _console().print(table)


def agents(url: UrlOpt = None, api_key: KeyOpt = None, as_json: JsonOpt = False) -> None:
    """List the agents the key may read."""
    with _ledger(url, api_key, None) as ledger:
        rows = ledger.agents()
    if as_json:
        _dump(rows)
        return
    table = Table(title="agents")
    width = max((len(r.agent) for r in rows), default=5)
    table.add_column("agent", no_wrap=True, min_width=min(width, 60))
    table.add_column("events", justify="right")
    table.add_column("last seen", no_wrap=True)
    for row in rows:
        table.add_row(row.agent, str(row.event_count), row.last_seen or "")
    _console().print(table)


def register(app: typer.Typer) -> None:
    """Add the client commands to the root ``agentledger`` app."""
    app.command("why")(why)
    app.command("replay")(replay)
    app.command("verify")(verify)
    app.command("export")(export)
    app.command("import")(import_)
    app.command("tail")(tail)
    app.command("sessions")(sessions)
    app.command("agents")(agents)
