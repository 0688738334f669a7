"""Client commands: ``replay``, ``verify``, ``export``, ``import``, ``tail``,
``sessions``, ``agents``.

Each prints rich output on a terminal or JSON with ``--json``; an error prints one line to
stderr and exits 1 (``verify`` also exits 1 when the chain is not intact).
"""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path
from typing import Annotated

import orjson
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from agentledger.cli._output import console as _console
from agentledger.cli._output import dump as _dump
from agentledger.cli._output import err as _err
from agentledger.cli._output import open_ledger as _ledger
from agentledger.cli.options import AgentOpt, JsonOpt, KeyOpt, UrlOpt

__all__ = ["register"]


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
    from agentledger.timeline import session_table

    _console().print(session_table(events, title=f"session {session_id}: {len(events)} events"))


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
        report = ledger.verify_chain(anchor=anchor)
    if as_json:
        _dump(report)
    else:
        console = _console()
        mark = "[green]intact[/green]" if report.intact else "[red]NOT intact[/red]"
        console.print(f"chain of {ledger.agent}: {mark}  {report.summary}")
        if report.chain_head is not None:
            console.print(f"head: #{report.chain_head.sequence_no} {report.chain_head.chain_hash}")
        for problem in report.problems:
            console.print(
                f"  [red]{problem.kind}[/red] #{problem.sequence_no} {problem.event_id}",
                escape(problem.detail),
            )
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
    from agentledger.timeline import event_line

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
                        console.print(event_line(event), markup=False)
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
            (row.started_at or "").split("T", 1)[-1][:12],
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
    app.command("replay")(replay)
    app.command("verify")(verify)
    app.command("export")(export)
    app.command("import")(import_)
    app.command("tail")(tail)
    app.command("sessions")(sessions)
    app.command("agents")(agents)
