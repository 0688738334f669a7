"""What every command prints through: rich consoles, one-line errors, JSON, a ledger client
whose errors end the command with status 1, and a note naming a missing extra."""

from __future__ import annotations

import contextlib
import dataclasses
import sys
from collections.abc import Iterator
from typing import Any

import orjson
import typer
from rich.console import Console

from agentledger.client import Ledger, LedgerError

__all__ = ["console", "dump", "err", "missing_extra", "open_ledger"]


def console() -> Console:
    """Standard output for people."""
    return Console(highlight=False, soft_wrap=True)


def err(message: str) -> None:
    """One ``error:`` line on stderr."""
    Console(stderr=True, highlight=False).print(f"[red]error:[/red] {message}")


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
def open_ledger(url: str | None, api_key: str | None, agent: str | None) -> Iterator[Ledger]:
    """A client without disk spill; a :class:`LedgerError` prints one line and exits 1."""
    try:
        ledger = Ledger(url, api_key, agent, spill_dir=None, flush_timeout_s=1.0)
    except LedgerError as error:
        err(str(error))
        raise typer.Exit(1) from error
    try:
        yield ledger
    except LedgerError as error:
        err(str(error))
        raise typer.Exit(1) from error
    finally:
        ledger.close(timeout_s=1.0)


def dump(value: Any) -> None:
    """``value`` (dataclasses included) as indented JSON on stdout."""

    def default(obj: Any) -> Any:
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            return dataclasses.asdict(obj)
        raise TypeError

    sys.stdout.write(orjson.dumps(value, default=default, option=orjson.OPT_INDENT_2).decode())
    sys.stdout.write("\n")
    sys.stdout.flush()
