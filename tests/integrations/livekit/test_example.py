"""Smoke-run ``examples/livekit_voice_agent.py`` against the real test server, as users would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.livekit

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "livekit_voice_agent.py"


def test_voice_agent_example_prints_the_session_tree(
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
    lines = done.stdout.splitlines()
    assert lines[0].startswith("session ") and lines[0].endswith(": 22 events"), lines[0]
    assert "session_start  scripted-voice-model" in lines
    assert "  user_message  'Hi, a table for four on Friday evening?'" in lines
    # Parallel tools under the model output that asked for them; the reply under the
    # request they caused; the next user message under the reply it answers.
    assert "        tool_call  opening_hours {}" in lines
    assert '          tool_result  opening_hours "17:00-23:00"' in lines
    assert any(
        line.startswith("                assistant_response  'Friday at 8 pm") for line in lines
    )
    assert "                  user_message  'Yes please, 8 pm, name is Ana.'" in lines
    assert "tools called: ['book_table', 'check_availability', 'opening_hours']" in lines
