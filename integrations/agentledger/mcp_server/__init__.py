"""The MCP server: the ledger as tools for an editor or another agent (``agentledger mcp``).

:func:`create_server` builds an ``MCPServer`` (official ``mcp`` SDK, extra ``mcp``) whose tools
(:data:`TOOL_NAMES`) read and log through one :class:`~agentledger.client.AsyncLedger`;
:func:`serve_stdio` runs it over stdio. Design notes: ``docs/design/mcp.md``.
"""

from __future__ import annotations

from typing import Final

try:
    from mcp.server.mcpserver import MCPServer
    from mcp.types import ToolAnnotations
except ImportError as error:  # pragma: no cover - exercised without the extra only
    raise ImportError(
        "agentledger.mcp_server needs the MCP SDK: pip install 'agentledger[mcp]'"
    ) from error

from agentledger.client import AsyncLedger
from agentledger.mcp_server._tools import LedgerTools

__all__ = [
    "SERVER_NAME",
    "TOOL_NAMES",
    "LedgerTools",
    "create_server",
    "serve_stdio",
]

#: The server name MCP clients show.
SERVER_NAME: Final = "agentledger"

_INSTRUCTIONS: Final = (
    "agentledger stores every step of an LLM agent (messages, model calls, tool calls and "
    "results, retrievals, graph steps) as events linked to the event that caused them. Start "
    "with list_sessions or search_events to find a session or an event, replay_session to read "
    "it, why(event_id) to walk back from a wrong answer to its root cause, impact(event_id) to "
    "see what a bad step contaminated. verify_chain checks the tamper-evident hash chain; "
    "get_baseline compares recent behaviour with the agent's baseline; state_at shows the "
    "agent's key/value state at a past time; log_event records a new event."
)

_READ: Final = ToolAnnotations(read_only_hint=True, open_world_hint=False)
_WRITE: Final = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)

#: (tool name, title, annotations) in the order ``tools/list`` returns them.
_TOOLS: Final = (
    ("why", "Why did this event happen?", _READ),
    ("impact", "What did this event cause?", _READ),
    ("replay_session", "Replay a session", _READ),
    ("list_sessions", "List recent sessions", _READ),
    ("search_events", "Search events", _READ),
    ("verify_chain", "Verify the hash chain", _READ),
    ("log_event", "Log an event", _WRITE),
    ("get_baseline", "Behaviour drift against the baseline", _READ),
    ("state_at", "Agent state at a time", _READ),
)

#: Names of the tools every server made by :func:`create_server` offers.
TOOL_NAMES: Final = tuple(name for name, _, _ in _TOOLS)


def create_server(ledger: AsyncLedger, *, name: str = SERVER_NAME) -> MCPServer:
    """An MCP server whose tools read and write through ``ledger``.

    Args:
        ledger: the async client (URL, API key and default agent); the caller closes it
            (``await ledger.aclose()``) after the server stops.
        name: server name shown by MCP clients.

    Returns:
        An ``mcp.server.mcpserver.MCPServer``; run it with ``await server.run_stdio_async()``
        or mount it over HTTP as the SDK allows. Each server holds its own
        :class:`LedgerTools` (per-session parents for ``log_event``), nothing global.
    """
    tools = LedgerTools(ledger)
    server: MCPServer = MCPServer(name=name, instructions=_INSTRUCTIONS, log_level="WARNING")
    for tool_name, title, hints in _TOOLS:
        server.add_tool(getattr(tools, tool_name), name=tool_name, title=title, annotations=hints)
    return server


async def serve_stdio(ledger: AsyncLedger, *, name: str = SERVER_NAME) -> None:
    """Serve the ledger tools over stdio until the client closes stdin, then close ``ledger``
    (pending events are flushed within its ``flush_timeout_s``, seconds).

    Args:
        ledger: as for :func:`create_server`; closed on return.
        name: server name shown by MCP clients.
    """
    server = create_server(ledger, name=name)
    try:
        await server.run_stdio_async()
    finally:
        await ledger.aclose()
