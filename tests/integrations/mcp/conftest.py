"""Fixtures: ``agentledger mcp`` as a real stdio child driven by the ``mcp`` SDK's client.

The MCP client is the official one (``mcp.Client`` over ``StdioServerParameters``), the server
is the installed console script, the ledger is the session's real ``agentledger serve``.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters, stdio_client

from _servers import agentledger_executable

McpFactory = Callable[..., AbstractAsyncContextManager[Client]]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """Our environment without AGENTLEDGER_* settings, spilling into ``tmp_path``."""
    return {
        **{k: val for k, val in os.environ.items() if not k.startswith("AGENTLEDGER_")},
        "AGENTLEDGER_SPILL_DIR": str(tmp_path / "spill"),
    }


@pytest.fixture
def mcp_client(tmp_path: Path, env: dict[str, str]) -> McpFactory:
    """``async with mcp_client(url=..., api_key=..., agent=...) as client``: a connected
    MCP client session with ``agentledger mcp`` in :func:`env` (stderr kept in
    ``tmp_path/mcp-stderr.log``)."""

    @asynccontextmanager
    async def connect(
        *, url: str, api_key: str | None, agent: str | None, **extra_env: str
    ) -> AsyncIterator[Client]:
        args = ["mcp", "--url", url]
        if api_key is not None:
            args += ["--api-key", api_key]
        if agent is not None:
            args += ["--agent", agent]
        environment = {**env, **extra_env}
        params = StdioServerParameters(command=agentledger_executable(), args=args, env=environment)
        with open(tmp_path / "mcp-stderr.log", "ab") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                yield client

    return connect


def text_of(result: Any) -> str:
    """The text blocks of a ``CallToolResult``, joined."""
    return "\n".join(block.text for block in result.content if getattr(block, "type", "") == "text")
