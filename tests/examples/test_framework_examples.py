"""Smoke-run the Pydantic AI example against the real test server, as users would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "pydantic_ai", reason="the example needs pip install 'agentledger[pydantic-ai]'"
)

pytestmark = pytest.mark.pydantic_ai

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_pydantic_ai_example_runs(ledger_server: Any, agent_name: str, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "AGENTLEDGER_URL": ledger_server.url,
        "AGENTLEDGER_API_KEY": ledger_server.api_key,
        "AGENTLEDGER_AGENT": agent_name,
        "AGENTLEDGER_SPILL_DIR": "off",
    }
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "pydantic_ai_agent.py")],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "answer: Take the 08:12 train to Lyon." in done.stdout
    assert (
        "why: assistant_response <- llm_end <- llm_start <- tool_result <- tool_call <- llm_end"
        " <- llm_start <- user_message" in done.stdout
    ), done.stdout
