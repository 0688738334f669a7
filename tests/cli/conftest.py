"""Fixtures of the command-line tests: ``cli`` runs ``agentledger`` in process (typer's runner,
stdout not a terminal, like a pipe) with no ``AGENTLEDGER_*`` variable set unless a test sets
one, and ``seeded`` logs one session to the real test server."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from click.testing import Result
from typer.testing import CliRunner

from agentledger.cli import app
from agentledger.client import Ledger

Cli = Callable[..., Result]


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> Cli:
    """``cli(*args, env={...}, input=...)``: the command's result (exit code, stdout, stderr)."""
    for name in list(os.environ):
        if name.startswith("AGENTLEDGER_"):
            monkeypatch.delenv(name)

    def run(*args: Any, env: dict[str, str] | None = None, input: str | None = None) -> Result:
        return CliRunner().invoke(app, [str(a) for a in args], env=env, input=input)

    return run


@dataclass
class Seeded:
    url: str
    api_key: str
    agent: str
    session: str
    ids: list[str]

    @property
    def args(self) -> list[str]:
        """``--url`` and ``--api-key`` of the test server."""
        return ["--url", self.url, "--api-key", self.api_key]

    @property
    def env(self) -> dict[str, str]:
        """The same server, and the agent, as environment variables."""
        return {
            "AGENTLEDGER_URL": self.url,
            "AGENTLEDGER_API_KEY": self.api_key,
            "AGENTLEDGER_AGENT": self.agent,
        }


@pytest.fixture
def seeded(ledger_server: Any, agent_name: str) -> Seeded:
    """One session of the agent: a user message, a tool call and its failed result, a state
    value (for ``at``), with an e-mail address in the first event (for ``forget``)."""
    session = f"s-{agent_name}"
    with Ledger(ledger_server.url, ledger_server.api_key, agent_name, spill_dir=None) as ledger:
        root = ledger.log(
            "user_message",
            {"text": f"refund order 42 {agent_name}", "email": f"{agent_name}@example.com"},
            session_id=session,
        )
        call = ledger.log_tool("lookup_order", {"id": 42}, parent_id=root, session_id=session)
        end = ledger.log_tool_result(
            "lookup_order", error=ValueError("no such order"), parent_id=call, session_id=session
        )
        state = ledger.log("state_set", {"key": "plan", "value": "gold"}, session_id=session)
        assert ledger.flush(10).complete
    return Seeded(
        ledger_server.url,
        ledger_server.api_key,
        agent_name,
        session,
        [root.event_id, call.event_id, end.event_id, state.event_id],
    )
