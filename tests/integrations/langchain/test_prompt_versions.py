"""Prompt versions recorded by the LangChain handler, read back where they are used: the
drift report names a system prompt or model the recent sessions used and the baseline did
not, and ``at()`` says which prompt and model were in effect at a time."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from langchain_core.messages import HumanMessage, SystemMessage

from agentledger.client import Ledger
from agentledger.integrations.langchain import LedgerCallbackHandler
from agentledger.testing import ScriptedChatModel

PROMPT_A = "You are the refund assistant. Always verify the charge before refunding."
PROMPT_B = "You are the refund assistant. Refund at once."


def _hash(ledger_server: Any, agent: str, session: str) -> str:
    response = httpx.get(
        f"{ledger_server.url}/v1/events",
        params={"agent": agent, "session_id": session, "event_type": "llm_start"},
        headers=ledger_server.headers(),
    )
    assert response.status_code == 200, response.text
    (event,) = response.json()
    value: str = event["data"]["prompt_hash"]
    return value


def _sessions(ledger: Ledger, prefix: str, prompt: str, model: str, count: int) -> None:
    chat = ScriptedChatModel(replies=["Done."] * count, model_name=model)
    for index in range(count):
        handler = LedgerCallbackHandler(ledger, session_id=f"{prefix}-{index}")
        chat.invoke(
            [SystemMessage(prompt), HumanMessage("Refund order 7, please.")],
            config={"callbacks": [handler]},
        )


def test_drift_and_at_tell_prompt_versions_apart(
    ledger: Ledger, ledger_server: Any, agent_name: str
) -> None:
    _sessions(ledger, "old", PROMPT_A, "model-a", 12)
    assert ledger.flush(timeout_s=20.0)
    time.sleep(0.02)
    between = datetime.now(UTC)
    time.sleep(0.02)
    _sessions(ledger, "new", PROMPT_B, "model-b", 12)
    assert ledger.flush(timeout_s=20.0)
    old_hash = _hash(ledger_server, agent_name, "old-0")
    new_hash = _hash(ledger_server, agent_name, "new-0")
    assert old_hash != new_hash and old_hash.startswith("sha256:")

    response = httpx.get(
        f"{ledger_server.url}/v1/agents/{agent_name}/baseline",
        params={"recent_window": 12},
        headers=ledger_server.headers(),
    )
    assert response.status_code == 200, response.text
    report = response.json()
    assert report["baseline"]["prompts"] == {old_hash: 1.0}
    assert report["recent"]["prompts"] == {new_hash: 1.0}
    assert report["recent"]["models"] == {"model-b": 1.0}
    changes = {(c["kind"], c["key"]): c for c in report["drift"]["configuration_changes"]}
    assert set(changes) == {
        ("new_prompt", new_hash),
        ("gone_prompt", old_hash),
        ("new_model", "model-b"),
        ("gone_model", "model-a"),
    }
    assert changes[("new_prompt", new_hash)]["recent"] == 1.0
    assert any(new_hash in reason for reason in report["drift"]["reasons"])
    # the sessions did the same thing under the new prompt: not a behaviour change
    assert report["verdict"] == "stable", report["drift"]

    then = ledger.at(between)
    assert then.model_call is not None
    assert then.model_call["prompt_hash"] == old_hash
    assert then.model_call["model"] == "model-a"
    assert then.model_call["session_id"] == "old-11"
    now = ledger.at(datetime.now(UTC))
    assert now.model_call is not None
    assert (now.model_call["prompt_hash"], now.model_call["model"]) == (new_hash, "model-b")

    printed = subprocess.run(
        [
            str(Path(sys.executable).parent / "agentledger"),
            "at",
            "--agent",
            agent_name,
            "--time",
            between.isoformat(),
            "--url",
            ledger_server.url,
            "--api-key",
            ledger_server.api_key,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "200", "NO_COLOR": "1"},
    )
    assert printed.returncode == 0, printed.stderr
    assert f"model model-a, prompt {old_hash}" in printed.stdout


def test_one_prompt_on_both_sides_is_no_configuration_change(
    ledger: Ledger, ledger_server: Any, agent_name: str
) -> None:
    _sessions(ledger, "a", PROMPT_A, "model-a", 12)
    _sessions(ledger, "b", PROMPT_A, "model-a", 12)
    assert ledger.flush(timeout_s=20.0)
    response = httpx.get(
        f"{ledger_server.url}/v1/agents/{agent_name}/baseline",
        params={"recent_window": 12},
        headers=ledger_server.headers(),
    )
    assert response.status_code == 200, response.text
    assert response.json()["drift"]["configuration_changes"] == []


def test_at_before_any_model_call_has_none(ledger: Ledger, agent_name: str) -> None:
    ledger.log("state_set", {"key": "plan", "value": "basic"})
    assert ledger.flush(timeout_s=20.0)
    assert ledger.at(datetime.now(UTC)).model_call is None
