"""``examples/regression_suite`` runs as its README says (committed case, CI snippet)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from agentledger.cases import load_cases

from .conftest import EXAMPLE, cli

pytestmark = pytest.mark.langchain


def test_committed_case_passes_and_the_skipping_candidate_fails(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(EXAMPLE)
    ((path, case),) = load_cases("cases")
    assert case.case_id == "refund-bot-duplicate-charge" and "Dana" not in path.read_text()
    ok = cli(
        "cases",
        "run",
        "cases",
        "--factory",
        "refund_agent:build_agent",
        "--tools",
        "refund_tools:TOOLS",
        "--runs",
        "3",
        "--report",
        tmp_path / "r.json",
    )
    assert ok.exit_code == 0, ok.output
    assert json.loads((tmp_path / "r.json").read_text())["cases"][0]["passed_runs"] == 3
    bad = cli(
        "cases",
        "run",
        "cases",
        "--factory",
        "refund_agent:build_agent_skipping_verify",
        "--tools",
        "refund_tools:TOOLS",
    )
    assert bad.exit_code == 1
    assert "case refund-bot-duplicate-charge: 0/1 runs passed" in bad.output
    assert "check must_call:verify_charge" in bad.output


def test_ci_snippet_runs_the_documented_command() -> None:
    workflow = yaml.safe_load((EXAMPLE / "ci.yml").read_text())
    steps = workflow["jobs"]["cases"]["steps"]
    run = next(s["run"] for s in steps if "agentledger cases run" in s.get("run", ""))
    assert "--factory refund_agent:build_agent" in run and "--junit" in run
    readme = (EXAMPLE / "README.md").read_text()
    assert "Turn production sessions into regression tests" in readme
    assert "agentledger cases export --agent refund-bot --session duplicate-charge" in readme
