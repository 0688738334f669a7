"""``examples/regression_suite`` runs as its README says (committed case, CI snippet)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

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


def _shell_steps(job: dict[str, Any]) -> list[str]:
    return [step["run"] for step in job["steps"] if "run" in step and "agentledger" in step["run"]]


@pytest.mark.parametrize("job", ["cases", "nightly"])
def test_ci_jobs_run_as_written(job: str, tmp_path: Path) -> None:
    """The workflow's shell steps, run as the runner would without the production secrets:
    the corpus is the committed case, the gates pass, the summary and reports are written."""
    workflow = yaml.safe_load((EXAMPLE / "ci.yml").read_text())
    triggers = workflow[True] if True in workflow else workflow["on"]  # YAML 1.1 reads on: as True
    assert "schedule" in triggers and "pull_request" in triggers
    sample = next(s for s in _shell_steps(workflow["jobs"]["cases"]) if "cases export" in s)
    assert "--seed 0" in sample and "--stratify-by intent" in sample  # the same PR corpus
    work = tmp_path / "cases"
    shutil.copytree(EXAMPLE / "cases", work)
    summary = tmp_path / "summary.md"
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "GITHUB_WORKSPACE": str(tmp_path),
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_RUN_ID": "",
        "AGENTLEDGER_URL": "",
        "AGENTLEDGER_API_KEY": "",
        "PYTHONPATH": str(EXAMPLE),
    }
    for script in _shell_steps(workflow["jobs"][job]):
        done = subprocess.run(
            ["bash", "-e", "-c", script.replace(" cases \\\n", f" {work} \\\n")],
            cwd=EXAMPLE,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(next(tmp_path.glob("*-report.json")).read_text())
    assert report["gate_passed"] and {g["gate"] for g in report["gates"]} >= {"max_truncations"}
    assert "gate passed" in summary.read_text()


def _readme_block(marker: str) -> str:
    """The README's bash block holding ``marker``, its continuation lines joined."""
    readme = (EXAMPLE.parents[1] / "README.md").read_text()
    block = next(b for b in readme.split("```bash\n")[1:] if marker in b.split("```")[0])
    return block.split("```")[0].replace("\\\n", " ")


@pytest.mark.parametrize(("prompt", "code"), [("refund_fast", 1), ("production", 0)])
def test_the_readme_prompt_change_command_gates_as_it_says(
    prompt: str, code: int, tmp_path: Path
) -> None:
    """README "Regression tests from production sessions": the prompt-change command, run
    as written in the example directory; the prompt without the verification fails."""
    command = _readme_block("--system-prompt prompts/refund_fast.txt").strip()
    command = command.replace("prompts/refund_fast.txt", f"prompts/{prompt}.txt")
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    work = tmp_path / "example"
    shutil.copytree(EXAMPLE, work, ignore=shutil.ignore_patterns("__pycache__"))
    done = subprocess.run(
        ["bash", "-c", command], cwd=work, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == code, done.stdout + done.stderr
    report = json.loads((work / "report.json").read_text())
    assert report["gate_passed"] is (code == 0)
    summary = (work / "summary.md").read_text()
    assert ("gate passed" if code == 0 else "gate failed") in summary
    if code:
        assert "must_call:verify_charge" in done.stdout
