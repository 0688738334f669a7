"""The built-in candidate replays a session recorded over the OpenAI Responses API over the
Responses API: docs/pages/regression-cases.md "5. Gate a prompt or model change" (the
built-in candidate). A real local model server and a real ``agentledger serve``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentledger.cases import export_cases
from agentledger.client import Ledger

from . import model_server, replay_agent
from .conftest import cli

pytestmark = pytest.mark.langchain

TOOL_SCHEMAS = [
    {
        "type": "function",
        "name": name,
        "description": f"{name} of an order",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"],
        },
    }
    for name in ("lookup_order", "verify_charge")
]


def _production_session(ledger: Ledger, base_url: str) -> None:
    """A production agent written against the Responses API: it answers the model's
    function calls and calls again until the model answers."""
    from openai import OpenAI

    from agentledger.integrations.openai import instrument_openai

    client = instrument_openai(
        OpenAI(base_url=base_url, api_key="k", max_retries=0), ledger, session_id="resp-1"
    )
    items: list[Any] = [
        {"role": "system", "content": replay_agent.PRODUCTION_PROMPT},
        {"role": "user", "content": "I was charged twice for order A1234"},
    ]
    for _ in range(5):
        reply = client.responses.create(
            model="gpt-test", input=items, tools=TOOL_SCHEMAS, max_output_tokens=300
        )
        calls = [item for item in reply.output if item.type == "function_call"]
        items += [item.model_dump(exclude_none=True) for item in reply.output]
        if not calls:
            return
        for call in calls:
            result = {"order_id": "A1234", "tool": call.name, "ok": True}
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": call.call_id,
                    "output": json.dumps(result),
                }
            )


def test_a_responses_session_is_replayed_over_the_responses_api(
    ledger_server: Any,
    model: model_server.ModelServer,
    agent_name: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ledger = Ledger(
        url=ledger_server.url, api_key=ledger_server.api_key, agent=agent_name, spill_dir=None
    )
    out = tmp_path / "cases"
    try:
        _production_session(ledger, model.base_url)
        assert ledger.flush(timeout_s=10).complete
        result = export_cases(ledger, agent=agent_name, sessions=["resp-1"], out=out)
    finally:
        ledger.close(timeout_s=5)
    assert len(result.files) == 1, result.skipped
    case = json.loads(result.files[0].read_text())
    recorded = case["captured_with"]
    assert recorded["api"] == "responses"
    assert recorded["parameters"] == {"max_output_tokens": 300}
    assert case["source_answer"] == model_server.ANSWER
    assert model.paths == ["/v1/responses"] * 3

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    candidate = ["--factory", "agentledger.cases:openai_candidate", "--base-url", model.base_url]
    tools = ["--tools", "cases.replay_agent:TOOLS"]
    report = tmp_path / "report.json"
    ok = cli("cases", "run", out, *candidate, *tools, "--report", report)
    assert ok.exit_code == 0, ok.output
    assert model.paths[3:] == ["/v1/responses"] * 3  # not a chat completion anywhere
    sent = model.calls[-1]
    assert sent["model"] == "gpt-test" and sent["max_output_tokens"] == 300
    assert sent["input"][0] == {"role": "system", "content": replay_agent.PRODUCTION_PROMPT}
    outputs = [item for item in sent["input"] if item.get("type") == "function_call_output"]
    assert len(outputs) == 2  # both calls answered by the case's stubs
    assert {tool["name"] for tool in sent["tools"]} == {"lookup_order", "verify_charge"}
    run = json.loads(report.read_text())["cases"][0]["run_details"][0]
    assert run["path"][:2] == ["lookup_order(order_id=A1234)", "verify_charge(order_id=A1234)"]
    assert run["answer"] == model_server.ANSWER and run["finish_reason"] == "stop"

    # a prompt that cuts the answer at the token limit: incomplete at max_output_tokens
    terse = tmp_path / "terse.txt"
    terse.write_text("You are a refund agent. Verify the charge. Be terse.", encoding="utf-8")
    bad = cli("cases", "run", out, *candidate, *tools, "--system-prompt", terse)
    assert bad.exit_code == 1 and "answer:not_truncated" in bad.output
    assert model.calls[-1]["input"][0]["content"].endswith("Be terse.")

    # without --tools: the definitions the production call was offered are offered again
    assert recorded["tool_schemas"] == TOOL_SCHEMAS
    bare = cli("cases", "run", out, *candidate, "--report", report)
    assert bare.exit_code == 0, bare.output
    offered = model.calls[-1]["tools"]
    assert [(t["name"], t["description"], t["parameters"]) for t in offered] == [
        (t["name"], t["description"], t["parameters"]) for t in TOOL_SCHEMAS
    ]
    run = json.loads(report.read_text())["cases"][0]["run_details"][0]
    assert run["path"][:2] == ["lookup_order(order_id=A1234)", "verify_charge(order_id=A1234)"]
