"""Hand-built GenAI-convention spans of one agent run, made with the real OpenTelemetry SDK.

``agent_run(tracer)`` records invoke_agent > chat (asks for a tool) > execute_tool > chat
(answers), with content capture on (``gen_ai.input.messages`` / ``gen_ai.output.messages``).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Tracer

__all__ = ["QUESTION", "agent_run", "json_export", "recorded_run"]

QUESTION = "Was order 42 charged twice?"
CALL_ID = "call_lookup_1"


def _messages(*messages: dict[str, Any]) -> str:
    return json.dumps(list(messages))


def agent_run(tracer: Tracer, session: str) -> None:
    """One agent run as GenAI semantic-convention spans (1.37 content attributes)."""
    user = {"role": "user", "parts": [{"type": "text", "content": QUESTION}]}
    ask = {
        "role": "assistant",
        "parts": [
            {"type": "tool_call", "id": CALL_ID, "name": "lookup_order", "arguments": {"order": 42}}
        ],
        "finish_reason": "tool_call",
    }
    reply = {
        "role": "tool",
        "parts": [{"type": "tool_call_response", "id": CALL_ID, "response": "2 charges of $10"}],
    }
    answer = {
        "role": "assistant",
        "parts": [{"type": "text", "content": "Yes: order 42 was charged twice."}],
        "finish_reason": "stop",
    }
    with tracer.start_as_current_span(
        "invoke_agent support-bot",
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "support-bot",
            "gen_ai.conversation.id": session,
            "user.id": "dana",
            "app.tenant": "acme",
        },
    ):
        with tracer.start_as_current_span(
            "chat gpt-test",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-test",
                "gen_ai.response.model": "gpt-test-0001",
                "gen_ai.response.finish_reasons": ["tool_call"],
                "gen_ai.usage.input_tokens": 120,
                "gen_ai.usage.output_tokens": 12,
                "gen_ai.usage.cache_read.input_tokens": 100,
                "gen_ai.system_instructions": json.dumps(
                    [{"type": "text", "content": "You are a support agent."}]
                ),
                "gen_ai.input.messages": _messages(user),
                "gen_ai.output.messages": _messages(ask),
            },
        ):
            pass
        with tracer.start_as_current_span(
            "execute_tool lookup_order",
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "lookup_order",
                "gen_ai.tool.call.id": CALL_ID,
                "gen_ai.tool.call.arguments": json.dumps({"order": 42}),
                "gen_ai.tool.call.result": "2 charges of $10",
            },
        ):
            pass
        with tracer.start_as_current_span(
            "chat gpt-test",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-test",
                "gen_ai.response.model": "gpt-test-0001",
                "gen_ai.usage.input_tokens": 150,
                "gen_ai.usage.output_tokens": 9,
                "gen_ai.input.messages": _messages(user, ask, reply),
                "gen_ai.output.messages": _messages(answer),
            },
        ):
            pass


def recorded_run(session: str) -> list[ReadableSpan]:
    """The spans of :func:`agent_run`, finished, in the order the SDK ended them."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "otel-test"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    agent_run(provider.get_tracer("test"), session)
    provider.shutdown()
    return list(memory.get_finished_spans())


def json_export(spans: Sequence[ReadableSpan]) -> bytes:
    """The OTLP JSON encoding of ``spans`` (hex ids, lowerCamelCase), as a collector sends."""
    raw = json_format.MessageToDict(encode_spans(spans))
    for resource in raw["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return json.dumps(raw).encode()
