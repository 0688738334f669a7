"""The one ``agentledger`` command line.

Client commands (``why``, ``replay``, ``verify``, ``export``, ``import``, ``tail``...) live in
this package. Commands of optional parts register themselves when their extra is installed:

* ``agentledger.server._cli.register(app)`` adds ``serve`` (extra ``server``);
* ``agentledger.integrations._cli.register(app)`` adds ``demo``, ``cases`` (extra ``langchain``);
* ``agentledger.integrations._mcp_cli.register(app)`` adds ``mcp`` (extra ``mcp``, checked when
  it runs) and ``mcp-proxy`` (core client only).

A part whose extra is missing is replaced by a command that names the extra to install, so
``agentledger serve`` without ``agentledger[server]`` says ``pip install 'agentledger[server]'``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

import typer

__all__ = ["app", "main"]

app = typer.Typer(
    name="agentledger",
    help="agentledger: an operational database for LLM agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# (module, extra, commands it provides): each module exposes ``register(app)``.
_PARTS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("agentledger.client._cli.commands", "", ()),
    ("agentledger.client._cli.query_commands", "", ()),
    ("agentledger.server._cli", "server", ("serve",)),
    ("agentledger.integrations._cli", "langchain", ("demo", "cases")),
    ("agentledger.integrations._mcp_cli", "", ()),
)


def _missing(name: str, extra: str, error: ImportError) -> Callable[[], None]:
    def command() -> None:
        typer.echo(
            f"agentledger {name} needs the '{extra}' extra: "
            f"pip install 'agentledger[{extra}]' ({error})",
            err=True,
        )
        raise typer.Exit(2)

    command.__doc__ = f"(needs pip install 'agentledger[{extra}]')"
    return command


def _register_parts() -> None:
    for module_name, extra, commands in _PARTS:
        try:
            module = importlib.import_module(module_name)
        except ImportError as error:
            if not extra or (error.name or "").startswith("agentledger"):
                # The part itself does not exist (yet): nothing to register.
                continue
            for name in commands:
                app.command(name)(_missing(name, extra, error))
            continue
        module.register(app)


_register_parts()


def main() -> None:
    """Entry point of the ``agentledger`` console script."""
    app()
