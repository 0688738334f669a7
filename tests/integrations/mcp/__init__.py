"""MCP server and proxy tests; skipped cleanly when the ``mcp`` extra is not installed."""

import pytest

pytest.importorskip("mcp", reason="needs pip install 'agentledger[mcp]'")
