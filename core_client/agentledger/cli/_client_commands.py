"""Client commands: ``replay``, ``verify``, ``export``, ``import``, ``tail``,
``sessions``, ``agents``.

Each prints rich output for people or JSON with ``--json``; an error prints one line to
stderr and exits 1, or 2 for a usage mistake (``verify`` also exits 1 when the chain is not
intact). An unknown agent or session is an error, never an empty table. ``--agent`` falls back
to ``AGENTLEDGER_AGENT`` everywhere.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path
from typing import Annotated

import orjson
import typer
from rich.markup import escape
from rich.table import Table

from agentledger.cli._errors import NO_AGENT
from agentledger.cli._output import check_agent_known, fail
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
        str | None,
        typer.Option(
            "--agent", help="Only this agent's events (env AGENTLEDGER_AGENT; default: all)."
        ),
    ] = None,
    all_agents: Annotated[
        bool, typer.Option("--all-agents", help="Every agent's events, even with --agent set.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Print a session oldest first: time, event id, event indented under its cause."""
    with _ledger(url, api_key, agent) as ledger:
        who = None if all_agents else ledger.agent
        events = ledger.replay(session_id, agent=who, all_agents=who is None, limit=limit)
        if not events:
            check_agent_known(ledger, who)
            of = f" for agent {who!r} (--all-agents: any agent's)" if who else ""
            raise fail(f"no session {session_id!r}{of}: `agentledger sessions` lists them")
    if as_json:
        _dump(events)
        return
    from agentledger.timeline import session_table

    title = f"session {session_id}: {len(events)} events" + (f" of {who}" if who else "")
    _console().print(session_table(events, title=title, ids=True))


def verify(
    agent: AgentOpt = None,
    anchor: Annotated[
        str | None, typer.Option(help="A chain_hash saved earlier that must still be on it.")
    ] = None,
    url: UrlOpt = None,
    api_key: KeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Verify an agent's hash chain; exit status 1 when it is not intact."""
    with _ledger(url, api_key, agent) as ledger:
        if ledger.agent is None:
            raise fail(NO_AGENT, 2)
        report = ledger.verify_chain(anchor=anchor)
        if report.chain_head is None or not report.chain_head.sequence_no:
            check_agent_known(ledger, ledger.agent)
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
    agent: AgentOpt = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="NDJSON file (default: stdout).")
    ] = None,
    url: UrlOpt = None,
    api_key: KeyOpt = None,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json", help="With -o: print the summary as JSON (the events are NDJSON anyway)."
        ),
    ] = False,
) -> None:
    """Export an agent's events as NDJSON, oldest first (streamed)."""
    with _ledger(url, api_key, agent) as ledger:
        if ledger.agent is None:
            raise fail(NO_AGENT, 2)
        if output is None:
            count = ledger.export_events(sys.stdout.buffer, progress=False)
            sys.stdout.flush()
        else:
            count = ledger.export_events(output, progress=False if as_json else None)
        if count == 0:
            check_agent_known(ledger, ledger.agent)
    if output is not None and as_json:
        _dump({"agent": ledger.agent, "events": count, "output": str(output)})
    elif output is not None:  # a progress bar went to stderr when it is a terminal
        _console(stderr=True).print(f"exported {count} events of {ledger.agent} to {output}")


def import_(
    source: Annotated[
        Path,
        typer.Argument(help="NDJSON file written by export.", exists=True, dir_okay=False),
    ],
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
    agent: AgentOpt = None,
    interval_s: Annotated[float, typer.Option("--interval", help="Poll interval (s).")] = 1.0,
    last: Annotated[int, typer.Option(help="Events shown before following.")] = 10,
    count: Annotated[int | None, typer.Option(help="Stop after printing this many events.")] = None,
    url: UrlOpt = None,
    api_key: KeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Follow an agent's new events (Ctrl-C to stop); --json prints NDJSON lines."""
    from agentledger.timeline import event_line

    console = _console()
    printed = 0
    seen: dict[str, None] = {}
    with _ledger(url, api_key, agent) as ledger:
        if ledger.agent is None:
            raise fail(NO_AGENT, 2)
        first = ledger.list_events(limit=max(1, last))
        if not first:
            check_agent_known(ledger, ledger.agent)
        newest = first[0].timestamp if first else None  # newest first; --last 0 shows none
        page = first[: max(0, last)]
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
    """List sessions, newest first: one agent's, or those of every agent the key may read."""
    with _ledger(url, api_key, agent) as ledger:
        rows = ledger.sessions(limit=limit)
        if not rows:
            check_agent_known(ledger, ledger.agent)
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
