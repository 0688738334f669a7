"""Parts that must import without an optional dependency, checked in a fresh interpreter where
that dependency cannot be imported (a meta path finder refuses it, installed or not)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

_BLOCK = """
import importlib.abc, sys
BLOCKED = {blocked!r}
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"No module named {{name!r}} (blocked)", name=name)
        return None
sys.meta_path.insert(0, Block())
"""


def run_without(blocked: tuple[str, ...], code: str) -> subprocess.CompletedProcess[str]:
    script = _BLOCK.format(blocked=blocked) + textwrap.dedent(code)
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )


def test_the_mcp_proxy_imports_the_core_client_only() -> None:
    done = run_without(
        ("mcp",),
        """
        import sys
        from agentledger.mcp_proxy import McpProxy, run_proxy
        assert "mcp" not in sys.modules
        heavy = sorted(m for m in ("fastapi", "langchain_core", "pydantic") if m in sys.modules)
        assert heavy == [], heavy
        """,
    )
    assert done.returncode == 0, done.stderr


def test_the_mcp_server_names_its_extra() -> None:
    done = run_without(
        ("mcp",),
        """
        try:
            import agentledger.mcp_server
        except ImportError as error:
            assert "pip install 'agentledger[mcp]'" in str(error), str(error)
        else:
            raise AssertionError("imported without the MCP SDK")
        """,
    )
    assert done.returncode == 0, done.stderr


def test_testing_helpers_import_without_langchain() -> None:
    done = run_without(
        ("langchain_core", "langchain", "langgraph"),
        """
        import agentledger.testing as testing
        assert callable(testing.free_port) and testing.EmbeddedServer
        try:
            testing.ScriptedChatModel
        except ImportError as error:
            assert "pip install 'agentledger[langchain]'" in str(error), str(error)
        else:
            raise AssertionError("ScriptedChatModel without LangChain")
        """,
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("blocked", [("fastapi", "langchain_core", "mcp")])
def test_the_cli_loads_no_product_until_a_command_runs(blocked: tuple[str, ...]) -> None:
    done = run_without(
        blocked,
        """
        import sys
        from typer.testing import CliRunner
        from agentledger.cli import app
        result = CliRunner().invoke(app, ["--help"])
        assert result.exit_code == 0, result.output
        for name in ("serve", "demo", "cases", "mcp", "mcp-proxy", "why"):
            assert name in result.output, name
        loaded = sorted(m for m in sys.modules if m.startswith(
            ("agentledger.server", "agentledger.cases", "agentledger.demo", "agentledger.mcp")))
        assert loaded == [], loaded
        served = CliRunner().invoke(app, ["serve"])
        assert served.exit_code == 2
        assert "pip install 'agentledger[server]'" in served.output, served.output
        mcp = CliRunner().invoke(app, ["mcp", "--api-key", "k", "--agent", "a"])
        assert mcp.exit_code == 2 and "agentledger[mcp]" in mcp.output, mcp.output
        """,
    )
    assert done.returncode == 0, done.stderr
