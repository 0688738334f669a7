"""The ``agentledger`` command line (console script ``agentledger = agentledger.cli:main``).

The only package that may import every other part of agentledger. Each command's module
imports its product (server, cases, demo, MCP server or proxy) inside the command function,
so ``agentledger --help`` stays fast and a command whose extra is missing says which one to
install. How the commands are laid out: ``docs/design/cli.md``.
"""

from __future__ import annotations

import typer

from agentledger.cli import (
    _client_commands,
    _decision_commands,
    _lineage_commands,
    _memory_commands,
    _query_commands,
)
from agentledger.cli._cases_commands import cases_app
from agentledger.cli._cases_forget import cases_forget
from agentledger.cli._cases_replay import replay as cases_replay
from agentledger.cli._demo_commands import demo
from agentledger.cli._evidence_commands import evidence
from agentledger.cli._keys_commands import keys_app
from agentledger.cli._mcp_commands import mcp, mcp_proxy
from agentledger.cli._retention import retention_app
from agentledger.cli._server_commands import keys_admin, serve
from agentledger.cli._signing_commands import signing_app

__all__ = ["app", "main"]

app = typer.Typer(
    name="agentledger",
    help="agentledger: an operational database for LLM agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

_lineage_commands.register(app)
_decision_commands.register(app)
_client_commands.register(app)
_query_commands.register(app)
_memory_commands.register(app)
app.add_typer(keys_app, name="keys")
app.add_typer(retention_app, name="retention")
app.add_typer(signing_app, name="signing")
app.command("serve")(serve)
app.command("keys-admin")(keys_admin)
app.command("demo")(demo)
app.command("evidence")(evidence)
cases_app.command("forget")(cases_forget)
cases_app.command("replay")(cases_replay)
app.add_typer(cases_app, name="cases")
app.command("mcp")(mcp)
app.command("mcp-proxy")(mcp_proxy)


def main() -> None:
    """Entry point of the ``agentledger`` console script."""
    app()
