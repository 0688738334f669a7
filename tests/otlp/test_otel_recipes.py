"""The "send OTel from X" recipes of ``docs/pages/opentelemetry.md`` (section "Recipes"): each
``examples/otel_*.py`` runs, offline, against a real ``agentledger serve``, and the session
its spans become has the causal shape user message -> model call -> tool call -> tool result
-> model call -> answer, with ``why(answer)`` over HTTP reaching the tool result, and the
models and token counts the run reported. The code the docs show is checked to be the code
the examples run. README section: "OpenTelemetry".
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from _servers import ServerProcess

pytestmark = pytest.mark.server

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "pages" / "opentelemetry.md"

#: recipe -> (model, input tokens of the first and second model call)
RECIPES = {
    "otel_pydantic_ai.py": ("scripted-model", None),
    "otel_openai_agents.py": ("scripted-model", (50, 60)),
    "otel_langchain.py": ("scripted-chat-model", (40, 80)),
}


def _recipe(path: Path) -> str:
    found = re.search(r"^# \[recipe\]\n(.*?)^# \[/recipe\]\n", path.read_text(), re.S | re.M)
    assert found, f"{path.name} has no recipe markers"
    return found.group(1)


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_the_docs_show_the_code_the_example_runs(name: str) -> None:
    docs = DOCS.read_text()
    assert f"examples/{name}" in docs
    assert _recipe(ROOT / "examples" / name) in docs, f"the docs' {name} recipe is out of date"


def _events(server: ServerProcess, agent: str) -> list[dict[str, Any]]:
    response = httpx.get(
        f"{server.url}/v1/events",
        params={"agent": agent, "limit": 1000},
        headers={"Authorization": f"Bearer {server.api_key}"},
    )
    response.raise_for_status()
    return list(reversed(response.json()))


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_recipe_gives_the_causal_session(
    name: str, store_server: ServerProcess, tmp_path: Path
) -> None:
    agent = f"recipe-{uuid.uuid4().hex[:8]}"
    env = {
        **os.environ,
        "AGENTLEDGER_URL": store_server.url,
        "AGENTLEDGER_API_KEY": store_server.api_key,
        "AGENTLEDGER_AGENT": agent,
    }
    env.pop("OTEL_SDK_DISABLED", None)  # CI disables the SDK for CrewAI; a user has it on
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "answer: Take the 08:12 train to Lyon." in done.stdout, done.stdout

    events = _events(store_server, agent)
    kinds: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        kinds.setdefault(event["event"], []).append(event)
    by_id = {e["event_id"]: e for e in events}
    (user,) = kinds["user_message"]
    first_call, second_call = kinds["llm_start"]
    first_out, second_out = kinds["llm_end"]
    (call,) = kinds["tool_call"]
    (result,) = kinds["tool_result"]
    (answer,) = kinds["assistant_response"]
    assert user["data"]["text"] == "When is the next train to Lyon?"
    assert first_call["parent_id"] == user["event_id"]
    assert first_out["parent_id"] == first_call["event_id"]
    assert call["parent_id"] == first_out["event_id"]
    assert call["data"]["tool"] == "get_train"
    assert call["data"]["args"] == {"city": "Lyon"}
    assert result["parent_id"] == call["event_id"]
    assert "08:12 to Lyon" in str(result["data"]["result"])
    assert second_call["parent_id"] == result["event_id"]
    assert second_out["parent_id"] == second_call["event_id"]
    assert answer["parent_id"] == second_out["event_id"]
    assert answer["data"]["text"] == "Take the 08:12 train to Lyon."
    assert by_id[answer["parent_id"]]["event"] == "llm_end"
    # the system prompt, models and tokens
    model, tokens = RECIPES[name]
    assert first_call["data"]["model"] == model
    assert first_call["data"]["system_prompt"] == "You plan trips."
    usage = [first_out["data"]["token_usage"], second_out["data"]["token_usage"]]
    if tokens is None:  # Pydantic AI's FunctionModel estimates its own counts
        assert all(u["input_tokens"] > 0 and u["output_tokens"] > 0 for u in usage)
    else:
        assert (usage[0]["input_tokens"], usage[1]["input_tokens"]) == tokens
    # why(answer) over HTTP reaches the tool result and the user's message
    why = httpx.get(
        f"{store_server.url}/v1/events/{answer['event_id']}/why",
        headers={"Authorization": f"Bearer {store_server.api_key}"},
    )
    why.raise_for_status()
    chain = [e["event_id"] for e in why.json()["chain"]]
    assert result["event_id"] in chain and call["event_id"] in chain
    assert user["event_id"] in chain
    verify = httpx.get(
        f"{store_server.url}/v1/events/chain",
        params={"agent": agent},
        headers={"Authorization": f"Bearer {store_server.api_key}"},
    )
    verify.raise_for_status()
    assert verify.json()["problems"] == [], verify.json()
