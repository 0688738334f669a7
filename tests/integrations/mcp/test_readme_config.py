"""The README's MCP client configs, run as an editor would run them: the ``mcpServers`` JSON
blocks are read from README.md, their placeholders (script path, URL, key) pointed at this
environment, and the command started by the SDK's stdio client exactly as configured."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters, stdio_client

from _events import Stored, read_events
from _servers import ServerProcess, agentledger_executable
from agentledger.client import vocabulary as v

from .conftest import text_of

pytestmark = pytest.mark.mcp

ROOT = Path(__file__).resolve().parents[3]
README_SCRIPT = "/path/to/.venv/bin/agentledger"
README_URL = "http://127.0.0.1:8765"
README_KEY = "dev-local-key"


def readme_configs() -> dict[str, dict[str, Any]]:
    """Every server entry of the README's ``mcpServers`` JSON blocks, by name."""
    section = (ROOT / "README.md").read_text().split("## MCP", 1)[1].split("\n## ", 1)[0]
    servers: dict[str, dict[str, Any]] = {}
    for block in re.findall(r"```json\n(.*?)```", section, re.DOTALL):
        servers.update(json.loads(block)["mcpServers"])
    return servers


def as_configured(
    entry: dict[str, Any], server: ServerProcess, tmp_path: Path
) -> StdioServerParameters:
    """The entry with the README's placeholders replaced by this environment's values."""

    def here(value: str) -> str:
        return (
            value.replace(README_SCRIPT, agentledger_executable())
            .replace(README_URL, server.url)
            .replace(README_KEY, server.api_key)
        )

    assert entry["command"] == README_SCRIPT
    env = {k: here(v) for k, v in entry.get("env", {}).items()}
    env["AGENTLEDGER_SPILL_DIR"] = str(tmp_path / "spill")
    base = {k: v for k, v in os.environ.items() if not k.startswith("AGENTLEDGER_")}
    return StdioServerParameters(
        command=here(entry["command"]),
        args=[here(a) for a in entry["args"]],
        env={**base, **env},
    )


async def test_readme_agentledger_mcp_config_works(
    ledger_server: ServerProcess, tmp_path: Path
) -> None:
    params = as_configured(readme_configs()["agentledger"], ledger_server, tmp_path)
    with open(tmp_path / "stderr.log", "w") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            logged = await client.call_tool(
                "log_event", {"event": "user_message", "data": {"text": "from the README"}}
            )
            assert logged.structured_content["stored"] is True, text_of(logged)
            why = await client.call_tool("why", {"event_id": logged.structured_content["event_id"]})
    assert "from the README" in text_of(why)
    assert logged.structured_content["agent"] == "support-bot"


def test_readme_names_an_absolute_script_path_and_every_tool() -> None:
    configs = readme_configs()
    assert set(configs) >= {"agentledger", "filesystem"}
    readme = (ROOT / "README.md").read_text()
    from agentledger.mcp_server import TOOL_NAMES

    for name in TOOL_NAMES:
        assert f"`{name}(" in readme, name


async def test_readme_mcp_proxy_config_works(
    ledger_server: ServerProcess, tmp_path: Path, agent_name: str
) -> None:
    """The README's proxy entry, with the wrapped server swapped for the test's SDK server
    (no npx here) and the README's agent name for this test's own."""
    entry = dict(readme_configs()["filesystem"])
    args = list(entry["args"])
    split = args.index("--")
    assert args[0] == "mcp-proxy" and args[split + 1] == "npx"
    child = [sys.executable, str(Path(__file__).with_name("proxy_child.py")), "sdk"]
    entry["args"] = [agent_name if a == "fs-tools" else a for a in args[: split + 1]] + child
    params = as_configured(entry, ledger_server, tmp_path)
    with open(tmp_path / "stderr.log", "w") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            added = await client.call_tool("add", {"a": 2, "b": 3})
    assert added.structured_content == {"sum": 5}
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        stored = Stored(read_events(ledger_server.url, ledger_server.headers(), agent_name))
        if stored.of(v.SESSION_END):
            break
        await asyncio.sleep(0.1)
    call = stored.one(v.TOOL_CALL, tool="add")
    result = stored.one(v.TOOL_RESULT, tool="add")
    assert call["data"]["args"] == {"a": 2, "b": 3}
    assert result["parent_id"] == call["event_id"]
    assert result["data"]["result"] == {"sum": 5}
