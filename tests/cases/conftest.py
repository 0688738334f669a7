"""Fixtures: the refund example's live stand-in service, a production session logged to a
real server, and its exported case.

The example modules (``examples/regression_suite``) are imported by name, as the CLI does
with ``--factory refund_agent:build_agent`` from that directory.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentledger.cases import ExportResult, export_cases
from agentledger.cli import app
from agentledger.client import Ledger
from agentledger.integrations.langchain import LedgerCallbackHandler

from . import model_server, replay_agent

pytestmark = pytest.mark.langchain

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "regression_suite"
if str(EXAMPLE) not in sys.path:
    sys.path.insert(0, str(EXAMPLE))

import payments_service  # noqa: E402
import production  # noqa: E402


def cli(*args: str) -> Any:
    """Run the real ``agentledger`` typer app in-process."""
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture
def payments() -> Iterator[str]:
    """The live stand-in payments service; yields its URL."""
    with payments_service.serve() as url:
        yield url


@dataclass
class Production:
    """A production session on a real server and how to reach it."""

    url: str
    api_key: str
    agent: str
    session: str

    def args(self) -> list[str]:
        return ["--url", self.url, "--api-key", self.api_key, "--agent", self.agent]


@pytest.fixture
def production_session(ledger_server: Any, payments: str, agent_name: str) -> Production:
    """The refund agent with its real tools (hitting the live service), logged."""
    session = production.run_production_session(
        ledger_server.url, ledger_server.api_key, agent_name, payments
    )
    return Production(ledger_server.url, ledger_server.api_key, agent_name, session)


@pytest.fixture
def exported_case(production_session: Production, tmp_path: Path) -> Path:
    """The production session exported with ``agentledger cases export``; an outcome
    validator is added as a reviewer would."""
    out = tmp_path / "cases"
    result = cli(
        "cases",
        "export",
        *production_session.args(),
        "--session",
        production_session.session,
        "--out",
        out,
    )
    assert result.exit_code == 0, result.output
    (path,) = out.glob("*.json")
    document = json.loads(path.read_text())
    document["expect"]["outcome"] = [
        {"contains": "refunded the duplicate charge"},
        {"not_contains": "4242"},
        {"regex": r"refund re_\d{4}"},
    ]
    path.write_text(json.dumps(document, indent=2))
    return path


@pytest.fixture(autouse=True)
def _no_pipeline_run_id(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs outside a CI pipeline unless a test says otherwise: under a pipeline's run id every
    ``cases run`` of the same factory would read the previous test's runs back."""
    for name in ("GITHUB_RUN_ID", "CI_PIPELINE_ID", "BUILDKITE_BUILD_ID", "CIRCLE_WORKFLOW_ID"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def model() -> Iterator[model_server.ModelServer]:
    with model_server.serve() as server:
        replay_agent.BASE_URL = server.base_url
        yield server
    replay_agent.BASE_URL = ""


def record_and_export(
    server: Any, agent: str, out: Path, sessions: list[str], record: Callable[[Ledger], None]
) -> ExportResult:
    """``record(ledger)`` logs ``sessions`` to the real server; they are flushed (all stored)
    and exported as cases into ``out``."""
    ledger = Ledger(url=server.url, api_key=server.api_key, agent=agent, spill_dir=None)
    try:
        record(ledger)
        assert ledger.flush(timeout_s=10).complete
        return export_cases(ledger, agent=agent, sessions=sessions, out=out)
    finally:
        ledger.close(timeout_s=5)


@pytest.fixture
def case_dir(
    ledger_server: Any, model: model_server.ModelServer, agent_name: str, tmp_path: Path
) -> Path:
    """One production session of the refund agent (production prompt), exported as a case."""

    def record(ledger: Ledger) -> None:
        handler = LedgerCallbackHandler(ledger, session_id="prod-1")
        agent = replay_agent.build(replay_agent.TOOLS)
        agent.invoke(
            {"messages": [{"role": "user", "content": "I was charged twice for order A1234"}]},
            config={"callbacks": [handler]},
        )

    out = tmp_path / "cases"
    result = record_and_export(ledger_server, agent_name, out, ["prod-1"], record)
    assert len(result.files) == 1, result.skipped
    return out
