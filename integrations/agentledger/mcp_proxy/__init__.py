"""The MCP stdio proxy behind ``agentledger mcp-proxy``: it runs an MCP server as a child,
forwards every byte unchanged and logs the tool calls it sees to the ledger.

It speaks raw JSON-RPC and imports only the core client, never the MCP SDK, so it works
without the ``mcp`` extra. Design notes: ``docs/design/mcp.md``.
"""

from __future__ import annotations

from agentledger.mcp_proxy._calls import ProxyStats
from agentledger.mcp_proxy._proxy import (
    DEFAULT_FLUSH_TIMEOUT_S,
    DEFAULT_MAX_LINE_BYTES,
    DEFAULT_MAX_LOG_QUEUE_BYTES,
    DEFAULT_MAX_PENDING_CALLS,
    ChildStartError,
    McpProxy,
    McpProxyError,
    run_proxy,
)

__all__ = [
    "DEFAULT_FLUSH_TIMEOUT_S",
    "DEFAULT_MAX_LINE_BYTES",
    "DEFAULT_MAX_LOG_QUEUE_BYTES",
    "DEFAULT_MAX_PENDING_CALLS",
    "ChildStartError",
    "McpProxy",
    "McpProxyError",
    "ProxyStats",
    "run_proxy",
]
