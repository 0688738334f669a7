"""``agentledger demo`` (extras ``server`` and ``langchain``, imported when it runs)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from agentledger.cli._output import missing_extra

__all__ = ["demo"]


def demo(
    db: Annotated[
        Path | None,
        typer.Option(help="SQLite file of the embedded server (default: a new temp directory)."),
    ] = None,
    url: Annotated[
        str | None,
        typer.Option(help="Use this running server instead of starting one."),
    ] = None,
    api_key: Annotated[
        str | None,
        typer.Option(help="API key for --url (default: AGENTLEDGER_API_KEY)."),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            help="OpenAI-compatible model id (needs langchain-openai; OPENAI_BASE_URL and "
            "OPENAI_API_KEY are read as usual). Default: an offline scripted model."
        ),
    ] = None,
    agent: Annotated[str, typer.Option(help="Agent name to log under.")] = "support-demo",
    keep_serving: Annotated[
        bool,
        typer.Option(help="Keep the embedded server (API and dashboard) running until Ctrl-C."),
    ] = False,
) -> None:
    """Run a LangChain support agent against a ledger, then print its replay and why()."""
    try:
        from agentledger.demo import run_demo
    except ImportError as error:
        raise missing_extra("demo", "langchain", error) from error
    from agentledger.testing import EmbeddedServerError

    console = Console()
    try:
        code = run_demo(
            console=console,
            db=db,
            url=url,
            api_key=api_key,
            model=model,
            agent=agent,
            keep_serving=keep_serving,
        )
    except EmbeddedServerError as error:  # DemoError is one too
        console.print(f"[bold red]demo failed:[/] {escape(str(error))}")
        raise typer.Exit(2) from error
    raise typer.Exit(code)
