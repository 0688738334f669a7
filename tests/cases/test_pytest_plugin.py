"""The pytest plugin, run in a child pytest (as CI would), and its inertness."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import EXAMPLE

pytestmark = pytest.mark.langchain

PLUGIN = "agentledger.cases.pytest_plugin"


def child_pytest(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    ini = tmp_path / "pytest.ini"
    ini.write_text("[pytest]\n")
    env = {**os.environ, "PYTHONPATH": str(EXAMPLE)}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-c",
            str(ini),
            "--rootdir",
            str(tmp_path),
            # the plugin itself comes from the ``pytest11`` entry point of the installed package
            "-p",
            "no:cacheprovider",
            "-q",
            *args,
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_one_item_per_case_passing_and_failing(exported_case: Path, tmp_path: Path) -> None:
    case_id = json.loads(exported_case.read_text())["case_id"]
    bad = exported_case.parent / "broken.json"
    bad.write_text(
        json.dumps({"case_id": "broken", "inputs": ["x"], "expect": {"must_call": [{"tool": ""}]}})
    )
    common = [
        "--agentledger-cases",
        str(exported_case.parent),
        "--agentledger-tools",
        "refund_tools:TOOLS",
        "--agentledger-runs",
        "2",
        "-rA",
    ]
    good = child_pytest(tmp_path, *common, "--agentledger-agent", "refund_agent:build_agent")
    out = good.stdout + good.stderr
    assert good.returncode == 1, out  # the broken file fails its own item
    assert f"PASSED cases::test_case[{case_id}]" in out
    assert "FAILED cases::test_case[broken]" in out
    assert "field 'expect.must_call.0.tool'" in out

    bad.unlink()
    skipping = child_pytest(
        tmp_path, *common, "--agentledger-agent", "refund_agent:build_agent_skipping_verify"
    )
    out = skipping.stdout + skipping.stderr
    assert skipping.returncode == 1, out
    assert f"case {case_id}: 0/2 runs passed" in out
    assert (
        "check must_call:verify_charge: pass rate 0% < 100%; expected verify_charge called; "
        "actual verify_charge never called"
    ) in out
    assert "actual path: lookup_order(order_id=A1234) -> issue_refund(" in out
    assert "Traceback" not in out


def test_plugin_is_inert_without_its_options(tmp_path: Path) -> None:
    (tmp_path / "test_plain.py").write_text(
        "import sys\n"
        f"def test_nothing_heavy_loaded():\n"
        f"    assert {PLUGIN!r} in sys.modules  # loaded by the pytest11 entry point\n"
        "    heavy = [m for m in ('langchain_core', 'langgraph', 'vcr', 'pydantic')\n"
        "             if m in sys.modules and m != 'pydantic']\n"
        "    assert 'agentledger.cases._runner' not in sys.modules\n"
        "    assert 'agentledger.cases._model' not in sys.modules\n"
        "    assert heavy == [], heavy\n"
    )
    result = child_pytest(tmp_path, "test_plain.py", "-p", "no:langsmith_plugin")
    assert result.returncode == 0, result.stdout + result.stderr
    helped = child_pytest(tmp_path, "--help")
    assert "--agentledger-cases" in helped.stdout and "--agentledger-agent" in helped.stdout
