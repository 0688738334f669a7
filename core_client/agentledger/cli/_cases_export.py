"""Sessions to case files, for ``agentledger cases export`` and ``cases replay``: named
sessions, search hits or a drawn corpus, exported from the server the CLI is pointed at."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.markup import escape

from agentledger.cli._errors import NO_AGENT, explain
from agentledger.cli._output import missing_extra

if TYPE_CHECKING:
    from agentledger.cases import ExportResult, SampleResult, SampleSpec

__all__ = ["Selection", "export_sessions", "fail"]


def fail(console: Console, message: str, code: int) -> typer.Exit:
    """Print ``error: message`` on ``console``; the exit to raise with ``code``."""
    console.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True)
    return typer.Exit(code)


@dataclass
class Selection:
    """Which sessions to export: named, found by search, or drawn (see ``cases export``)."""

    sessions: list[str] = field(default_factory=list)
    search: str | None = None
    limit: int = 10
    labels: list[str] = field(default_factory=list)
    cause: str | None = None
    order_ids: bool = False
    force: bool = False
    sample: int | None = None
    per_stratum: int | None = None
    fraction: float | None = None
    stratify_by: str | None = None
    half_life_days: float | None = None
    since: str | None = None
    until: str | None = None
    seed: int = 0
    strata: list[str] = field(default_factory=list)


def _spec(selection: Selection) -> SampleSpec | None:
    """The draw asked for (a ``SampleSpec``), ``None`` when sessions are named.

    Raises:
        ValueError: a draw option without a draw, or a bad time.
    """
    from agentledger.cases import SampleSpec, parse_when

    s = selection
    if s.sample is None and s.per_stratum is None and s.fraction is None:
        given = [
            name
            for name, value in (
                ("--stratify-by", s.stratify_by),
                ("--half-life-days", s.half_life_days),
                ("--since", s.since),
                ("--until", s.until),
                ("--stratum", s.strata or None),
            )
            if value is not None
        ]
        if given:
            raise ValueError(f"{', '.join(given)} need --sample, --per-stratum or --fraction")
        return None
    now = dt.datetime.now(dt.UTC)
    return SampleSpec(
        sample=s.sample,
        per_stratum=s.per_stratum,
        fraction=s.fraction,
        stratify_by=s.stratify_by,
        half_life_days=s.half_life_days,
        since=None if s.since is None else parse_when(s.since, now=now),
        until=None if s.until is None else parse_when(s.until, now=now),
        seed=s.seed,
        only=tuple(s.strata),
    )


def export_sessions(
    console: Console,
    selection: Selection,
    *,
    out: Path,
    agent: str | None,
    url: str | None,
    api_key: str | None,
    dry_run: bool = False,
    command: str = "cases export",
) -> ExportResult:
    """Export the selected sessions as case files into ``out`` (chain verified first; personal
    data replaced), printing the draw and any warning on ``console``.

    Raises:
        typer.Exit: 1 the chain is broken (without ``force``); 2 bad input or the server
            refused.
    """
    try:
        from agentledger.cases import ChainBrokenError, export_cases, strata_table
    except ImportError as error:  # the case model needs pydantic
        raise missing_extra(command, "langchain", error) from error
    from agentledger.client import ConfigurationError, Ledger, LedgerError

    try:
        spec = _spec(selection)
    except ValueError as error:
        raise fail(console, str(error), 2) from error
    try:
        ledger = Ledger(url=url, api_key=api_key, agent=agent, spill_dir=None)
    except ConfigurationError as error:
        raise fail(console, explain(error, url or ""), 2) from error
    try:
        if ledger.agent is None:
            raise fail(console, NO_AGENT, 2)
        result = export_cases(
            ledger,
            agent=ledger.agent,
            sessions=selection.sessions,
            search=selection.search,
            limit=selection.limit,
            out=out,
            force=selection.force,
            order_ids=selection.order_ids,
            cause_category=selection.cause,
            labels=selection.labels,
            sample=spec,
            dry_run=dry_run,
        )
    except ChainBrokenError as error:
        raise fail(console, str(error), 1) from error
    except LedgerError as error:
        raise fail(console, explain(error, ledger.url), 2) from error
    except ValueError as error:
        raise fail(console, str(error), 2) from error
    except OSError as error:  # the case directory cannot be written
        raise fail(console, f"--out: cannot write {out}: {error}", 2) from error
    finally:
        ledger.close(timeout_s=1.0)
    if not result.chain_intact:
        console.print("[bold yellow]warning:[/] chain broken; exported because of --force")
    if result.sample is not None:
        _print_draw(console, result.sample, strata_table(result.sample), result.without_input)
    return result


def _sessions(count: int) -> str:
    return f"{count} session" if count == 1 else f"{count} sessions"


def _print_draw(
    console: Console, draw: SampleResult, table: list[str], without_input: list[str]
) -> None:
    """The strata table and what the draw left out, on stderr (stdout lists files or ids)."""
    spec = draw.spec
    by = f" by {spec.stratify_by}" if spec.stratify_by else ""
    console.print(escape(f"{spec.method} draw{by}, seed {spec.seed}"), soft_wrap=True)
    for line in table:
        console.print(escape(line), soft_wrap=True, highlight=False)
    notes = []
    if draw.outside_window:
        notes.append(f"{_sessions(draw.outside_window)} outside the window")
    if draw.other_strata:
        notes.append(f"{_sessions(draw.other_strata)} in other strata")
    if without_input:
        notes.append(f"{_sessions(len(without_input))} without a user_message (nothing to replay)")
    if notes:
        console.print(escape("left out: " + "; ".join(notes)), soft_wrap=True)
