"""Old path of :mod:`agentledger.mcp_server` and :mod:`agentledger.mcp_proxy`; the same names,
re-exported. Needs the ``mcp`` extra, as before."""

from __future__ import annotations

from agentledger.mcp_proxy import (
    ChildStartError,
    McpProxy,
    McpProxyError,
    ProxyStats,
    run_proxy,
)
from agentledger.mcp_server import (
    SERVER_NAME,
    TOOL_NAMES,
    LedgerTools,
    create_server,
    serve_stdio,
)

__all__ = [
    "SERVER_NAME",
    "TOOL_NAMES",
    "ChildStartError",
    "LedgerTools",
    "McpProxy",
    "McpProxyError",
    "ProxyStats",
    "create_server",
    "run_proxy",
    "serve_stdio",
]
