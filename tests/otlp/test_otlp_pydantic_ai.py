"""A Pydantic AI agent (``TestModel``, one tool, offline), instrumented with an OpenTelemetry
tracer provider whose stock OTLP/HTTP exporter sends to a real ``agentledger serve``, gives
the same causal shape as the hand-built spans. README section: "OpenTelemetry"."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from pydantic_ai import Agent
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.models.test import TestModel

from _servers import ServerProcess

pytestmark = pytest.mark.server


def _events(server: ServerProcess, agent: str) -> list[dict[str, Any]]:
    response = httpx.get(
        f"{server.url}/v1/events",
        params={"agent": agent, "limit": 1000},
        headers={"Authorization": f"Bearer {server.api_key}"},
    )
    response.raise_for_status()
    return list(reversed(response.json()))


def test_pydantic_ai_agent_run_becomes_a_causal_session(store_server: ServerProcess) -> None:
    name = f"refund-bot-{uuid.uuid4().hex[:6]}"
    provider = TracerProvider(resource=Resource.create({"service.name": "pydantic-ai-test"}))
    provider.add_span_processor(
        BatchSpanProcessor(
            OTLPSpanExporter(
                endpoint=f"{store_server.url}/v1/traces",
                headers={"Authorization": f"Bearer {store_server.api_key}"},
            )
        )
    )
    agent = Agent(TestModel(), name=name)
    # pydantic-ai-slim 2.x takes the settings as the agent's ``instrument`` attribute
    agent.instrument = InstrumentationSettings(tracer_provider=provider)

    @agent.tool_plain
    def lookup_order(order: int) -> str:
        return f"order {order}: 2 charges"

    result = agent.run_sync("Was order 42 charged twice?")
    assert provider.force_flush(10_000)
    provider.shutdown()

    events = _events(store_server, name)
    kinds = [e["event"] for e in events]
    for kind in (
        "user_message",
        "llm_start",
        "llm_end",
        "tool_call",
        "tool_result",
        "assistant_response",
    ):
        assert kind in kinds, kinds
    by_id = {e["event_id"]: e for e in events}
    (user,) = [e for e in events if e["event"] == "user_message"]
    first_call, second_call = [e for e in events if e["event"] == "llm_start"]
    (call,) = [e for e in events if e["event"] == "tool_call"]
    (tool_result,) = [e for e in events if e["event"] == "tool_result"]
    (answer,) = [e for e in events if e["event"] == "assistant_response"]
    assert user["data"]["text"] == "Was order 42 charged twice?"
    assert first_call["parent_id"] == user["event_id"]
    assert by_id[call["parent_id"]]["event"] == "llm_end"
    assert by_id[call["parent_id"]]["parent_id"] == first_call["event_id"]
    assert call["data"]["tool"] == "lookup_order"
    assert tool_result["parent_id"] == call["event_id"]
    assert second_call["parent_id"] == tool_result["event_id"]
    assert by_id[answer["parent_id"]]["parent_id"] == second_call["event_id"]
    assert answer["data"]["text"] == result.output
    assert first_call["data"]["model"] == "test"
    assert by_id[call["parent_id"]]["data"]["token_usage"]["input_tokens"] > 0
    why = httpx.get(
        f"{store_server.url}/v1/events/{answer['event_id']}/why",
        headers={"Authorization": f"Bearer {store_server.api_key}"},
    )
    assert tool_result["event_id"] in [e["event_id"] for e in why.json()["chain"]]
