"""``agentledger mcp`` (the ledger as MCP tools, extra ``mcp``) and ``agentledger mcp-proxy``
(log another MCP server's tool calls; core client only). Both keep stdout for the protocol:
messages for people go to stderr."""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import Annotated, Any

import typer

from agentledger.cli._errors import NO_AGENT, explain
from agentledger.cli.options import AgentOpt, KeyOpt, UrlOpt
from agentledger.client import AsyncLedger, ConfigurationError, Ledger

__all__ = ["mcp", "mcp_proxy"]


def _stderr_logging() -> None:
    """The ``agentledger`` logger to stderr (stdout carries JSON-RPC)."""
    log = logging.getLogger("agentledger")
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("agentledger %(levelname)s %(name)s: %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.WARNING)
        log.propagate = False  # the MCP SDK puts its own handler on the root logger


def _fail(message: str, code: int = 2) -> typer.Exit:
    typer.echo(f"agentledger: {message}", err=True)
    return typer.Exit(code)


def mcp(url: UrlOpt = None, api_key: KeyOpt = None, agent: AgentOpt = None) -> None:
    """Serve the ledger as MCP tools over stdio (why, impact, replay, search, verify, log...)."""
    try:
        from agentledger.mcp_server import serve_stdio
    except ImportError as error:
        raise _fail(str(error)) from error
    _stderr_logging()
    try:
        ledger = AsyncLedger(url, api_key, agent)
    except ConfigurationError as error:
        raise _fail(explain(error, url or "")) from error
    asyncio.run(serve_stdio(ledger))


def mcp_proxy(
    command: Annotated[
        list[str],
        typer.Argument(
            help="The MCP server to run and log, after --, e.g. -- npx -y server-filesystem /tmp",
            show_default=False,
        ),
    ],
    url: UrlOpt = None,
    api_key: KeyOpt = None,
    agent: AgentOpt = None,
    session: Annotated[
        str | None,
        typer.Option(help="Session id for this run (default: a new mcp-proxy-<uuid>)."),
    ] = None,
    spill_dir: Annotated[
        str | None,
        typer.Option(
            help="Disk spill for events the ledger cannot take now (default: the client's, "
            "env AGENTLEDGER_SPILL_DIR).",
            show_default=False,
        ),
    ] = None,
    no_spill: Annotated[
        bool, typer.Option("--no-spill", help="No disk spill: undeliverable events are dropped.")
    ] = False,
    flush_timeout: Annotated[
        float,
        typer.Option(
            help="Longest final flush after the server exits, seconds (MCP hosts send SIGTERM "
            "about 2 s after closing stdin).",
            min=0.0,
        ),
    ] = 1.0,
) -> None:
    """Run an MCP server as a child and log its tool calls (messages pass unchanged).

    Exit status: the child's (128+N when signal N ended it), 127/126 when the command cannot
    be found/executed, 2 for a usage or configuration error.
    """
    from agentledger.mcp_proxy import ChildStartError, run_proxy

    _stderr_logging()
    if not command:
        raise _fail("give the MCP server command after --")
    spill: dict[str, Any] = {"spill_dir": None} if no_spill else {}
    if spill_dir is not None and not no_spill:
        spill["spill_dir"] = spill_dir
    try:
        ledger = Ledger(url, api_key, agent, **spill)
    except ConfigurationError as error:
        raise _fail(explain(error, url or "")) from error
    if ledger.agent is None:
        ledger.close(timeout_s=0)
        raise _fail(NO_AGENT)
    try:
        code = run_proxy(command, ledger, session_id=session, flush_timeout_s=flush_timeout)
    except ChildStartError as error:
        raise _fail(f"mcp-proxy: {error}", error.exit_code) from error
    finally:
        ledger.close(timeout_s=0.0)  # what the final flush could not send goes to the spill
    raise typer.Exit(code)
