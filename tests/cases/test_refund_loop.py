"""The README's refund example end to end: production session -> export -> run -> gate."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import httpx
import pytest
from rich.console import Console

from agentledger import cases
from agentledger.cases import ledger_target, load_cases, run_suite

from .conftest import EXAMPLE, cli

pytestmark = pytest.mark.langchain

RUN = ["--tools", "refund_tools:TOOLS"]


def test_unchanged_agent_passes_three_of_three_and_skipping_verify_fails_the_gate(
    exported_case: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(EXAMPLE)
    before = tmp_path / "before.json"
    ok = cli(
        "cases",
        "run",
        exported_case.parent,
        "--factory",
        "refund_agent:build_agent",
        *RUN,
        "--runs",
        "3",
        "--report",
        before,
    )
    assert ok.exit_code == 0, ok.output
    report = json.loads(before.read_text())
    (case,) = report["cases"]
    assert report["gate_passed"] and case["passed_runs"] == 3 and case["runs"] == 3
    assert {c["check_id"]: c["pass_rate"] for c in case["checks"]}["must_call:verify_charge"] == 1

    after = tmp_path / "after.json"
    junit = tmp_path / "junit.xml"
    bad = cli(
        "cases",
        "run",
        exported_case.parent,
        "--factory",
        "refund_agent:build_agent_skipping_verify",
        *RUN,
        "--runs",
        "3",
        "--report",
        after,
        "--baseline",
        before,
        "--junit",
        junit,
    )
    assert bad.exit_code == 1, bad.output
    case_id = json.loads(exported_case.read_text())["case_id"]
    assert case_id in bad.output and "must_call:verify_charge" in bad.output
    assert "verify_charge never called" in bad.output
    failed = json.loads(after.read_text())
    assert failed["failed_cases"] == [case_id]
    checks = {c["check_id"]: c for c in failed["cases"][0]["checks"]}
    assert checks["must_call:verify_charge"]["pass_rate"] == 0
    assert checks["must_call:verify_charge"]["actual"] == "verify_charge never called"
    assert failed["cases"][0]["first_divergence"]["step"] == 1
    assert failed["cases"][0]["first_divergence"]["expected"].startswith("verify_charge(")
    assert failed["changes"][0]["case_id"] == case_id
    assert (failed["changes"][0]["before"], failed["changes"][0]["after"]) == ("passed", "failed")
    suite = ET.parse(junit).getroot()
    assert suite.get("failures") == "1"
    failure = suite.find("testcase/failure")
    assert failure is not None and "must_call:verify_charge" in (failure.get("message") or "")


def test_flaky_candidate_is_reported_with_its_pass_rate(exported_case: Path) -> None:
    from refund_agent import build_agent, refund_model  # type: ignore[import-not-found]
    from refund_tools import TOOLS  # type: ignore[import-not-found]

    builds = itertools.count()

    def flaky(tools: list[Any]) -> Any:  # skips verify_charge on the 2nd of 3 builds
        agent = build_agent(tools)
        if next(builds) == 1:
            from langchain.agents import create_agent

            return create_agent(refund_model(verify=False), tools)
        return agent

    with ledger_target() as target:
        report = run_suite(
            load_cases(exported_case.parent), factory=flaky, tools=TOOLS, target=target, runs=3
        )
    (case,) = report.cases
    assert case.flaky and case.status() == "flaky" and not report.gate_passed
    assert case.passed_runs == 2
    assert case.checks["must_call:verify_charge"].pass_rate == pytest.approx(2 / 3)
    document = report.to_json()
    assert document["flaky_cases"] == [case.case_id]
    assert document["cases"][0]["pass_rate"] == pytest.approx(2 / 3)
    console = Console(record=True, width=200)
    cases.print_summary(report, console)
    text = console.export_text()
    assert "flaky" in text and "2/3" in text and "67%" in text


def test_a_lower_min_pass_rate_lets_a_flaky_non_safety_check_pass(exported_case: Path) -> None:
    document = json.loads(exported_case.read_text())
    document["expect"]["outcome"] = [{"contains": "refunded", "min_pass_rate": 0.5}]
    document["expect"]["must_call"] = ["lookup_order"]
    document["expect"].pop("must_call_in_order")
    exported_case.write_text(json.dumps(document))
    from langchain_core.messages import AIMessage
    from refund_agent import build_agent  # type: ignore[import-not-found]
    from refund_tools import TOOLS  # type: ignore[import-not-found]

    builds = itertools.count()

    def sometimes_terse(tools: list[Any]) -> Any:
        agent = build_agent(tools)
        if next(builds) % 2 == 0:
            return agent
        from langchain_core.runnables import RunnableLambda

        return agent | RunnableLambda(
            lambda state: {"messages": [*state["messages"][:-1], AIMessage("Done.")]}
        )

    with ledger_target() as target:
        report = run_suite(
            load_cases(exported_case.parent),
            factory=sometimes_terse,
            tools=TOOLS,
            target=target,
            runs=2,
        )
    stats = report.cases[0].checks["outcome[0]:contains"]
    assert stats.pass_rate == 0.5 and stats.met


def test_runs_use_idempotency_keys_of_run_case_and_step(
    exported_case: Path,
    ledger_server: Any,
    agent_name: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.chdir(EXAMPLE)
    report = tmp_path / "r.json"
    result = cli(
        "cases",
        "run",
        exported_case,
        "--factory",
        "refund_agent:build_agent",
        *RUN,
        "--url",
        ledger_server.url,
        "--api-key",
        ledger_server.api_key,
        "--agent-name",
        agent_name,
        "--report",
        report,
    )
    assert result.exit_code == 0, result.output
    body = json.loads(report.read_text())
    session = body["cases"][0]["run_details"][0]["session_id"]
    events = httpx.get(
        f"{ledger_server.url}/v1/sessions/{session}/events",
        params={"agent": agent_name},
        headers=ledger_server.headers(),
    ).json()
    events = events["events"] if isinstance(events, dict) else events
    keys = [e["idempotency_key"] for e in events]
    case_id = body["cases"][0]["case_id"]
    prefix = f"{body['suite_id']}/1/{case_id}/"
    assert keys and all(k.startswith(prefix) for k in keys)
    steps = [k.rsplit("/", 1)[1] for k in keys]
    # every step of the run, numbered, then the mark that the run finished
    assert steps.count("complete") == 1
    numbered = sorted(int(s) for s in steps if s != "complete")
    assert numbered == list(range(len(keys) - 1))
    assert {"tool_call", "assistant_response"} <= {e["event"] for e in events}


def test_console_script_exit_codes(exported_case: Path, tmp_path: Path) -> None:
    """The installed ``agentledger`` script: 0 on a passing gate, 2 on a bad spec."""
    exe = str(Path(sys.executable).parent / "agentledger")
    ok = subprocess.run(
        [
            exe,
            "cases",
            "run",
            str(exported_case.parent),
            "--factory",
            "refund_agent:build_agent",
            *RUN,
        ],
        cwd=EXAMPLE,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "gate passed" in ok.stdout
    bad = subprocess.run(
        [exe, "cases", "run", str(exported_case.parent), "--factory", "refund_agent:no_such", *RUN],
        cwd=EXAMPLE,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2
    assert "--factory" in bad.stderr and "no_such" in bad.stderr
