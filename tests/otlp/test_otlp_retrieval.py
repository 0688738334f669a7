"""Retriever and embeddings spans (OpenInference ``RETRIEVER`` / ``EMBEDDING``, GenAI
``retrieval`` / ``embeddings`` operations) become ``retrieval`` and ``llm_start``/``llm_end``
(``api: embeddings``) events with their causes, against a real ``agentledger serve``.

Docs: ``docs/pages/opentelemetry.md`` sections "Mapping" and "Causes".
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from _servers import ServerProcess

pytestmark = pytest.mark.server

QUESTION = "How long do refunds take?"


def _provider(service: str) -> tuple[TracerProvider, InMemorySpanExporter]:
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    return provider, memory


def _send(server: ServerProcess, memory: InMemorySpanExporter) -> None:
    exporter = OTLPSpanExporter(
        endpoint=f"{server.url}/v1/traces",
        headers={"Authorization": f"Bearer {server.api_key}"},
    )
    exporter.export(memory.get_finished_spans())


def _events(server: ServerProcess, agent: str) -> dict[str, list[dict[str, Any]]]:
    response = httpx.get(
        f"{server.url}/v1/events",
        params={"agent": agent, "limit": 1000},
        headers={"Authorization": f"Bearer {server.api_key}"},
    )
    response.raise_for_status()
    out: dict[str, list[dict[str, Any]]] = {}
    for event in reversed(response.json()):
        out.setdefault(event["event"], []).append(event)
    return out


def _why(server: ServerProcess, event_id: str) -> list[str]:
    response = httpx.get(
        f"{server.url}/v1/events/{event_id}/why",
        headers={"Authorization": f"Bearer {server.api_key}"},
    )
    response.raise_for_status()
    return [e["event_id"] for e in response.json()["chain"]]


def _causes(event: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["event_id"], c["kind"]) for c in event.get("caused_by") or []]


def test_openinference_rag_chain(store_server: ServerProcess) -> None:
    agent = f"oi-rag-{uuid.uuid4().hex[:6]}"
    provider, memory = _provider(agent)
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("rag", attributes={"openinference.span.kind": "CHAIN"}):
        with (
            tracer.start_as_current_span(
                "retrieve",
                attributes={
                    "openinference.span.kind": "RETRIEVER",
                    "input.value": QUESTION,
                    "retrieval.documents.0.document.id": "kb-31",
                    "retrieval.documents.0.document.content": "Refunds take 5 days.",
                    "retrieval.documents.0.document.score": 0.91,
                    "retrieval.documents.1.document.id": "kb-12",
                    "retrieval.documents.1.document.content": "Card refunds take longer.",
                    "retrieval.documents.1.document.score": 0.55,
                },
            ),
            tracer.start_as_current_span(
                "embed",
                attributes={
                    "openinference.span.kind": "EMBEDDING",
                    "embedding.model_name": "text-embedding-3-small",
                    "embedding.embeddings.0.embedding.text": QUESTION,
                    "llm.token_count.prompt": 7,
                },
            ),
        ):
            pass
        with tracer.start_as_current_span(
            "llm",
            attributes={
                "openinference.span.kind": "LLM",
                "llm.model_name": "gpt-test",
                "llm.input_messages.0.message.role": "user",
                "llm.input_messages.0.message.content": QUESTION,
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.content": "About 5 days.",
                "llm.token_count.prompt": 60,
                "llm.token_count.completion": 4,
            },
        ):
            pass
    provider.shutdown()
    _send(store_server, memory)

    kinds = _events(store_server, agent)
    (user,) = kinds["user_message"]
    (found,) = kinds["retrieval"]
    embed_start, call = kinds["llm_start"]
    embed_end, out = kinds["llm_end"]
    (answer,) = kinds["assistant_response"]
    (step,) = kinds["step_start"]
    assert found["data"]["query"] == QUESTION
    assert [d["id"] for d in found["data"]["documents"]] == ["kb-31", "kb-12"]
    assert found["data"]["documents"][0]["score"] == 0.91
    assert found["data"]["documents"][0]["content"] == "Refunds take 5 days."
    assert _causes(found) == [(user["event_id"], "read")]
    assert found["scope_id"] == step["event_id"]
    # the embeddings call: inside the retriever (its scope), reading the user's message
    assert embed_start["data"]["api"] == "embeddings"
    assert embed_start["data"]["model"] == "text-embedding-3-small"
    assert embed_start["scope_id"] == found["event_id"]
    assert _causes(embed_start) == [(user["event_id"], "read")]
    assert embed_end["parent_id"] == embed_start["event_id"]
    assert embed_end["data"]["token_usage"]["input_tokens"] == 7
    # the model call read the user's message and the documents
    assert _causes(call) == [(user["event_id"], "read"), (found["event_id"], "read")]
    assert call["parent_id"] == found["event_id"]
    assert "tool_result_ids" not in call["data"]
    assert answer["parent_id"] == out["event_id"]
    chain = _why(store_server, answer["event_id"])
    assert found["event_id"] in chain and user["event_id"] in chain


def test_genai_retrieval_asked_for_by_a_model_call(store_server: ServerProcess) -> None:
    agent = f"genai-rag-{uuid.uuid4().hex[:6]}"
    provider, memory = _provider("genai-rag")
    tracer = provider.get_tracer("test")
    user = {"role": "user", "parts": [{"type": "text", "content": QUESTION}]}

    def chat(output: str, **extra: Any) -> Any:
        return tracer.start_as_current_span(
            "chat gpt-test",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-test",
                "gen_ai.usage.input_tokens": 30,
                "gen_ai.usage.output_tokens": 5,
                "gen_ai.input.messages": json.dumps([user]),
                "gen_ai.output.messages": json.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": output}]}]
                ),
                **extra,
            },
        )

    with tracer.start_as_current_span(
        f"invoke_agent {agent}",
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent},
    ):
        with chat("Let me look that up."):
            pass
        with (
            tracer.start_as_current_span(
                "retrieval",
                attributes={
                    "gen_ai.operation.name": "retrieval",
                    "gen_ai.retrieval.query.text": "refund duration",
                    "gen_ai.retrieval.documents": json.dumps(
                        [{"id": "kb-31", "score": 0.9}, {"id": "kb-12", "score": 0.4}]
                    ),
                },
            ),
            tracer.start_as_current_span(
                "embeddings text-embedding-3-small",
                attributes={
                    "gen_ai.operation.name": "embeddings",
                    "gen_ai.request.model": "text-embedding-3-small",
                    "gen_ai.usage.input_tokens": 3,
                },
            ),
        ):
            pass
        with chat("About 5 days."):
            pass
    provider.shutdown()
    _send(store_server, memory)

    kinds = _events(store_server, agent)
    first_call, embed_start, second_call = kinds["llm_start"]
    first_out, embed_end, second_out = kinds["llm_end"]
    (found,) = kinds["retrieval"]
    (answer,) = kinds["assistant_response"]
    assert found["data"]["query"] == "refund duration"
    assert found["data"]["documents"] == [
        {"id": "kb-31", "score": 0.9},
        {"id": "kb-12", "score": 0.4},
    ]
    # asked for by the model output before it
    assert _causes(found) == [(first_out["event_id"], "requested")]
    assert embed_start["data"]["api"] == "embeddings"
    assert embed_end["data"]["token_usage"]["input_tokens"] == 3
    assert embed_end["data"]["token_usage"]["model"] == "text-embedding-3-small"
    # the next model call read the documents
    assert _causes(second_call) == [(found["event_id"], "read")]
    assert answer["parent_id"] == second_out["event_id"]
    chain = _why(store_server, answer["event_id"])
    assert found["event_id"] in chain and first_call["event_id"] in chain
