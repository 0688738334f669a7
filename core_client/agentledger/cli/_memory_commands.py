"""Memory commands: ``search`` (find events by words or meaning) and ``forget`` (erase the
events holding a value in their data or metadata, leaving tombstones that keep the chain
verifiable, and rename the sessions whose id names the value).

``forget`` erases for good, so it asks first on a terminal and needs ``--yes`` elsewhere;
``--dry-run`` only says what would be erased. It prints every field of the server's answer
as it came (what matched and where, the agents, a message), so fields the server adds show
up without a change here.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from rich.markup import escape
from rich.table import Table

from agentledger.cli._errors import NO_AGENT
from agentledger.cli._output import check_agent_known, fail
from agentledger.cli._output import console as _console
from agentledger.cli._output import dump as _dump
from agentledger.cli._output import open_ledger as _ledger
from agentledger.cli._retention import scrub_subject_cases
from agentledger.cli.options import AgentOpt, JsonOpt, KeyOpt, UrlOpt

__all__ = ["register"]

_MODES = ("auto", "keyword", "semantic", "hybrid")


def search(
    query: Annotated[
        str, typer.Argument(help="Words to look for (or a meaning, --mode semantic).")
    ],
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            help="Only this agent's events (env AGENTLEDGER_AGENT; default: every agent the "
            "key may read).",
            show_default=False,
        ),
    ] = None,
    limit: Annotated[int, typer.Option(min=1, max=100, help="Most hits.")] = 10,
    mode: Annotated[str, typer.Option(help="auto | keyword | semantic | hybrid")] = "auto",
    include_superseded: Annotated[
        bool, typer.Option(help="Also events a later event superseded.")
    ] = False,
    url: UrlOpt = None,
    api_key: KeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Search events, best first: score, event id, session, what happened."""
    if mode not in _MODES:
        raise fail(f"bad --mode {mode!r}: use one of {', '.join(_MODES)}", 2)
    with _ledger(url, api_key, agent, options={"query": "QUERY"}) as ledger:
        result = ledger.search(query, limit=limit, mode=mode, include_superseded=include_superseded)
        if not result.results:
            check_agent_known(ledger, ledger.agent)
    if as_json:
        _dump(result)
        return
    from agentledger.timeline import describe

    console = _console()
    if not result.results:
        console.print(f"no events match {escape(query)!r}")
        return
    table = Table(title=f"search {escape(query)!r}: {len(result.results)} hit(s)", box=None)
    table.add_column("score", justify="right", no_wrap=True)
    table.add_column("event id", no_wrap=True)
    table.add_column("agent", no_wrap=True)
    table.add_column("session", no_wrap=True)
    table.add_column("event", no_wrap=True, overflow="ellipsis")
    for hit in result.results:
        event = hit.event
        table.add_row(
            "-" if hit.score is None else f"{hit.score:.3g}",
            event.event_id,
            event.agent,
            event.session_id or "",
            escape(describe(event)),
        )
    console.print(table)


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def forget(
    key: Annotated[str, typer.Argument(help="The field to match, e.g. email.")],
    value: Annotated[str, typer.Argument(help="The value to erase (numbers match as text).")],
    agent: AgentOpt = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only say what would be erased.")
    ] = False,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Erase without asking (needed off a terminal).")
    ] = False,
    cases_dir: Annotated[
        Path | None,
        typer.Option(
            "--cases-dir",
            help="Also delete the case files exported from VALUE's sessions.",
            show_default=False,
        ),
    ] = None,
    url: UrlOpt = None,
    api_key: KeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Erase an agent's events holding KEY == VALUE (in data or metadata) and rename the
    sessions named after VALUE; --dry-run shows what would change. --cases-dir DIR also
    deletes the regression case files whose subject is VALUE (as ``cases forget``)."""
    if cases_dir is not None and not cases_dir.exists():
        raise fail(f"--cases-dir: {cases_dir} does not exist", 2)
    with _ledger(
        url, api_key, agent, options={"filter_key": "KEY", "filter_value": "VALUE"}
    ) as ledger:
        if ledger.agent is None:
            raise fail(NO_AGENT, 2)
        if not dry_run and not yes:
            if not sys.stdin.isatty():
                raise fail(
                    "forget erases events for good: pass --yes to go ahead, or --dry-run to "
                    "see what would be erased",
                    2,
                )
            if not typer.confirm(f"erase {ledger.agent}'s events where {key} == {value!r}?"):
                raise fail("nothing erased", 1)
        result = ledger.forget(key, value, dry_run=dry_run)
        if not result.deleted_events:
            check_agent_known(ledger, ledger.agent)
    answer = result.raw
    if cases_dir is not None:
        answer = {**answer, "cases": scrub_subject_cases(cases_dir, value, dry_run=dry_run)}
    if as_json:
        _dump(answer)
        return
    console = _console()
    if "message" in answer:
        console.print(_shown(answer["message"]), markup=False)
    for name, shown in answer.items():
        if name != "message":
            console.print(f"{name}: {_shown(shown)}", markup=False)


def register(app: typer.Typer) -> None:
    """Add ``search`` and ``forget`` to the root ``agentledger`` app."""
    app.command("search")(search)
    app.command("forget")(forget)
