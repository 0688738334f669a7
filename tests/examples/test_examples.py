"""Smoke-run the LangChain / LangGraph examples against the real test server, as users would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph", reason="the examples need pip install 'agentledger[langchain]'")

pytestmark = pytest.mark.langchain

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

EXPECTED = {
    "langchain_agent.py": [
        "answer: Take the 08:12 train",
        "tools called: ['get_train', 'get_weather']",
    ],
    "langgraph_graph.py": [
        "paused with: Publish this?",
        "verdict: published (approved by Ana)",
        "parallel branches: ['economics', 'history', 'technology']",
        "interrupted at: review - interrupt",
        "step errors: 0",
    ],
    "rag_chain.py": ["query: How long do refunds", "kb-31  score=", "kb-12  score="],
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_runs(name: str, ledger_server: Any, agent_name: str, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "AGENTLEDGER_URL": ledger_server.url,
        "AGENTLEDGER_API_KEY": ledger_server.api_key,
        "AGENTLEDGER_AGENT": agent_name,
        "AGENTLEDGER_SPILL_DIR": "off",
    }
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for expected in EXPECTED[name]:
        assert expected in done.stdout, done.stdout
