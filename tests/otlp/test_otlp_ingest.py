"""OTLP/HTTP trace ingest against a real ``agentledger serve`` (SQLite and PostgreSQL).

The stock OpenTelemetry exporter sends GenAI-convention spans of an agent run; the session
they become must have the causal shape user message -> model call -> tool call -> tool result
-> model call -> answer, whatever order and batches the spans arrive in.
README section: "OpenTelemetry".
"""

from __future__ import annotations

import gzip
import json
import uuid
from typing import Any

import httpx
import pytest
from _otel_spans import QUESTION, json_export, recorded_run
from google.rpc import status_pb2
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.trace.export import SpanExportResult

from _servers import ServerProcess

pytestmark = pytest.mark.server

PROTOBUF = {"Content-Type": "application/x-protobuf"}


def _exporter(server: ServerProcess, key: str | None = None) -> OTLPSpanExporter:
    return OTLPSpanExporter(
        endpoint=f"{server.url}/v1/traces",
        headers={"Authorization": f"Bearer {key or server.api_key}"},
    )


def _auth(server: ServerProcess) -> dict[str, str]:
    return {"Authorization": f"Bearer {server.api_key}"}


def _session(
    server: ServerProcess, session: str, agent: str = "support-bot"
) -> list[dict[str, Any]]:
    response = httpx.get(
        f"{server.url}/v1/events",
        params={"agent": agent, "session_id": session, "limit": 1000},
        headers=_auth(server),
    )
    response.raise_for_status()
    return list(reversed(response.json()))


def _by_type(events: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        out.setdefault(event["event"], []).append(event)
    return out


def _assert_causal_shape(server: ServerProcess, session: str) -> None:
    events = _session(server, session)
    kinds = _by_type(events)
    assert sorted(kinds) == sorted(
        [
            "step_start",
            "step_end",
            "user_message",
            "llm_start",
            "llm_end",
            "tool_call",
            "tool_result",
            "assistant_response",
        ]
    ), kinds.keys()
    (user,) = kinds["user_message"]
    first_call, second_call = kinds["llm_start"]
    first_out, second_out = kinds["llm_end"]
    (call,) = kinds["tool_call"]
    (result,) = kinds["tool_result"]
    (answer,) = kinds["assistant_response"]
    (step,) = kinds["step_start"]
    assert user["data"]["text"] == QUESTION
    assert first_call["parent_id"] == user["event_id"]
    assert first_out["parent_id"] == first_call["event_id"]
    assert call["parent_id"] == first_out["event_id"]
    assert call["data"] == {
        "tool": "lookup_order",
        "args": {"order": 42},
        "call_id": "call_lookup_1",
    }
    assert result["parent_id"] == call["event_id"]
    assert result["data"]["result"] == "2 charges of $10"
    assert second_call["parent_id"] == result["event_id"]
    assert second_out["parent_id"] == second_call["event_id"]
    assert answer["parent_id"] == second_out["event_id"]
    assert answer["data"]["text"] == "Yes: order 42 was charged twice."
    # the agent span is the scope of what ran inside it, never a cause
    for event in (user, first_call, call, second_call, answer):
        assert event["scope_id"] == step["event_id"]
    # models and tokens
    assert first_call["data"]["model"] == "gpt-test"
    assert first_call["data"]["system_prompt"] == "You are a support agent."
    usage = first_out["data"]["token_usage"]
    assert usage["input_tokens"] == 120 and usage["output_tokens"] == 12
    assert usage["cache_read_tokens"] == 100 and usage["cache_write_tokens"] is None
    assert first_out["data"]["response_model"] == "gpt-test-0001"
    assert first_out["data"]["finish_reason"] == "tool_call"
    assert second_out["data"]["token_usage"]["input_tokens"] == 150
    # unknown attributes are kept, user id mapped
    assert step["metadata"]["otel"]["attributes"]["app.tenant"] == "acme"
    assert step["metadata"]["user_id"] == "dana"
    # why(answer) over the HTTP API reaches the tool result and the user's message
    why = httpx.get(f"{server.url}/v1/events/{answer['event_id']}/why", headers=_auth(server))
    why.raise_for_status()
    chain = [e["event_id"] for e in why.json()["chain"]]
    assert result["event_id"] in chain and user["event_id"] in chain
    assert step["event_id"] not in chain
    verify = httpx.get(
        f"{server.url}/v1/events/chain", params={"agent": "support-bot"}, headers=_auth(server)
    )
    verify.raise_for_status()
    assert verify.json()["problems"] == [], verify.json()


def test_stock_exporter_protobuf_gives_the_causal_shape(store_server: ServerProcess) -> None:
    session = f"otel-{uuid.uuid4().hex[:8]}"
    spans = recorded_run(session)
    assert _exporter(store_server).export(spans) == SpanExportResult.SUCCESS
    _assert_causal_shape(store_server, session)


def test_otlp_json_gzip_gives_the_causal_shape(store_server: ServerProcess) -> None:
    session = f"otel-{uuid.uuid4().hex[:8]}"
    body = gzip.compress(json_export(recorded_run(session)))
    response = httpx.post(
        f"{store_server.url}/v1/traces",
        content=body,
        headers={
            **_auth(store_server),
            "Content-Type": "application/json",
            "Content-Encoding": "gzip",
        },
    )
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    assert response.json() == {}
    _assert_causal_shape(store_server, session)


def test_sent_twice_stores_nothing_twice(store_server: ServerProcess) -> None:
    session = f"otel-{uuid.uuid4().hex[:8]}"
    spans = recorded_run(session)
    exporter = _exporter(store_server)
    assert exporter.export(spans) == SpanExportResult.SUCCESS
    first = _session(store_server, session)
    assert exporter.export(spans) == SpanExportResult.SUCCESS
    again = json_export(spans)
    httpx.post(
        f"{store_server.url}/v1/traces",
        content=again,
        headers={**_auth(store_server), "Content-Type": "application/json"},
    ).raise_for_status()
    assert [e["event_id"] for e in _session(store_server, session)] == [
        e["event_id"] for e in first
    ]
    assert len(first) == 10


def test_child_first_batches_link_up(store_server: ServerProcess) -> None:
    session = f"otel-{uuid.uuid4().hex[:8]}"
    spans = recorded_run(session)
    by_name = {s.name: s for s in spans if not s.name.startswith("chat")}
    chats = [s for s in spans if s.name.startswith("chat")]
    exporter = _exporter(store_server)
    # the tool span alone, then the second model call, then the first, then the agent span
    for batch in ([by_name["execute_tool lookup_order"]], [chats[1]], [chats[0]]):
        assert exporter.export(batch) == SpanExportResult.SUCCESS
        assert _session(store_server, session) == []  # waiting for the trace's root
    assert exporter.export([by_name["invoke_agent support-bot"]]) == SpanExportResult.SUCCESS
    _assert_causal_shape(store_server, session)


def _post(server: ServerProcess, body: bytes, **headers: str) -> httpx.Response:
    return httpx.post(f"{server.url}/v1/traces", content=body, headers={**_auth(server), **headers})


def test_bad_exports_get_the_otlp_answers(store_server: ServerProcess) -> None:
    malformed = _post(store_server, b"\xff\xff\xff not protobuf", **PROTOBUF)
    assert malformed.status_code == 400
    status = status_pb2.Status()
    status.ParseFromString(malformed.content)
    assert "protobuf" in status.message
    bad_json = _post(store_server, b"{not json", **{"Content-Type": "application/json"})
    assert bad_json.status_code == 400 and "JSON" in bad_json.json()["message"]
    wrong_type = _post(store_server, b"x", **{"Content-Type": "text/plain"})
    assert wrong_type.status_code == 415
    bomb = gzip.compress(b"\x00" * (17 * 1024 * 1024))
    oversized = _post(store_server, bomb, **PROTOBUF, **{"Content-Encoding": "gzip"})
    assert oversized.status_code == 413
    too_big = _post(store_server, b"\x00" * (16 * 1024 * 1024 + 1), **PROTOBUF)
    assert too_big.status_code == 413


def test_spans_with_missing_ids_are_rejected_by_partial_success(
    store_server: ServerProcess,
) -> None:
    session = f"otel-{uuid.uuid4().hex[:8]}"
    export = json.loads(json_export(recorded_run(session)))
    spans = export["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans[0]["spanId"] = ""
    spans[1]["traceId"] = "00000000000000000000000000000000"
    response = _post(
        store_server, json.dumps(export).encode(), **{"Content-Type": "application/json"}
    )
    assert response.status_code == 200
    partial = response.json()["partialSuccess"]
    assert int(partial["rejectedSpans"]) == 2
    assert "spanId" in partial["errorMessage"] and "traceId" in partial["errorMessage"]
    # protobuf answers in protobuf
    ok = _post(store_server, b"", **PROTOBUF)
    assert ok.status_code == 200
    answer = ExportTraceServiceResponse()
    answer.ParseFromString(ok.content)
    assert answer.partial_success.rejected_spans == 0


def test_a_read_only_key_is_refused(store_server: ServerProcess) -> None:
    created = httpx.post(
        f"{store_server.url}/v1/keys",
        json={"name": f"otel-ro-{uuid.uuid4().hex[:6]}", "scope": "read_only"},
        headers=_auth(store_server),
    )
    created.raise_for_status()
    response = httpx.post(
        f"{store_server.url}/v1/traces",
        content=b"",
        headers={"Authorization": f"Bearer {created.json()['key']}", **PROTOBUF},
    )
    assert response.status_code == 403
