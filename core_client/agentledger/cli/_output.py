"""What every command prints through: rich consoles (whole lines when piped), one-line
errors, JSON, a ledger client whose errors end the command in plain language (``_errors``),
and a note naming a missing extra."""

from __future__ import annotations

import contextlib
import dataclasses
import sys
from collections.abc import Iterator, Mapping
from typing import Any, Final

import orjson
import typer
from rich.console import Console
from rich.markup import escape

from agentledger.cli._errors import exit_status, explain
from agentledger.client import Ledger, LedgerError

__all__ = [
    "check_agent_known",
    "console",
    "dump",
    "err",
    "fail",
    "missing_extra",
    "open_ledger",
]

#: Width of output that is not a terminal (a pipe, a file): wide enough that no line is cut.
PIPE_WIDTH: Final = 100_000


def console(*, stderr: bool = False) -> Console:
    """Output for people: a terminal's width on a terminal, whole lines in a pipe or file."""
    out = Console(stderr=stderr, highlight=False, soft_wrap=True)
    if out.is_terminal:
        return out
    return Console(stderr=stderr, highlight=False, soft_wrap=True, width=PIPE_WIDTH)


def err(message: str) -> None:
    """One ``error:`` line on stderr (never cut or wrapped off a terminal)."""
    console(stderr=True).print(f"[red]error:[/red] {escape(message)}")


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print ``message`` as the error line; the caller raises the returned exit."""
    err(message)
    return typer.Exit(code)


def missing_extra(command: str, extra: str, error: ImportError) -> typer.Exit:
    """Say which extra ``command`` needs; the caller raises the returned exit (status 2).

    Raises:
        ImportError: ``error`` itself when one of our own modules failed to import (a broken
            installation, not a missing extra).
    """
    if (error.name or "").startswith("agentledger"):
        raise error
    typer.echo(
        f"agentledger {command} needs the '{extra}' extra: "
        f"pip install 'agentledger[{extra}]' ({error})",
        err=True,
    )
    return typer.Exit(2)


@contextlib.contextmanager
def open_ledger(
    url: str | None,
    api_key: str | None,
    agent: str | None,
    *,
    options: Mapping[str, str] | None = None,
) -> Iterator[Ledger]:
    """A client without disk spill. A :class:`LedgerError` prints one plain-language line
    with the fix and exits 2 (usage, configuration) or 1 (anything else).

    Args:
        options: wire field name -> the command's option, to name it in a 422's message.
    """
    try:
        ledger = Ledger(url, api_key, agent, spill_dir=None, flush_timeout_s=1.0)
    except LedgerError as error:
        raise fail(explain(error, url or "", options), exit_status(error)) from error
    try:
        yield ledger
    except LedgerError as error:
        raise fail(explain(error, ledger.url, options), exit_status(error)) from error
    finally:
        ledger.close(timeout_s=1.0)


def check_agent_known(ledger: Ledger, agent: str | None) -> None:
    """Exit 1 with a message when ``agent`` is not among the agents the key may read (called
    when an answer came back empty, to tell "nothing yet" from "no such agent")."""
    if agent is None:
        return
    if agent not in {row.agent for row in ledger.agents()}:
        raise fail(
            f"no agent {agent!r} on the server at {ledger.url} (or the key may not read it): "
            "`agentledger agents` lists the agents there"
        )


def dump(value: Any) -> None:
    """``value`` (dataclasses included) as indented JSON on stdout."""

    def default(obj: Any) -> Any:
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            return dataclasses.asdict(obj)
        raise TypeError

    sys.stdout.write(orjson.dumps(value, default=default, option=orjson.OPT_INDENT_2).decode())
    sys.stdout.write("\n")
    sys.stdout.flush()
