"""Smoke-run ``examples/crewai_crew.py`` against the real test server, as a user would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .conftest import read_events

pytestmark = pytest.mark.crewai

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "crewai_crew.py"


def test_example_runs_offline_and_prints_the_tree(
    ledger_server: Any, agent_name: str, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "AGENTLEDGER_URL": ledger_server.url,
        "AGENTLEDGER_API_KEY": ledger_server.api_key,
        "AGENTLEDGER_AGENT": agent_name,
        "AGENTLEDGER_SPILL_DIR": "off",
    }
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "answer: Light layers, sunglasses, sunscreen; no umbrella." in out
    assert "session crewai-example-" in out and ": 22 events" in out
    assert out.splitlines()[2].startswith("step_start  crew")
    assert "      tool_call   get_forecast {'city': 'Lisbon', 'days': 3}" in out
    assert "[rollup: 3 calls" in out
    stored = read_events(ledger_server.url, ledger_server.headers(), agent_name)
    assert len(stored) == 22
