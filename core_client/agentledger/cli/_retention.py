"""``agentledger retention set|unset|list|run|log``: retention policies on a running server
(``/v1/retention``), with a key that may manage them (read_write, not bound to an agent).

``run --cases-dir DIR`` also deletes the regression case files exported from the sessions
that retention erased (this run's and every earlier sweep's in the erasure log), and lists
them. Exit codes: 0 done, 1 the server refused, 2 bad input.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from agentledger.cli._output import console as _console
from agentledger.cli._output import dump as _dump
from agentledger.cli._output import fail, missing_extra
from agentledger.cli._output import open_ledger as _ledger
from agentledger.cli.options import JsonOpt, KeyOpt, UrlOpt
from agentledger.client import Ledger, RetentionEntry

__all__ = ["retention_app", "scrub_subject_cases"]

retention_app = typer.Typer(
    name="retention",
    help="Retention policies: how long event content is kept before the server erases it.",
    no_args_is_help=True,
)

AgentOption = Annotated[
    str | None,
    typer.Option("--agent", help="The agent (default: every agent).", show_default=False),
]
DefaultOption = Annotated[
    bool, typer.Option("--default", help="The default policy (agents without their own).")
]
_OPTIONS = {"keep": "--keep", "agent": "--agent"}


def _target(agent: str | None, default: bool) -> str | None:
    """The agent a set/unset names (``None``: the default policy)."""
    if default == (agent is not None):
        raise fail("name exactly one of --agent NAME or --default", 2)
    return agent


@retention_app.command("set")
def set_(
    keep: Annotated[str, typer.Option("--keep", help="How long to keep: 30d, 12h, 90m, 2w.")],
    agent: AgentOption = None,
    default: DefaultOption = False,
    url: UrlOpt = None,
    api_key: KeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Keep an agent's (or, --default, every other agent's) event content for --keep; older
    content is erased by the server's sweep."""
    target = _target(agent, default)
    with _ledger(url, api_key, None, options=_OPTIONS) as ledger:
        policy = ledger.set_retention(keep, agent=target)
    if as_json:
        _dump(policy)
        return
    _console().print(f"{policy.agent or 'default'}: keep {policy.keep}", markup=False)


@retention_app.command("unset")
def unset(
    agent: AgentOption = None,
    default: DefaultOption = False,
    url: UrlOpt = None,
    api_key: KeyOpt = None,
) -> None:
    """Remove an agent's policy (the default applies again) or the default."""
    target = _target(agent, default)
    with _ledger(url, api_key, None, options=_OPTIONS) as ledger:
        removed = ledger.unset_retention(agent=target)
    name = agent or "default"
    _console().print(f"{name}: {'removed' if removed else 'had no policy'}", markup=False)


@retention_app.command("list")
def list_(url: UrlOpt = None, api_key: KeyOpt = None, as_json: JsonOpt = False) -> None:
    """The default and every per-agent policy."""
    with _ledger(url, api_key, None) as ledger:
        answer = ledger.retention_policies()
    if as_json:
        _dump(answer)
        return
    table = Table(title="retention policies")
    for column in ("agent", "keep", "updated"):
        table.add_column(column, no_wrap=True)
    for policy in [answer.default] if answer.default else []:
        table.add_row("(default)", policy.keep, policy.updated_at or "")
    for policy in answer.policies:
        table.add_row(policy.agent or "", policy.keep, policy.updated_at or "")
    _console().print(table)


def _entries_table(title: str, entries: list[RetentionEntry], *, when: bool) -> Table:
    table = Table(title=title)
    columns = ["agent", "rule", "keep", "events", "oldest", "newest"]
    for column in ["erased at", *columns] if when else columns:
        table.add_column(column, no_wrap=True)
    for entry in entries:
        row = [entry.agent, entry.rule, entry.keep, str(entry.erased)]
        row += [entry.oldest or "", entry.newest or ""]
        table.add_row(*([entry.finished_at or "", *row] if when else row))
    return table


def scrub_subject_cases(directory: Path, subject: str, *, dry_run: bool) -> dict[str, Any]:
    """``agentledger forget --cases-dir``: delete the case files whose subject is ``subject``
    (:func:`agentledger.cases.forget_cases`); the report as a dict."""
    try:
        from agentledger.cases import CaseError, forget_cases
    except ImportError as error:  # the case model needs pydantic
        raise missing_extra("forget --cases-dir", "langchain", error) from error
    try:
        return forget_cases(directory, subject, dry_run=dry_run).as_dict()
    except (CaseError, ValueError) as error:
        raise fail(str(error), 2) from error


def _scrub_cases(
    ledger: Ledger, directory: Path, swept: list[RetentionEntry], dry_run: bool
) -> dict[str, Any]:
    try:
        from agentledger.cases import CaseError, forget_sessions
    except ImportError as error:  # the case model needs pydantic
        raise missing_extra("retention run --cases-dir", "langchain", error) from error
    entries = list(swept)
    if not dry_run:
        entries += ledger.retention_log(limit=1000)
    pairs = {(e.agent, s) for e in entries for s in e.sessions}
    try:
        return forget_sessions(directory, pairs, dry_run=dry_run).as_dict()
    except CaseError as error:
        raise fail(str(error), 2) from error


@retention_app.command("run")
def run(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only count what would be erased.")
    ] = False,
    agent: AgentOption = None,
    cases_dir: Annotated[
        Path | None,
        typer.Option(
            "--cases-dir",
            help="Also delete the case files exported from erased sessions.",
            show_default=False,
        ),
    ] = None,
    url: UrlOpt = None,
    api_key: KeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Sweep now: erase the content of events older than their policy's window (--dry-run:
    per agent and rule, how many and the oldest/newest affected; nothing changes)."""
    if cases_dir is not None and not cases_dir.exists():
        raise fail(f"--cases-dir: {cases_dir} does not exist", 2)
    cases: dict[str, Any] | None = None
    with _ledger(url, api_key, None, options=_OPTIONS) as ledger:
        swept = ledger.run_retention(dry_run=dry_run, agent=agent)
        if cases_dir is not None:
            cases = _scrub_cases(ledger, cases_dir, swept.agents, dry_run)
    if as_json:
        _dump(dataclasses.asdict(swept) | ({"cases": cases} if cases is not None else {}))
        return
    out = _console()
    out.print(swept.message, markup=False)
    if swept.agents:
        out.print(_entries_table("would erase" if dry_run else "erased", swept.agents, when=False))
    if cases is not None:
        verb = "would delete" if dry_run else "deleted"
        for case in cases["removed"]:
            out.print(f"{verb} case file {case['path']} (case {case['case_id']})", markup=False)
        count = len(cases["removed"])
        out.print(f"{verb} {count} of {cases['scanned']} case file(s)", markup=False)


@retention_app.command("log")
def log(
    agent: AgentOption = None,
    limit: Annotated[int, typer.Option(min=1, max=1000, help="Entries, newest first.")] = 100,
    url: UrlOpt = None,
    api_key: KeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The erasure report: per sweep and agent, when, by which rule, how many events."""
    with _ledger(url, api_key, None, options=_OPTIONS) as ledger:
        entries = ledger.retention_log(agent=agent, limit=limit)
    if as_json:
        _dump({"entries": entries})
        return
    _console().print(_entries_table("erasure log", entries, when=True))
