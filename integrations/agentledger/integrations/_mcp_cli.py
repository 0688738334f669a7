"""``agentledger mcp`` (the ledger as MCP tools) and ``agentledger mcp-proxy`` (log another MCP
server's tool calls).

Registered by the root CLI (``agentledger.client._cli``) through :func:`register`. ``mcp`` needs
the ``mcp`` extra (the official SDK) and says so when it is missing; ``mcp-proxy`` speaks raw
JSON-RPC and needs only the core client. Both keep stdout for the protocol: messages for people
go to stderr.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import Annotated

import typer

from agentledger.client import AsyncLedger, ConfigurationError, Ledger
from agentledger.client._cli.commands import AgentOpt, KeyOpt, UrlOpt

__all__ = ["register"]

#: How long the proxy waits at exit for queued events to be sent or spilled (seconds).
PROXY_FLUSH_TIMEOUT_S = 3.0


def _stderr_logging() -> None:
    """The ``agentledger`` logger to stderr (stdout carries JSON-RPC)."""
    log = logging.getLogger("agentledger")
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("agentledger %(levelname)s %(name)s: %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.WARNING)


def _fail(message: str, code: int = 2) -> typer.Exit:
    typer.echo(f"agentledger: {message}", err=True)
    return typer.Exit(code)


def mcp(url: UrlOpt = None, api_key: KeyOpt = None, agent: AgentOpt = None) -> None:
    """Serve the ledger as MCP tools over stdio (why, impact, replay, search, verify, log...)."""
    try:
        from agentledger.integrations.mcp import serve_stdio
    except ImportError as error:
        raise _fail(str(error)) from error
    _stderr_logging()
    try:
        ledger = AsyncLedger(url, api_key, agent)
    except ConfigurationError as error:
        raise _fail(str(error)) from error
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
) -> None:
    """Run an MCP server as a child and log its tool calls (messages pass unchanged)."""
    from agentledger.integrations._mcp_proxy import McpProxyError, run_proxy

    _stderr_logging()
    try:
        ledger = Ledger(url, api_key, agent, flush_timeout_s=PROXY_FLUSH_TIMEOUT_S)
    except ConfigurationError as error:
        raise _fail(str(error)) from error
    if ledger.agent is None:
        ledger.close(timeout_s=0)
        raise _fail("no agent: pass --agent or set AGENTLEDGER_AGENT")
    try:
        code = run_proxy(command, ledger, session_id=session)
    except McpProxyError as error:
        raise _fail(str(error), getattr(error, "exit_code", 127)) from error
    finally:
        ledger.close(timeout_s=PROXY_FLUSH_TIMEOUT_S)
    raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    """Add ``mcp`` and ``mcp-proxy`` to the root ``agentledger`` app.

    Args:
        app: the root typer app (``agentledger.client._cli.app``).
    """
    app.command("mcp")(mcp)
    app.command("mcp-proxy")(mcp_proxy)
