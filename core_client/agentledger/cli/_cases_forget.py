"""``agentledger cases forget``: delete the case files exported from a subject's sessions.

Exit codes: 0 done (also when nothing matched: the report says so); 2 bad input (a missing
directory, an invalid case file, an empty subject). ``--json`` prints the erasure report.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from agentledger.cli._output import missing_extra

__all__ = ["cases_forget"]


def cases_forget(
    directory: Annotated[Path, typer.Argument(help="Case directory (searched recursively).")],
    subject: Annotated[
        str,
        typer.Option(
            "--subject",
            help="The subject's value (user id, email...) or a sha256: subject reference.",
        ),
    ],
    dry_run: Annotated[bool, typer.Option(help="Only report what would be deleted.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Delete the case files (and their own cassettes) exported from a subject's sessions."""
    try:
        from agentledger.cases import CaseError, forget_cases
    except ImportError as error:  # the case model needs pydantic
        raise missing_extra("cases forget", "langchain", error) from error

    console = Console(stderr=True)
    try:
        outcome = forget_cases(directory, subject, dry_run=dry_run)
    except (CaseError, ValueError) as error:
        console.print(f"[bold red]error:[/] {escape(str(error))}", soft_wrap=True)
        raise typer.Exit(2) from error
    if as_json:
        typer.echo(json.dumps(outcome.as_dict(), indent=2))
        return
    verb = "would delete" if dry_run else "deleted"
    for case in outcome.removed:
        extra = f" and {case.cassette}" if case.cassette else ""
        typer.echo(
            f"{verb} {case.path}{extra} (case {case.case_id}; matched {', '.join(case.matched)})"
        )
    console.print(
        f"{verb} {len(outcome.removed)} of {outcome.scanned} case file(s) for this subject",
        soft_wrap=True,
    )
